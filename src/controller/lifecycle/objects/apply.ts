// The objects the graph makes at the CR's node, made so: rendered (by the caller, once per look),
// recorded in the inventory (status.objects) before any is first created, applied server-side (only
// those rendered otherwise since their last apply, or changed by someone since), and, once every
// apply succeeded, those no longer wanted let go of.
// Condition ObjectsApplied says how it went: a failed apply names the object and the API's message;
// the write that says so holds its event (objects.applied, objects.failed).
import { isDeepStrictEqual } from 'node:util';
import { withMoreEvents } from '../../../events/status-events.ts';
import { LIFECYCLE_EVENT_TYPES, type LifecycleEventData, type LifecycleEventType } from '../../../events/types.ts';
import { OBJECTS_CONDITION, type Graph, type ObjectOwner, type ObjectRendering } from '../../../graph/index.ts';
import { SaidOnObjectError } from '../../controller.ts';
import { setCondition } from '../../../kube/conditions.ts';
import type { InventoryEntry, LifecycleStatus, OutboxEntry } from '../../../kube/lifecycle-resource.ts';
import { renderPath } from '../../../machine/index.ts';
import { isKubeApiError, kindResource, type KubeObject, type KubeTransport } from '../../../kube/transport/index.ts';
import { planObjects, type ObjectsPlan, type WantedObject } from './inventory.ts';
import { ownFieldsHash, type OwnedObjects } from './owned.ts';
import { letGo, type HeldObject, type LetGoOutcome } from './prune.ts';

/** The reasons of condition ObjectsApplied. */
export const OBJECTS_REASONS = { applied: 'Applied', applyFailed: 'ApplyFailed', renderFailed: 'RenderFailed', contested: 'Contested', deleting: 'ObjectsDeleting' } as const;

export interface NodeObjectsIo {
  readonly graph: Graph;
  readonly transport: KubeTransport;
  /** Writes the CR's status whole and returns it as written. */
  write(status: LifecycleStatus): Promise<LifecycleStatus>;
  /**
   * Records the inventory as applied, with ObjectsApplied and its event (absent: `write`): the
   * reconciler (node-objects.ts) holds it for the write of the look it asked for at once, when there
   * is one. Lost in a crash, it costs only an apply of the same render (which records it then), no
   * orphan: every object it names was in the inventory before it was created.
   */
  writeApplied?(status: LifecycleStatus): Promise<LifecycleStatus>;
  readonly now: string;
  /** The cache of the objects okt made: one deleted or changed by someone since okt applied it is applied again. None for a CR being deleted (its objects are being let go of). */
  readonly owned?: OwnedObjects;
  /** The CR, `namespace/name`. */
  readonly key: string;
  /** The events of the CR delivered so far (those stay out of the outbox), and its spec.desiredState (their data's `desired`). */
  readonly events: { readonly delivered: number; readonly desired: string };
  /** Hears of each apply and each object let go of (the metrics). */
  readonly counts?: ObjectCounts;
}

/** What the metrics count of the objects: each apply by its outcome, each object let go of by its. */
export interface ObjectCounts {
  applied(kind: string, outcome: 'applied' | 'refused'): void;
  letGo(entry: InventoryEntry, outcome: LetGoOutcome): void;
}

/** What applyNodeObjects did: the status as written, and how many objects it applied. */
export interface NodeObjectsApplied {
  readonly status: LifecycleStatus;
  readonly applied: number;
}

/**
 * Makes the objects of the CR's node (status.state), `rendering` being their render there, exist as
 * rendered. A render problem is said on the CR and nothing is applied (it changes only with the CR or
 * the graph); a failed apply is said on the CR, then thrown as said so (logged as that one line), so
 * the CR is looked at again with the work queue's backoff.
 */
