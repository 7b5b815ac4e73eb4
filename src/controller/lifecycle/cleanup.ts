// The deletion path, in one place (kube-rs keeps cleanup as one concept too, `finalizer()`): the
// finalizer that lets deletion drive the application down; the route it takes (each node's deletion
// child, to a leaf); the cancellation of the running action (a deletion's, or a change of mind's);
// teardown (a terminating namespace whose sidecar is gone) and abandon (okt.dev/abandon), which
// release the resource without driving it down; and the end of a resource's life: the finalizer
// released, or, a leaf reached through the spec, the resource deleted. The step's part is pure; the
// reconciler's part (at the end) reads the namespace and the metadata.
import type { Graph } from '../../graph/index.ts';
import { LIFECYCLE_FINALIZER, type LifecycleStatus, type OperationStatus } from '../../kube/lifecycle-resource.ts';
import { isNotFound } from '../../kube/transport/errors.ts';
import { NAMESPACES, type KubeObject, type ObjectMeta } from '../../kube/transport/resource.ts';
import type { KubeTransport } from '../../kube/transport/transport.ts';
import { isTerminal } from '../../sidecar-client/index.ts';
import type { Logger } from '../logger.ts';
import { REASONS, STALLED } from './reasons.ts';
import type { ResourceView, SidecarView, StepEffects, StepInput } from './step-types.ts';
import type { StatusDraft } from './status/draft.ts';
import { isChangeOfMind } from './status/operation.ts';

/** The annotation that releases a deleted resource's finalizer without driving its application down. */
export const ABANDON_ANNOTATION = 'okt.dev/abandon';
/** How long after its deletion a resource in a terminating namespace whose sidecar does not answer is released. */
export const DEFAULT_TEARDOWN_GRACE_MS = 60_000;
/** How long an abandoned deletion waits for its stalled event to reach the sink before the finalizer goes anyway. */
export const ABANDON_DELIVERY_WAIT_MS = 60_000;

/** How a person releases a deleted resource that cannot be driven down, after `lead`; nothing when it is not being deleted. */
export function abandonHint(resource: ResourceView, lead: string): string {
  return resource.deleting ? `${lead}annotate ${ABANDON_ANNOTATION}=true to release the resource without driving it down` : '';
}

/**
 * Where deletion drives the application from `from`: each node's deletion child in turn (validation
 * rules out loops), to a leaf, or to the entry node when it declares no onDelete.
 */
export function deletionEnd(graph: Graph, from: string): string {
  let at = from;
  for (let hops = 0; hops <= graph.nodeNames.length; hops++) {
    const next = graph.node(at).deletionChild;
    if (next === undefined) return at;
    at = next;
  }
  return at;
}

/** The event deletion offers at `current`: its deletion child (none at the end of the route). */
export function deletionEvent(graph: Graph, current: string): string | undefined {
  return graph.node(current).deletionChild;
}

/** Why and how a deleted resource's finalizer is released without driving its application down, if it is. */
export function abandonment(input: StepInput): string | undefined {
  const { resource, sidecar, now } = input;
  if (!resource.deleting) return undefined;
  if (resource.abandonRequested) return `the annotation ${ABANDON_ANNOTATION} asked for it`;
  if (!resource.namespaceTerminating || sidecar.kind === 'answered') return undefined;
  const grace = input.teardownGraceMs ?? DEFAULT_TEARDOWN_GRACE_MS;
  const deleted = resource.deletionTimestamp ?? now;
  if (Date.parse(now) - Date.parse(deleted) < grace) return undefined;
  // The grace counts from the deletion: the sidecar may have answered until a moment ago.
  return `its namespace is terminating, its sidecar does not answer (${sidecar.message}) and the teardown grace of ${Math.round(grace / 1000)} s since the deletion at ${deleted} has passed`;
}

/**
 * Why the running operation is to be cancelled now, if it is: the deletion, or a change of mind to a
 * node the resource can reach from here (cancelling for an unreachable one would only stall it), as its
 * node's policy allows. Paused, nothing is cancelled: no move would follow.
 */
export function cancelCause(input: StepInput, desired: string, operation: OperationStatus): 'deletion' | 'desiredChange' | undefined {
  const { graph, planner } = input.model;
  const { resource } = input;
  if (!graph.has(operation.node)) return undefined;
  const policy = graph.node(operation.node).cancellable;
  if (resource.deleting) return policy.onDelete && resource.spec.paused !== true ? 'deletion' : undefined;
  if (!policy.onDesiredChange || resource.spec.paused === true || !graph.has(desired)) return undefined;
  return isChangeOfMind(operation, desired) && planner.distance(operation.node, desired) !== undefined ? 'desiredChange' : undefined;
}

/** Deletion is abandoned: a stalled event says what was left undone, then the finalizer goes once it is delivered (or a while after, when the sink cannot take it either). */
export function abandon(work: StatusDraft, why: string, graceMs: number): StepEffects {
  const current = work.status.state;
  const running = work.status.operation !== undefined && !isTerminal(work.status.operation.phase) ? ` (operation ${work.status.operation.id} may still run)` : '';
  const effects = work.stall(REASONS.deletionAbandoned, `deletion abandoned at ${current}, ${why}: the application was not driven to ${work.desired}${running}`);
  const deadline = Date.parse(work.resource.deletionTimestamp ?? work.now) + graceMs + ABANDON_DELIVERY_WAIT_MS;
  if (Date.parse(work.now) >= deadline && effects.status === undefined) return { finish: 'removeFinalizer', abandoned: true };
  const finishing = finishOnceDelivered(work, effects, 'removeFinalizer');
  return finishing.finish === undefined ? { ...finishing, requeueAfterMs: Math.max(deadline - Date.parse(work.now), 1_000) } : { ...finishing, abandoned: true };
}