export async function applyNodeObjects(io: NodeObjectsIo, owner: ObjectOwner, stored: LifecycleStatus, rendering: ObjectRendering): Promise<NodeObjectsApplied> {
  const { graph, transport } = io;
  let status = stored;
  if (rendering.problems.length > 0) {
    const message = rendering.problems.map((p) => p.message).join('; ');
    const failed = objectsEvent(io, status, LIFECYCLE_EVENT_TYPES.objectsFailed, { reason: OBJECTS_REASONS.renderFailed, message });
    return { status: await writeIfChanged(io, status, { ...status, conditions: objectsCondition(io, status, 'False', OBJECTS_REASONS.renderFailed, message) }, failed), applied: 0 };
  }
  const plan = planObjects(status.objects ?? [], rendering.objects);
  // Recorded before it is created: an operator stopped right after the create finds it in status.
  if (plan.record !== undefined) status = await io.write({ ...status, objects: plan.record });
  const { repair, fights } = repairs(io, owner.metadata.namespace, plan);
  /** Per object id, the hash of okt's fields as its apply left them: recorded in the inventory, compared after a restart too. */
  const fields = new Map<string, string>();
  for (const { rendered } of [...plan.apply, ...repair]) {
    const { declaration, object } = rendered;
    try {
      // force: takes only the fields okt's apply names (what the graph renders) from another manager; fields it does not name stay theirs.
      const made = await transport.apply(kindResource(declaration.apiVersion, declaration.kind), owner.metadata.namespace, object as KubeObject, { force: true });
      io.owned?.applied(declaration.apiVersion, declaration.kind, made);
      io.counts?.applied(declaration.kind, 'applied');
      fields.set(declaration.id, ownFieldsHash(made));
    } catch (error) {
      io.counts?.applied(declaration.kind, 'refused');
      const reason = isKubeApiError(error) ? (error.status?.message ?? error.message) : error instanceof Error ? error.message : String(error);
      const message = `${declaration.kind} ${object.metadata?.name ?? ''} (object "${declaration.id}") was not applied: ${reason}`;
      const failed = objectsEvent(io, status, LIFECYCLE_EVENT_TYPES.objectsFailed, {
        objects: [{ id: declaration.id, kind: declaration.kind, name: object.metadata?.name ?? '' }],
        reason: OBJECTS_REASONS.applyFailed,
        message,
      });
      await writeIfChanged(io, status, { ...status, conditions: objectsCondition(io, status, 'False', OBJECTS_REASONS.applyFailed, message) }, failed);
      throw new SaidOnObjectError(message, { cause: error });
    }
  }
  // Every deletion asked for: one a finalizer holds goes when its finalizers are done, out of the inventory already.
  await letGo(transport, graph, { namespace: owner.metadata.namespace, uid: owner.metadata.uid }, plan.prune, false, io.counts?.letGo);
  const applied = `every object the graph makes at ${status.state} is applied`;
  const condition = fights.length === 0 ? objectsCondition(io, status, 'True', OBJECTS_REASONS.applied, applied) : objectsCondition(io, status, 'False', OBJECTS_REASONS.contested, fights.join('; '));
  // Said once per render applied (not for an object put back: its node's objects were applied before).
  const event = plan.apply.length === 0 ? undefined : objectsEvent(io, status, LIFECYCLE_EVENT_TYPES.objectsApplied, { objects: plan.apply.map(({ entry }) => ({ id: entry.id, kind: entry.kind, name: entry.name })) });
  const settled = plan.settled.map((entry) => {
    const applied = fields.get(entry.id);
    return applied === undefined ? entry : { ...entry, fields: applied };
  });
  return { status: await writeIfChanged(io, status, { ...status, objects: settled, conditions: condition }, event, io.writeApplied), applied: fields.size };
}

/** An event about the objects of the CR's node, its data the status's as the step's events have it. */
function objectsEvent(io: NodeObjectsIo, status: LifecycleStatus, type: LifecycleEventType, more: Partial<LifecycleEventData>): Omit<OutboxEntry, 'sequence'> {
  const data: LifecycleEventData = {
    graph: io.graph.name,
    graphRevision: status.graphRevision ?? io.graph.revision,
    transition: status.transition,
    from: status.state,
    to: status.state,
    desired: io.events.desired,
    events: [],
    path: status.pathSummary ?? renderPath(status.path),
    generation: status.observedGeneration,
    ...more,
  };
  return { type, time: io.now, subject: status.state, data };
}

/**
 * The objects applied already (their render unchanged) that someone deleted or whose fields okt owns
 * someone changed: applied again, but for those fought over (put back FIGHT_REPAIRS times within a
 * window), left as they are for a while and named.
 */
function repairs(io: NodeObjectsIo, namespace: string, plan: ObjectsPlan): { repair: WantedObject[]; fights: string[] } {
  const repair: WantedObject[] = [];
  const fights: string[] = [];
  if (io.owned === undefined) return { repair, fights };
  for (const wanted of plan.unchanged) {
    const { apiVersion, kind, name, fields } = wanted.entry;
    const drift = io.owned.drift(apiVersion, kind, namespace, name, fields);
    if (drift === undefined) continue;
    const fight = io.owned.mayRepair(io.key, apiVersion, kind, namespace, name, drift);
    if (fight === undefined) {
      repair.push(wanted);
      continue;
    }
    const who = fight.manager === undefined ? 'someone deletes it or takes fields okt applies' : `field manager "${fight.manager}" changes fields okt applies`;
    fights.push(`${kind} ${name} (object "${wanted.entry.id}"): ${who} each time okt puts it back; left as it is until ${new Date(fight.until).toISOString()}`);
  }
  return { repair, fights };
}

/** ObjectsApplied at the end of the deletion path while an object okt deleted is still held by its finalizers (the CR's own waits for it). */
export function objectsDeletingCondition(status: LifecycleStatus, held: HeldObject, now: string) {
  const { entry, finalizers } = held;
  const message = `${entry.kind} ${entry.name} (object "${entry.id}") is deleted and waits for its finalizers (${finalizers.join(', ')}); okt's finalizer stays on the resource until it is gone`;
  return setCondition(status.conditions, { type: OBJECTS_CONDITION, status: 'False', reason: OBJECTS_REASONS.deleting, message, observedGeneration: status.observedGeneration }, now);
}

function objectsCondition(io: NodeObjectsIo, status: LifecycleStatus, state: 'True' | 'False', reason: string, message: string) {
  return setCondition(status.conditions, { type: OBJECTS_CONDITION, status: state, reason, message, observedGeneration: status.observedGeneration }, io.now);
}

/** Writes `next` (by `write`) unless it says what `before` says; the write that says it holds `event` (the fact's news). */
async function writeIfChanged(io: NodeObjectsIo, before: LifecycleStatus, next: LifecycleStatus, event?: Omit<OutboxEntry, 'sequence'>, write = io.write): Promise<LifecycleStatus> {
  if (isDeepStrictEqual(before, next)) return before;
  return write(event === undefined ? next : withMoreEvents(next, io.events.delivered, io.graph.name, io.events.desired, [event]));
}