/**
 * At a leaf, or at the end of the deletion path: the resource's life ends (OKT's "on End: delete it"),
 * once its last events are out. A deleted resource's finalizer goes; one that reached a leaf through
 * its spec is deleted, unless spec.onLeaf is Keep.
 */
export function endOfLife(work: StatusDraft, effects: StepEffects): StepEffects {
  const { resource } = work;
  if (!leafEndsLife(resource)) return effects;
  return finishOnceDelivered(work, effects, resource.deleting ? 'removeFinalizer' : 'delete');
}

/** Whether reaching a leaf ends the resource's life: it does unless the resource is kept there (spec.onLeaf: Keep) and not being deleted. */
export function leafEndsLife(resource: Pick<ResourceView, 'deleting' | 'spec'>): boolean {
  return resource.deleting || resource.spec.onLeaf !== 'Keep';
}

/** The end of the resource's life once its events are out: at once when they are, promptly after this write when they were. */
function finishOnceDelivered(work: StatusDraft, effects: StepEffects, finish: NonNullable<StepEffects['finish']>): StepEffects {
  if (work.pendingEvents() > 0) return { ...effects, poll: true, awaitingDelivery: true };
  if (effects.status === undefined) return { finish };
  return { ...effects, again: true };
}

// The reconciler's part.

/**
 * The finalizers to set, when okt's is to go on or off (else undefined). It goes on at first sight,
 * before anything runs, so deletion can always drive the application down. A CR the operator does
 * not drive (its spec unreadable, its sidecar refused) gets none while nothing ran or was made for it,
 * and loses one an admission policy put on at its creation (okt manifests --finalizer-policy): its
 * deletion has nothing to drive down, so it never waits.
 */
export function finalizersWanted(metadata: ObjectMeta, driven: boolean, written: ResourceView['status']): string[] | undefined {
  const finalizers = metadata.finalizers ?? [];
  const held = finalizers.includes(LIFECYCLE_FINALIZER);
  if (driven) return held || metadata.deletionTimestamp !== undefined ? undefined : [...finalizers, LIFECYCLE_FINALIZER];
  return held && untouched(written) ? finalizersReleased(metadata) : undefined;
}

/** Nothing ran or was made for the CR: no status yet (or conditions only), or one that never left the entry node (which has no action) and records no object. */
function untouched(written: ResourceView['status']): boolean {
  if (written === undefined) return true;
  return !('invalid' in written) && written.transition === 0 && written.operation === undefined && (written.objects ?? []).length === 0;
}

/** A deleted resource whose finalizer is gone already (released, or never set): nothing left to do. */
export function released(metadata: ObjectMeta): boolean {
  return metadata.deletionTimestamp !== undefined && !(metadata.finalizers ?? []).includes(LIFECYCLE_FINALIZER);
}

/** The finalizers once okt's is released. */
export function finalizersReleased(metadata: ObjectMeta): string[] {
  return (metadata.finalizers ?? []).filter((f) => f !== LIFECYCLE_FINALIZER);
}

/**
 * What the step needs to know of a deletion: when it was asked, whether okt.dev/abandon asks to
 * release the resource, and (only when the sidecar did not answer) whether its namespace is terminating.
 */
export async function deletionView(metadata: ObjectMeta, sidecar: SidecarView, transport: KubeTransport, log: Logger): Promise<Pick<ResourceView, 'deletionTimestamp' | 'abandonRequested' | 'namespaceTerminating'>> {
  if (metadata.deletionTimestamp === undefined) return {};
  const view: Pick<ResourceView, 'deletionTimestamp' | 'abandonRequested' | 'namespaceTerminating'> = {
    deletionTimestamp: metadata.deletionTimestamp,
    abandonRequested: metadata.annotations?.[ABANDON_ANNOTATION] === 'true',
  };
  if (sidecar.kind !== 'answered') view.namespaceTerminating = await namespaceTerminating(transport, metadata.namespace, log);
  return view;
}

/** Whether a namespace is terminating (or already gone); false when it cannot be read. */
async function namespaceTerminating(transport: KubeTransport, namespace: string | undefined, log: Logger): Promise<boolean> {
  if (namespace === undefined) return false;
  try {
    const ns = await transport.get<KubeObject & { status?: { phase?: string } }>(NAMESPACES, undefined, namespace);
    return ns.metadata.deletionTimestamp !== undefined || ns.status?.phase === 'Terminating';
  } catch (error) {
    if (isNotFound(error)) return true;
    log.warn({ err: error, namespace }, 'cannot read the namespace of a deleted CR whose sidecar does not answer (RBAC: get namespaces)');
    return false;
  }
}

/** The log line of a released finalizer: a warning when the deletion was abandoned, saying what was left undone. */
export function logReleased(status: LifecycleStatus | undefined, log: Logger): void {
  const stalled = status?.conditions?.find((c) => c.type === STALLED);
  if (stalled?.status === 'True' && stalled.reason === REASONS.deletionAbandoned) log.warn({ abandoned: true }, `finalizer removed: ${stalled.message}`);
  else log.info('at a leaf with every event delivered: finalizer removed');
}
