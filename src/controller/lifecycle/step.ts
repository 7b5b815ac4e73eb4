import { isDeepStrictEqual } from 'node:util';
import { fateOf, formatDuration, nodeConditionType, nodeParams, type Deadline, type Graph } from '../../graph/index.ts';
import { appendToPath, decide, renderPath } from '../../machine/index.ts';
import { createPlanner, predictMigration, resolveDesired, type MigrationPrediction, type Planner, type RecordedPosition } from '../../plan/index.ts';
import { findCondition, isConditionTrue, sameConditions, setCondition, type Condition, type ConditionUpdate } from '../../kube/conditions.ts';
import { operationSummary, statusEvents, withEvents } from '../../events/status-events.ts';
import {
  STATUS_PATH_LIMIT,
  type LifecycleSpec,
  type LifecycleStatus,
  type OperationStatus,
  type OutboxEntry,
} from '../../kube/lifecycle-resource.ts';
import { isTerminal } from '../../sidecar-client/index.ts';
import { LIFECYCLE_EVENT_TYPES, type LifecycleEventData, type LifecycleEventType } from '../../events/types.ts';
import { OKT_CONDITION_TYPES, READY, REASONS, RECONCILING, STALLED } from './reasons.ts';
import { inStatusFormat } from './status/lean-format.ts';
import { DEFAULT_STATUS_FORMAT, type StatusFormat } from '../../kube/status-format.ts';
import { brakeMessage, CYCLE_BRAKE_CONDITION, cycleTurn, heldForMs, releasedBrake } from './cycle-brake.ts';

export { READY, REASONS, RECONCILING, STALLED };

/** The graph of a controller with its planner (both precompute their tables once), and the earlier revisions it still serves. */
export interface LifecycleModel {
  readonly graph: Graph;
  readonly planner: Planner;
  /** Revision -> the model of an earlier revision the graph declares (`previous`): where the Manual policy keeps CRs. */
  readonly earlier: ReadonlyMap<string, LifecycleModel>;
}

/** The model of a graph and of every earlier revision it declares. */
export function createLifecycleModel(graph: Graph): LifecycleModel {
  const earlier = new Map(graph.previous.map((g): [string, LifecycleModel] => [g.revision, { graph: g, planner: createPlanner(g), earlier: new Map() }]));
  return { graph, planner: createPlanner(graph), earlier };
}

/** The resource as the informer cache has it, already parsed. */
export interface ResourceView {
  uid: string;
  generation: number;
  deleting: boolean;
  /** metadata.deletionTimestamp: the clock of a namespace teardown's grace period. */
  deletionTimestamp?: string;
  /** The resource's namespace is terminating (looked up only while deleting with the sidecar unreachable). */
  namespaceTerminating?: boolean;
  /** The annotation okt.dev/abandon asks to release the finalizer without driving the application down. */
  abandonRequested?: boolean;
  /** The annotation okt.dev/migrate asks to move the resource to the operator's revision (the Manual migration policy). */
  migrateRequested?: boolean;
  spec: LifecycleSpec;
  /** undefined on first sight; InvalidStatus when status does not parse. */
  status: LifecycleStatus | InvalidStatus | undefined;
}

/** A status that does not parse: which field and why, and its conditions if those still parse. */
export interface InvalidStatus {
  invalid: string;
  conditions?: Condition[];
}

/** An operation as the sidecar reports it. */
export interface SeenOperation {
  phase: OperationStatus['phase'];
  events: string[];
  message?: string;
  reason?: string;
  startedAt?: string;
  finishedAt?: string;
  /** How many times the sidecar started it (a re-run after a sidecar lost it counts). */
  attempts?: number;
}

/** Why the operator sends nothing to a CR's sidecar (a URL its token may not go to, a Secret it cannot read). */
export interface SidecarRefusal {
  reason: string;
  message: string;
  /** Look again after this long (absent: only when the CR changes). */
  retryAfterMs?: number;
}

const PAUSED_MESSAGE = 'spec.paused is true: no transition is taken';

/** A paused resource being deleted: the pause holds the deletion's transitions too, until it is lifted or the resource abandoned. */
function pausedDeletionMessage(end: string): string {
  return `${PAUSED_MESSAGE}, the deletion's included; set spec.paused to false to drive the application down to ${end}, or annotate ${ABANDON_ANNOTATION}=true to release the resource without it`;
}

/** What the sidecar said in this reconcile ('refused': the operator did not ask it, see SidecarRefusal). */
export type SidecarView =
  | { kind: 'unavailable'; message: string }
  | ({ kind: 'refused' } & SidecarRefusal)
  | {
      kind: 'answered';
      /** The sidecar's epoch: it changes exactly when the sidecar's memory (its journal) does. */
      epoch: string;
      /**
       * The current operation as the sidecar knows it. 'unknown': this sidecar (the epoch the operation
       * was committed with) never saw it, so it was never started. 'lost': the sidecar that held it is
       * gone, and the one answering refused to run it again (its action is not declared idempotent).
       */
      operation?: SeenOperation | 'unknown' | 'lost';
      /** Events the sidecar raised outside any action (a crash, say), newer than observedFrom in this epoch. */
      observedEvents: string[];
      /** The sidecar's sequence of its newest observed event. */
      observedSequence?: number;
      /**
       * The sequence observedEvents come after: status.observedSequence in the epoch the status records;
       * in another, where this resource's news begins there (src/controller/lifecycle/epoch-news.ts). Absent: 0.
       */
      observedFrom?: number;
    };

/** Why the sidecar refused the last start of the current operation (remembered by the reconciler). */
export interface StartRefusal {
  operation: string;
  reason: string;
  message: string;
  /** Stalled (the user or an admin must act) rather than waiting. */
  stall: boolean;
  retryAfterMs: number;
}

export interface StepInput {
  model: LifecycleModel;
  resource: ResourceView;
  sidecar: SidecarView;
  /** The highest event sequence the emitter has delivered for this resource (kept in memory). */
  delivered: number;
  now: string;
  outboxLimit: number;
  /** Why the sink refuses this resource's next event, when it does (it blocks the stream). */
  deliveryProblem?: string;
  /** The sidecar refused the last start of the current operation. */
  startRefused?: StartRefusal;
  /** How long after its deletion a resource in a terminating namespace whose sidecar does not answer is released. Default 60 s. */
  teardownGraceMs?: number;
  /** The shape status is written in (its CRD version's). Default: full. */
  statusFormat?: StatusFormat;
}

/** What the reconciler must do, in this order: write status, cancel or start the operation, delete/unfinalize, requeue. */
export interface StepEffects {
  /** The new status, written with the resourceVersion the step was computed from; absent: no write. */
  status?: LifecycleStatus | Pick<LifecycleStatus, 'conditions'>;
  /** Start (idempotently) this operation on the sidecar of this epoch, only after the status write succeeded. */
  startOperation?: { id: string; node: string; epoch?: string; params?: Record<string, unknown> };
  /** Cancel this running operation (a deletion, or a change of spec.desiredState, at a node cancellable on it): asked at every look while it holds, sent once by the reconciler. */
  cancelOperation?: string;
  /** The application sits on a leaf with every event delivered (or deletion is abandoned): end the resource's life. */
  finish?: 'removeFinalizer' | 'delete';
  /** Wait for the running operation, or for the sidecar, then look again. */
  poll?: boolean;
  /** Go on at once: the resource is still moving and nothing is running. */
  again?: boolean;
  /** Look again after this long (a retry's backoff, a refused start, a deadline). */
  requeueAfterMs?: number;
  /** Nothing moves until the emitter delivers this resource's events (a leaf's last events, a full outbox). */
  awaitingDelivery?: boolean;
}

/** The annotation that releases a deleted resource's finalizer without driving its application down. */
export const ABANDON_ANNOTATION = 'okt.dev/abandon';
/** How a person releases a deleted resource that cannot be driven down, after `lead`; nothing when it is not being deleted. */
function abandonHint(resource: ResourceView, lead: string): string {
  return resource.deleting ? `${lead}annotate ${ABANDON_ANNOTATION}=true to release the resource without driving it down` : '';
}
/** The annotation that moves a resource to the operator's graph revision under the Manual migration policy. */
export const MIGRATE_ANNOTATION = 'okt.dev/migrate';
export const DEFAULT_TEARDOWN_GRACE_MS = 60_000;
/** How long an abandoned deletion waits for its stalled event to reach the sink before the finalizer goes anyway. */
export const ABANDON_DELIVERY_WAIT_MS = 60_000;
/** The longest wait between two runs of a retried action. */
export const MAX_RETRY_BACKOFF_MS = 300_000;
/** The longest requeue toward a deadline (a timer cannot wait beyond ~24.8 days): a farther one is looked at again daily. */
export const MAX_DEADLINE_WAIT_MS = 86_400_000;

/**
 * The operation id of a transition's action: a retry after a crash derives the same id, so nothing starts
 * twice; the k-th re-run of a failed action (spec.retry, a retry policy) is `<uid>-<transition>.<k>`.
 */
export function operationId(uid: string, transition: number, retries = 0): string {
  return retries === 0 ? `${uid}-${transition}` : `${uid}-${transition}.${retries}`;
}

/**
 * One reconcile of one resource, as a pure function: from what the API server and the sidecar say,
 * the effects to carry out. At most one transition. Everything it needs is in the input, so a
 * restart at any line recomputes the same effects.
 */
export function step(given: StepInput): StepEffects {
  return lookAgainAtDeadline(given, stepUntimed(given));
}

/** step() but for the requeue at the current node's deadline. */
function stepUntimed(given: StepInput): StepEffects {
  const { resource, now } = given;
  if (resource.status !== undefined && 'invalid' in resource.status) {
    return unreadable(resource.status.conditions ?? [], REASONS.invalidStatus, resource.status.invalid, resource.generation, now, given.statusFormat);
  }
  const firstSight = resource.status === undefined;
  const stored = resource.status ?? initialStatus(given.model.graph, resource.generation, now);
  // The revision the resource is driven on: the operator's, or (Manual policy) the earlier one it stays on.
  const how = { deleting: resource.deleting, migrateRequested: resource.migrateRequested === true };
  const { model, migration } = servedMigration(given.model, recordedPosition(given.model.graph, stored, resource.spec, how));
  const input: StepInput = { ...given, model };
  const { graph } = model;
  const work = new StatusDraft(stored, firstSight, resource, now, graph, input.delivered, input.statusFormat ?? DEFAULT_STATUS_FORMAT);
  if (migration.kind === 'stranded') {
    // Stranded, a deleted resource can still be released by hand (okt.dev/abandon).
    work.desired = stored.state;
    const abandon = resource.abandonRequested ? abandonment(input) : undefined;
    if (abandon !== undefined) return work.abandon(abandon, input.teardownGraceMs ?? DEFAULT_TEARDOWN_GRACE_MS);
    const release = abandonHint(resource, '; or ');
    return work.stall(REASONS.unknown, `${migration.reason}${release}`);
  }
  work.onRevision = migration.kind === 'current';
  const desired = resolveDesired(graph, resource.spec.desiredState);
  work.desired = resource.deleting ? deletionEnd(graph, landing(graph, stored.state, migration)) : 'node' in desired ? desired.node : resource.spec.desiredState;
  work.recordFailureDesired();
  const abandon = abandonment(input);
  if (abandon !== undefined) return work.abandon(abandon, input.teardownGraceMs ?? DEFAULT_TEARDOWN_GRACE_MS);
  const sidecar = input.sidecar;
  if (sidecar.kind === 'refused') {
    // At the end of its deletion path nothing is asked of the sidecar: the resource is released.
    if (resource.deleting && stored.state === work.desired) return work.converge(resource, true);
    // Paused with no action to follow, nothing would be asked of the sidecar anyway: the CR says it is
    // paused (the refusal is said once it is resumed).
    if (resource.spec.paused === true && (stored.operation === undefined || isTerminal(stored.operation.phase))) {
      return work.waiting(REASONS.paused, resource.deleting ? pausedDeletionMessage(work.desired) : PAUSED_MESSAGE);
    }
    // Nothing moves without the sidecar the CR names, and nothing was asked of it: a person must fix spec.sidecar (or the Secret).
    const release = abandonHint(resource, '; or ');
    const effects = work.stall(sidecar.reason, `${sidecar.message}${release}`);
    return sidecar.retryAfterMs === undefined ? effects : { ...effects, requeueAfterMs: sidecar.retryAfterMs };
  }
  if (migration.kind === 'migrates') {
    if (migration.state.kind === 'moved') return migrateInto(input, work, migration);
    work.migrate(migration);
  }

  // The current node's operation: while it runs, wait and change nothing but what the sidecar says of it.
  // Taken as the migration left it: a renamed node's operation goes on under the node's new name.
  const operation = work.status.operation;
  let operationEvents: string[] = [];
  if (operation !== undefined && !isTerminal(operation.phase)) {
    if (sidecar.kind === 'unavailable') {
      return { ...work.waiting(REASONS.sidecarUnavailable, `sidecar unavailable while the action of ${operation.node} runs: ${sidecar.message}`), poll: true };
    }
    const cancel = cancelCause(input, work.desired, operation);
    // Recorded before the cancellation is sent: its end then reads as a change of mind, not a failure.
    const current = cancel === 'desiredChange' ? work.requestCancel(operation) : operation;
    const seen = sidecar.operation ?? 'unknown';
    const overdue = passedDeadline(input, work.status);
    if (seen === 'unknown') {
      if (cancel !== undefined) {
        const message = cancel === 'deletion' ? 'never started: the resource is being deleted' : 'never started';
        work.finishOperation(current, { phase: 'Cancelled', events: [], reason: 'Cancelled', message, finishedAt: now });
      } else if (overdue !== undefined) {
        work.finishOperation(current, { phase: 'Cancelled', events: [], reason: 'Cancelled', message: `never started: ${deadlineMessage(overdue)}`, finishedAt: now });
      } else {
        // Committed but never started (a crash between the write and the start): start it now, same id, same sidecar.
        return work.startCommitted(current, sidecar.epoch, input.startRefused);
      }
    } else if (seen === 'lost') {
      work.finishOperation(current, {
        phase: 'Failed',
        events: [],
        reason: 'Interrupted',
        message: `the sidecar that held it (epoch ${operation.epoch ?? 'unrecorded'}) is gone and sidecar epoch ${sidecar.epoch} does not know it; its action is not declared idempotent, so it was not run again and may or may not have run`,
        finishedAt: now,
      });
    } else {
      work.adoptAttempt(current, sidecar.epoch, seen);
      if (!isTerminal(seen.phase)) {
        if (overdue !== undefined) return work.cancelAtDeadline(current, overdue);
        return work.running(current, cancel);
      }
      work.finishOperation(current, seen);
      operationEvents = seen.events;
    }
  }
  if (migration.kind === 'waits') {
    // The action that held the migration back is over (its end is recorded): the resource moves now.
    const now = predictMigration(graph, model.planner, { ...recordedPosition(graph, work.status, resource.spec, how), runningAction: undefined });
    if (now.kind === 'migrates' && now.state.kind === 'moved') return migrateInto(input, work, now);
    if (now.kind === 'migrates') work.migrate(now);
  }
  const observed = work.observedEvents(sidecar);

  // At the end of its deletion path (a leaf, or its entry node without onDelete) the resource is
  // released, paused or not: that takes no transition and runs nothing, and no event may move it on.
  if (resource.deleting && work.status.state === work.desired) return work.converge(resource, true);
  if (resource.spec.paused === true) {
    return work.waiting(REASONS.paused, resource.deleting ? pausedDeletionMessage(work.desired) : PAUSED_MESSAGE);
  }
  const finished = work.status.operation;
  if (finished !== undefined && finished.phase !== 'Succeeded' && !(resource.deleting && finished.phase === 'Cancelled')) {
    return failed(input, work, finished, [...operationEvents, ...observed]);
  }
  return decideAndMove(input, work, [...operationEvents, ...observed]);
}

/** The regular course: the collected events plus the planner's (or deletion's) event, one decision, at most one move. */
function decideAndMove(input: StepInput, work: StatusDraft, collected: string[]): StepEffects {
  const { model, resource } = input;
  const { graph } = model;
  const current = work.status.state;
  const desired = work.desired;
  const overdue = passedDeadline(input, work.status);
  const timedOut = timeoutEdge(input, work, overdue);
  if (timedOut !== undefined) return timedOut;
  const events = [...collected];
  let unreachable = false;
  if (resource.deleting) {
    const exit = graph.node(current).deletionChild;
    if (exit !== undefined) events.push(exit);
  } else {
    const plan = model.planner.next(current, desired);
    if (plan.kind === 'move') events.push(plan.event);
    unreachable = plan.kind === 'unreachable';
  }
  const next = decide(graph, current, events);
  if (next === current) {
    // The events were offered to a decision: they are used up, whatever it decided.
    work.consumeObserved(input.sidecar);
    if (overdue !== undefined) return stallAtDeadline(work, overdue);
    if (unreachable) return work.stall(REASONS.unreachable, `${desired} cannot be reached from ${current} in graph "${graph.name}"`);
    // A collected event naming the node's own self-loop child outranked the planned one: that decision
    // stays, the events are used up, and the next one moves on.
    if (current !== desired) return { ...work.waiting(REASONS.progressing, `on the way from ${current} to ${desired}`), again: true };
    const operation = work.status.operation;
    const rerun = operation === undefined ? undefined : rerunForParams(input, work, operation);
    return rerun ?? work.converge(resource, graph.node(desired).isLeaf);
  }
  return work.move(next, events, input);
}

/**
 * The current node's action failed (or ended Cancelled) without moving the resource: triggers and
 * other events still win; then a new spec.retry runs it again, a new desired node moves on from it, a
 * retry policy runs it again after its backoff; otherwise the resource stalls, saying how to go on.
 */
function failed(input: StepInput, work: StatusDraft, operation: OperationStatus, collected: string[]): StepEffects {
  const { model, resource } = input;
  const current = work.status.state;
  const node = model.graph.node(current);
  const overdue = passedDeadline(input, work.status);
  const timedOut = timeoutEdge(input, work, overdue);
  if (timedOut !== undefined) return timedOut;
  if (collected.length > 0) {
    const next = decide(model.graph, current, collected);
    if (next !== current) return work.move(next, collected, input);
    work.consumeObserved(input.sidecar);
  }
  if (cancelledForChangeOfMind(operation, resource.deleting)) {
    // No failure: the user changed their mind. Still changed, the resource moves on; taken back before
    // the cancellation landed, the node is wanted after all, so its action runs again.
    if (isChangeOfMind(operation, work.desired)) return decideAndMove(input, work, collected);
    return work.retry(operation, input, `its cancellation landed after spec.desiredState came back to ${work.desired}`);
  }
  const retryToken = resource.spec.retry;
  // Past the deadline a new run would be cancelled at once: spec.retry waits for another node.
  if (overdue === undefined && retryToken !== undefined && retryToken !== operation.retry) return work.retry(operation, input, `spec.retry changed to "${retryToken}"`);
  if (work.desired !== operation.desired && work.desired !== current) return decideAndMove(input, work, collected);
  if (overdue !== undefined) return stallAtDeadline(work, overdue);
  const rerun = rerunForParams(input, work, operation);
  if (rerun !== undefined) return rerun;
  const interrupted = operation.reason === 'Interrupted';
  // Runs under the current parameters: a run for changed parameters starts the count again.
  const runs = (operation.retries ?? 0) - (operation.paramsSince ?? 0) + 1;
  if (!interrupted && node.retry !== undefined && runs < node.retry.attempts) {
    const backoff = Math.min(node.retry.backoffMs * 2 ** (runs - 1), MAX_RETRY_BACKOFF_MS);
    const due = Date.parse(operation.finishedAt ?? input.now) + backoff;
    const wait = due - Date.parse(input.now);
    if (wait <= 0) return work.retry(operation, input, `retry policy: run ${runs + 1} of ${node.retry.attempts}`);
    const message = `the action of ${current} (operation ${operation.id}) failed: run ${runs} of ${node.retry.attempts}; the next run starts in ${Math.ceil(wait / 1000)} s${operation.message ? ` (${operation.message})` : ''}`;
    return { ...work.waiting(REASONS.actionRetrying, message), requeueAfterMs: wait };
  }
  return work.stall(interrupted ? REASONS.interrupted : REASONS.actionFailed, failureMessage(operation, runs, input.resource.deleting));
}

/**
 * The node's action run again because its parameters changed since it started, when its node says
 * `onParamsChange: Rerun`. An operation started before the graph declared parameters recorded none:
 * they apply from its next run.
 */
function rerunForParams(input: StepInput, work: StatusDraft, operation: OperationStatus): StepEffects | undefined {
  const { graph } = input.model;
  if (operation.params === undefined || !graph.has(operation.node) || graph.node(operation.node).onParamsChange !== 'Rerun') return undefined;
  const now = nodeParams(graph, operation.node, input.resource.spec.params);
  if (now === undefined || (now.ok && isDeepStrictEqual(now.params, operation.params))) return undefined;
  const changed = now.ok ? changedParams(operation.params, now.params) : [];
  return work.retry(operation, input, `spec.params changed${changed.length > 0 ? ` (${changed.join(', ')})` : ''}`, { reason: REASONS.paramsChanged, paramsChanged: true });
}

/** The names of the parameters whose values differ between two sets. */
function changedParams(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  return [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => !isDeepStrictEqual(before[k], after[k])).sort();
}

/** Why and how a deleted resource's finalizer is released without driving its application down, if it is. */
function abandonment(input: StepInput): string | undefined {
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

/** A node's deadline as the status sets its clock: counted from the transition that entered the node. */
export interface NodeDeadline {
  readonly node: string;
  readonly deadline: Deadline;
  readonly entered: string;
  /** When it falls, in ms since the epoch. */
  readonly at: number;
}

/** The deadline of the node `status` is on, if it has one (the entry node, entered by no transition, has none). */
export function deadlineOf(graph: Graph, status: LifecycleStatus): NodeDeadline | undefined {
  const deadline = graph.has(status.state) ? graph.node(status.state).deadline : undefined;
  const entered = status.lastTransition?.time;
  if (deadline === undefined || entered === undefined) return undefined;
  return { node: status.state, deadline, entered, at: Date.parse(entered) + deadline.afterMs };
}

/** The current node's deadline when it has passed and applies: deletion and a pause hold it off. */
function passedDeadline(input: StepInput, status: LifecycleStatus): NodeDeadline | undefined {
  if (input.resource.deleting || input.resource.spec.paused === true) return undefined;
  const due = deadlineOf(input.model.graph, status);
  return due !== undefined && Date.parse(input.now) >= due.at ? due : undefined;
}

function deadlineMessage(due: NodeDeadline): string {
  return `the deadline of ${due.node} (${formatDuration(due.deadline.afterMs)} after it was entered at ${due.entered}) passed at ${new Date(due.at).toISOString()}`;
}

/** A passed deadline's edge, if it has one: its event is offered alone, so it is taken whatever else was raised. */
function timeoutEdge(input: StepInput, work: StatusDraft, due: NodeDeadline | undefined): StepEffects | undefined {
  const then = due?.deadline.then;
  if (due === undefined || then === undefined) return undefined;
  return work.move(then, [then], input, { reason: REASONS.deadlineExceeded, message: `${deadlineMessage(due)}: timeout edge to ${then}` });
}

function stallAtDeadline(work: StatusDraft, due: NodeDeadline): StepEffects {
  return work.stall(REASONS.deadlineExceeded, `${deadlineMessage(due)}; set spec.desiredState to another node to move on`);
}

/**
 * The one requeue a deadline costs: at the deadline of the node the step leaves the resource on,
 * unless something sooner is due. Deletion and a pause hold the deadline off; their end is a change
 * of the resource, which is reconciled anyway.
 */
function lookAgainAtDeadline(given: StepInput, effects: StepEffects): StepEffects {
  const { resource } = given;
  if (effects.again || effects.finish !== undefined || resource.deleting || resource.spec.paused === true) return effects;
  const status = effects.status !== undefined && 'state' in effects.status ? effects.status : resource.status;
  if (status === undefined || 'invalid' in status) return effects;
  const graph = modelOfRevision(given.model, status.graphRevision)?.graph;
  const due = graph === undefined ? undefined : deadlineOf(graph, status);
  const left = due === undefined ? 0 : due.at - Date.parse(given.now);
  if (left <= 0) return effects;
  return { ...effects, requeueAfterMs: Math.min(effects.requeueAfterMs ?? left, left, MAX_DEADLINE_WAIT_MS) };
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

/**
 * Where a resource stands, for the migration prediction, read as the operator reads it (no status yet:
 * at the entry of `graph`'s revision, where the operator starts it).
 */
export function recordedPosition(graph: Graph, status: LifecycleStatus | undefined, spec: LifecycleSpec, how: { deleting: boolean; migrateRequested: boolean }): RecordedPosition {
  const operation = status?.operation;
  return {
    revision: status === undefined ? graph.revision : status.graphRevision,
    state: status?.state ?? graph.entry,
    // Deletion drives the resource to a leaf whatever spec.desiredState says: that name does not have to fit.
    desired: how.deleting && status !== undefined ? status.state : spec.desiredState,
    runningAction: operation !== undefined && !isTerminal(operation.phase) ? operation.node : undefined,
    migrateRequested: how.migrateRequested,
  };
}

/**
 * What the operator's model does with a resource at `at`: the revision it is driven on (its own, when
 * the Manual policy keeps it on an earlier one) and the migration prediction there. `okt graph check`
 * asks the same.
 */
export function servedMigration(model: LifecycleModel, at: RecordedPosition): { model: LifecycleModel; migration: MigrationPrediction } {
  const migration = predictMigration(model.graph, model.planner, at);
  if (migration.kind !== 'stays') return { model, migration };
  const earlier = modelOfRevision(model, migration.revision) ?? model;
  return { model: earlier, migration: predictMigration(earlier.graph, earlier.planner, at) };
}

/** The model that drives a resource on `revision`: the operator's own (also for none recorded), or an earlier one it serves. */
function modelOfRevision(model: LifecycleModel, revision: string | undefined): LifecycleModel | undefined {
  return revision === undefined || revision === model.graph.revision ? model : model.earlier.get(revision);
}

/** The node of `graph` the resource is on, or will be once its migration is done. */
function landing(graph: Graph, state: string, migration: MigrationPrediction): string {
  if (migration.kind === 'migrates') return migration.state.node;
  const fate = fateOf(graph, state);
  return 'node' in fate ? fate.node : state;
}

/**
 * Why the running operation is to be cancelled now, if it is: the deletion, or a change of mind to a
 * node the resource can reach from here (cancelling for an unreachable one would only stall it), as its
 * node's policy allows. Paused, nothing is cancelled: no move would follow.
 */
function cancelCause(input: StepInput, desired: string, operation: OperationStatus): 'deletion' | 'desiredChange' | undefined {
  const { graph, planner } = input.model;
  const { resource } = input;
  if (!graph.has(operation.node)) return undefined;
  const policy = graph.node(operation.node).cancellable;
  if (resource.deleting) return policy.onDelete && resource.spec.paused !== true ? 'deletion' : undefined;
  if (!policy.onDesiredChange || resource.spec.paused === true || !graph.has(desired)) return undefined;
  return isChangeOfMind(operation, desired) && planner.distance(operation.node, desired) !== undefined ? 'desiredChange' : undefined;
}

/** `desired` is neither the operation's node nor the node wanted when it started (on the way there, its action is no detour). */
function isChangeOfMind(operation: OperationStatus, desired: string): boolean {
  // An operation started by an okt that did not record desiredAtStart: no telling a change of mind from the route.
  return operation.desiredAtStart !== undefined && desired !== operation.node && desired !== operation.desiredAtStart;
}

/** The operation ended Cancelled after a change of mind asked for it (a deletion's cancellation is no change of mind). */
function cancelledForChangeOfMind(operation: OperationStatus, deleting: boolean): boolean {
  return !deleting && operation.phase === 'Cancelled' && operation.cancelRequestedFor !== undefined;
}

/**
 * The resource's node was removed and mapped to another: it enters that node by a transition (whose
 * action, if any, starts), in the same write as the migration. Paused, or with no sidecar for that
 * action, it waits on its old revision.
 */
function migrateInto(input: StepInput, work: StatusDraft, migration: Extract<MigrationPrediction, { kind: 'migrates' }>): StepEffects {
  if (input.resource.spec.paused === true) return work.waiting(REASONS.paused, `${PAUSED_MESSAGE}; its migration waits too`);
  const into = migration.state.node;
  const waiting = work.cannotCommit(input, input.model.graph.node(into).hasAction ? into : undefined, `enter ${into}`);
  if (waiting !== undefined) return waiting;
  work.migrate(migration);
  work.consumeObserved(input.sidecar);
  return work.transition(into, [], input);
}

/** A transition commits at most: action succeeded/failed, migrated, transition, action started, converged (or braked). */
const MAX_EVENTS_PER_TRANSITION = 5;

/** The condition reasons of a node's condition: what tells okt's node conditions from others'. */
const NODE_CONDITION_REASONS: ReadonlySet<string> = new Set([REASONS.entered, REASONS.left]);

/**
 * `condition` as a write judged at `generation` says it: each of okt's conditions is judged anew by every
 * step, so it carries the generation that step read (kubectl wait ignores a condition of an older one);
 * its status and lastTransitionTime stay. Other writers' conditions keep what they said.
 */
function judgedAt(condition: Condition, generation: number): Condition {
  const okts = OKT_CONDITION_TYPES.has(condition.type) || NODE_CONDITION_REASONS.has(condition.reason);
  return okts && condition.observedGeneration !== generation ? { ...condition, observedGeneration: generation } : condition;
}

function initialStatus(graph: Graph, generation: number, now: string): LifecycleStatus {
  const entry = graph.entry;
  return {
    state: entry,
    graphRevision: graph.revision,
    observedGeneration: generation,
    transition: 0,
    sequence: 0,
    path: [entry],
    pathSummary: renderPath([entry]),
    conditions: setCondition([], { type: nodeConditionType(entry), status: 'True', reason: REASONS.entered, message: `${entry} is the entry node`, observedGeneration: generation }, now),
  };
}

/**
 * A spec or status the operator cannot read: only conditions say why (the rest of status is left for
 * a person to repair), written once.
 */
export function unreadable(before: readonly Condition[], reason: typeof REASONS.invalidStatus | typeof REASONS.invalidSpec, problem: string, generation: number, now: string, format: StatusFormat = DEFAULT_STATUS_FORMAT): StepEffects {
  let conditions = [...before];
  const what = reason === REASONS.invalidSpec ? 'spec' : 'status';
  const message = `${what} cannot be read: ${problem}; repair it to resume`;
  for (const [type, value] of [[READY, 'False'], [RECONCILING, 'False'], [STALLED, 'True']] as const) {
    conditions = setCondition(conditions, { type, status: value, reason, message, observedGeneration: generation }, now);
  }
  conditions = inStatusFormat({ conditions }, format).conditions;
  return sameConditions(before, conditions) ? {} : { status: { conditions } };
}

function failureMessage(operation: OperationStatus, runs: number, deleting: boolean): string {
  const detail = operation.message ? `: ${operation.message}` : '';
  const tries = runs > 1 ? ` after ${runs} runs` : '';
  const ended = operation.reason === 'Interrupted' ? 'was interrupted' : `ended ${operation.phase}`;
  const moveOn = deleting ? `annotate ${ABANDON_ANNOTATION}=true to release the resource without it` : 'set spec.desiredState to another node to move on';
  return `the action of ${operation.node} (operation ${operation.id}) ${ended}${tries}${detail} and raised no event; set spec.retry to a new value to run it again, or ${moveOn}`;
}

/** Why a transition was taken other than by an event of the graph's course (a deadline): said in its CloudEvent. */
interface TransitionCause {
  readonly reason: string;
  readonly message: string;
}

/** The status being built in one step, with the bookkeeping every write shares. */
class StatusDraft {
  readonly status: LifecycleStatus;
  /** The node the resource is driven to: spec.desiredState, or the deletion's leaf. */
  desired: string;
  /** The resource is on the revision of the graph it is driven with (not waiting for, nor stranded by, a migration). */
  onRevision = false;
  readonly #stored: LifecycleStatus;
  readonly #firstSight: boolean;
  readonly #resource: ResourceView;
  readonly #generation: number;
  readonly #now: string;
  readonly #graph: Graph;
  /** Events of earlier writes the emitter has not delivered yet: they stay in the outbox, in full. */
  readonly #undelivered: OutboxEntry[];
  /** The events of this write. */
  readonly #added: OutboxEntry[] = [];
  readonly #format: StatusFormat;

  constructor(stored: LifecycleStatus, firstSight: boolean, resource: ResourceView, now: string, graph: Graph, delivered: number, format: StatusFormat) {
    this.#stored = stored;
    this.#firstSight = firstSight;
    this.#resource = resource;
    this.#generation = resource.generation;
    this.status = releasedBrake({ ...stored, observedGeneration: resource.generation, conditions: stored.conditions.map((c) => judgedAt(c, resource.generation)) }, resource.generation, now);
    this.desired = resource.spec.desiredState;
    this.#now = now;
    this.#graph = graph;
    this.#undelivered = stored.sequence > delivered ? statusEvents(stored, graph.name).filter((e) => e.sequence > delivered) : [];
    this.#format = format;
  }

  finishOperation(operation: OperationStatus, seen: SeenOperation): void {
    const finished: OperationStatus = { ...operation, phase: seen.phase, events: [...seen.events] };
    if (seen.message !== undefined) finished.message = seen.message;
    if (seen.reason !== undefined) finished.reason = seen.reason;
    if (seen.startedAt !== undefined) finished.startedAt = seen.startedAt;
    if (seen.finishedAt !== undefined) finished.finishedAt = seen.finishedAt;
    if (seen.phase !== 'Succeeded') finished.desired = this.desired;
    if (cancelledForChangeOfMind(finished, this.#resource.deleting)) {
      finished.reason = REASONS.desiredStateChanged;
      finished.message = `cancelled: spec.desiredState moved to ${operation.cancelRequestedFor}${seen.message ? ` (${seen.message})` : ''}`;
    }
    this.status.operation = finished;
    const type = seen.phase === 'Succeeded' ? LIFECYCLE_EVENT_TYPES.actionSucceeded : LIFECYCLE_EVENT_TYPES.actionFailed;
    this.#emit(type, operation.node, { ...this.#data(operation.node, operation.node, seen.events), operation: operationSummary(finished) });
  }

  /**
   * What the sidecar says of the operation it holds: its epoch and attempt (it re-ran an idempotent
   * action a lost sidecar held) and, while it runs, its phase (a commit writes Pending).
   */
  adoptAttempt(operation: OperationStatus, epoch: string, seen: SeenOperation): void {
    const attempts = Math.max(seen.attempts ?? 1, operation.attempts ?? 1);
    const adopted: OperationStatus = { ...operation, epoch };
    if (attempts > 1) adopted.attempts = attempts;
    if (!isTerminal(seen.phase)) adopted.phase = seen.phase;
    if (!isDeepStrictEqual(adopted, operation)) this.status.operation = adopted;
  }

  /**
   * An okt before a1de124 recorded a failure without the node wanted then (another one moves the
   * resource on) and held the resource until its spec changed: seen at the generation it was written
   * at, it failed for the node wanted now (the deletion's end included), recorded so that today's rule
   * applies from here on. Written at an older generation, the node is unknown.
   */
  recordFailureDesired(): void {
    const operation = this.status.operation;
    if (operation === undefined || operation.phase === 'Succeeded' || !isTerminal(operation.phase) || operation.desired !== undefined) return;
    if (this.#stored.observedGeneration === this.#generation) this.status.operation = { ...operation, desired: this.desired };
  }

  /** The operation runs: wait for it (cancelling it, when its node allows it for `cancel`), keeping the conditions true to it. */
  running(operation: OperationStatus, cancel: 'deletion' | 'desiredChange' | undefined): StepEffects {
    const node = operation.node;
    if (node === this.desired) this.#readiness(false, REASONS.actionRunning, `${node} entered; its action runs`);
    else if (cancel === 'desiredChange') this.#readiness(false, REASONS.progressing, `on the way from ${node} to ${this.desired}; its action (operation ${operation.id}) is being cancelled, spec.desiredState moved`);
    else this.#readiness(false, REASONS.progressing, `on the way from ${node} to ${this.desired}`);
    const effects: StepEffects = { ...this.writeIfChanged(), poll: true };
    if (cancel !== undefined) effects.cancelOperation = operation.id;
    return effects;
  }

  /** Records that a change of mind asks to cancel the running operation (once per desired node); returns it as recorded. */
  requestCancel(operation: OperationStatus): OperationStatus {
    if (operation.cancelRequestedFor === this.desired) return operation;
    const requested = { ...operation, cancelRequestedFor: this.desired };
    this.status.operation = requested;
    return requested;
  }

  /** The node's deadline passed while its action runs: cancel it; its end (Cancelled) takes the timeout edge or stalls. */
  cancelAtDeadline(operation: OperationStatus, due: NodeDeadline): StepEffects {
    const then = due.deadline.then === undefined ? 'it stalls' : `it goes to ${due.deadline.then}`;
    return { ...this.waiting(REASONS.deadlineExceeded, `${deadlineMessage(due)}: its action (operation ${operation.id}) is cancelled, then ${then}`), poll: true, cancelOperation: operation.id };
  }

  /** Starts an operation committed earlier, on the sidecar it was committed with; a refusal is said in the conditions. */
  startCommitted(operation: OperationStatus, epoch: string, refusal: StartRefusal | undefined): StepEffects {
    // The parameters it was committed with: the same id with others would be another operation.
    const start = startOf(operation, operation.epoch ?? epoch);
    const held = heldForMs(operation, this.#now);
    if (held > 0) return { ...this.writeIfChanged(), requeueAfterMs: held };
    if (refusal === undefined || refusal.operation !== operation.id) return { ...this.writeIfChanged(), startOperation: start, poll: true };
    const effects = refusal.stall ? this.stall(refusal.reason, refusal.message) : this.waiting(refusal.reason, refusal.message);
    return { ...effects, startOperation: start, requeueAfterMs: refusal.retryAfterMs };
  }

  /**
   * The events the sidecar observed outside any action, to offer to this step's decision. On first sight
   * (or a status of an older okt) the sidecar's current sequence becomes the baseline: older events are
   * not this resource's news. Where its news begins in another epoch is recorded at once, so that it
   * holds however long the events wait (a pause) and across operator restarts.
   */
  observedEvents(sidecar: SidecarView): string[] {
    if (sidecar.kind !== 'answered' || sidecar.operation !== undefined) return [];
    if (this.#stored.observedEpoch === undefined) {
      this.#observe(sidecar);
      return [];
    }
    if (sidecar.epoch !== this.#stored.observedEpoch) {
      this.status.observedEpoch = sidecar.epoch;
      this.status.observedSequence = sidecar.observedFrom ?? 0;
    }
    return sidecar.observedEvents;
  }

  /** Observed events are used up only by a decision they were offered to. */
  consumeObserved(sidecar: SidecarView): void {
    if (sidecar.kind !== 'answered' || sidecar.operation !== undefined || sidecar.observedSequence === undefined) return;
    this.#observe(sidecar);
  }

  #observe(sidecar: Extract<SidecarView, { kind: 'answered' }>): void {
    this.status.observedEpoch = sidecar.epoch;
    if (sidecar.observedSequence !== undefined) this.status.observedSequence = sidecar.observedSequence;
  }

  pendingEvents(): number {
    return this.#undelivered.length + this.#added.length;
  }

  /** A transition to `next` (backpressure and a missing sidecar may make it wait). */
  move(next: string, events: string[], input: StepInput, cause?: TransitionCause): StepEffects {
    const waiting = this.cannotCommit(input, input.model.graph.node(next).hasAction ? next : undefined, `enter ${next}`);
    if (waiting !== undefined) return waiting;
    this.consumeObserved(input.sidecar);
    return this.transition(next, events, input, cause);
  }

  /**
   * Rewrites the status of an earlier revision in this one's words, in the same write as whatever this
   * step does next: the revision, a renamed state, the running action's renamed node (its operation id
   * kept), the path and the node conditions. A removed node's resource keeps its state here: the
   * transition that follows takes it to the node its CRs go to.
   */
  migrate(migration: Extract<MigrationPrediction, { kind: 'migrates' }>): void {
    const s = this.status;
    const graph = this.#graph;
    const from = { revision: this.#stored.graphRevision, state: s.state };
    if (migration.state.kind !== 'moved') s.state = migration.state.node;
    s.graphRevision = graph.revision;
    const renamed = (name: string): string => {
      const fate = fateOf(graph, name);
      return fate.kind === 'kept' || fate.kind === 'renamed' ? fate.node : name;
    };
    s.path = s.path.map(renamed);
    s.pathSummary = renderPath(s.path);
    if (s.lastTransition !== undefined) s.lastTransition = { ...s.lastTransition, from: renamed(s.lastTransition.from), to: renamed(s.lastTransition.to) };
    if (s.operation !== undefined) {
      s.operation = { ...s.operation, node: renamed(s.operation.node) };
      if (s.operation.desiredAtStart !== undefined) s.operation.desiredAtStart = renamed(s.operation.desiredAtStart);
    }
    // The condition of the node it is on follows the rename; those of nodes it left go.
    const kept = nodeConditionType(from.state);
    const as = nodeConditionType(migration.state.kind === 'moved' ? from.state : s.state);
    s.conditions = s.conditions.flatMap((c) => (!NODE_CONDITION_REASONS.has(c.reason) ? [c] : c.type === kept ? [{ ...c, type: as }] : []));
    const to = migration.state.node;
    const operation = migration.operation === undefined || s.operation === undefined ? {} : { operation: { ...operationSummary(s.operation), formerNode: migration.operation.from } };
    this.#emit(LIFECYCLE_EVENT_TYPES.migrated, to, {
      ...this.#data(from.state, to, []),
      reason: REASONS.migrated,
      message: `migrated from revision ${from.revision ?? '(unrecorded)'} at ${from.state} to revision ${graph.revision} at ${to}${migration.state.kind === 'moved' ? ` (${from.state} was removed; its CRs go to ${to})` : ''}`,
      migration: { fromRevision: from.revision ?? null, toRevision: graph.revision, fromState: from.state, toState: to, kind: migration.state.kind },
      ...operation,
    });
  }

  /** Runs the action of the current node again (it failed, or its parameters changed), under the next operation id. */
  retry(operation: OperationStatus, input: StepInput, why: string, how: { reason: string; paramsChanged?: boolean } = { reason: REASONS.actionRetrying }): StepEffects {
    const node = operation.node;
    const waiting = this.cannotCommit(input, node, `run the action of ${node} again`);
    if (waiting !== undefined) return waiting;
    const s = this.status;
    const retries = (operation.retries ?? 0) + 1;
    const next: OperationStatus = { id: operationId(input.resource.uid, s.transition, retries), node, phase: 'Pending', startedAt: this.#now, retries, desiredAtStart: this.desired };
    const epoch = (input.sidecar as Extract<SidecarView, { kind: 'answered' }>).epoch;
    next.epoch = epoch;
    if (input.resource.spec.retry !== undefined) next.retry = input.resource.spec.retry;
    const params = this.#paramsOf(node, input);
    if (params !== undefined) next.params = params;
    const since = how.paramsChanged ? retries : operation.paramsSince;
    if (since !== undefined) next.paramsSince = since;
    s.operation = next;
    this.#emit(LIFECYCLE_EVENT_TYPES.actionStarted, node, { ...this.#data(node, node, []), operation: operationSummary(next), reason: how.reason, message: why });
    if (node === this.desired) this.#readiness(false, REASONS.actionRunning, `${node}: its action runs again (${why})`);
    else this.#readiness(false, REASONS.progressing, `on the way from ${node} to ${this.desired}; its action runs again (${why})`);
    return { status: this.#pruned(), startOperation: startOf(next, epoch), poll: true };
  }

  /**
   * What keeps a commit from being written now: a full outbox, or, when it starts the action of
   * `actionOf`, parameters that do not fit that node or no sidecar to start it on. `goal` says what the
   * commit would do, for the message.
   */
  cannotCommit(input: StepInput, actionOf: string | undefined, goal: string): StepEffects | undefined {
    if (this.pendingEvents() + MAX_EVENTS_PER_TRANSITION > input.outboxLimit) {
      const message = `${this.pendingEvents()} events wait in the outbox for the sink, which holds ${input.outboxLimit}: transitions wait too${input.deliveryProblem ? ` (${input.deliveryProblem})` : ''}`;
      return { ...this.waiting(REASONS.backpressure, message), poll: true, awaitingDelivery: true };
    }
    if (actionOf === undefined) return undefined;
    const params = nodeParams(input.model.graph, actionOf, input.resource.spec.params);
    if (params !== undefined && !params.ok) {
      const problems = params.problems.map((p) => `${p.field}: ${p.reason}`).join('; ');
      const release = abandonHint(input.resource, ', or ');
      return this.stall(REASONS.invalidParams, `spec.params do not fit the parameters of ${actionOf} (${problems}); set spec.params to values they accept to ${goal}${release}`);
    }
    if (input.sidecar.kind === 'unavailable') {
      // An action is committed with the epoch of the sidecar that will run it: no commit without one.
      return { ...this.waiting(REASONS.sidecarUnavailable, `the next node's action needs the sidecar: ${input.sidecar.message}`), poll: true };
    }
    return undefined;
  }

  transition(next: string, events: string[], input: StepInput, cause?: TransitionCause): StepEffects {
    const { model } = input;
    const s = this.status;
    const from = s.state;
    const desired = this.desired;
    const hasAction = model.graph.node(next).hasAction;
    // A deadline's timer turns at its own pace, and a migration (no events) is none of the CR's doing.
    const turn = cause === undefined && events.length > 0 ? cycleTurn(s, next, hasAction, this.#generation, this.#now) : undefined;
    if (turn !== undefined) s.cycleBrake = turn.brake;
    s.transition += 1;
    s.state = next;
    s.path = appendToPath(s.path, next, STATUS_PATH_LIMIT);
    s.pathSummary = renderPath(s.path);
    s.lastTransition = { from, to: next, events: [...events], time: this.#now, generation: this.#generation };
    // Node conditions of nodes left earlier go: status does not grow with the graph.
    s.conditions = s.conditions.filter((c) => !NODE_CONDITION_REASONS.has(c.reason) || c.type === nodeConditionType(from) || c.type === nodeConditionType(next));
    this.#set(nodeConditionType(from), 'False', REASONS.left, `left for ${next} at transition ${s.transition}`);
    const why = events.length > 0 ? ` on ${events.join(', ')}` : ' by migration';
    this.#set(nodeConditionType(next), 'True', REASONS.entered, `entered from ${from} at transition ${s.transition}${why}`);
    const data = this.#data(from, next, events);
    this.#emit(LIFECYCLE_EVENT_TYPES.transition, next, cause === undefined ? data : { ...data, ...cause });
    if (hasAction) {
      const epoch = (input.sidecar as Extract<SidecarView, { kind: 'answered' }>).epoch;
      s.operation = { id: operationId(input.resource.uid, s.transition), node: next, phase: 'Pending', startedAt: this.#now, epoch, desiredAtStart: desired };
      if (input.resource.spec.retry !== undefined) s.operation.retry = input.resource.spec.retry;
      const params = this.#paramsOf(next, input);
      if (params !== undefined) s.operation.params = params;
      this.#emit(LIFECYCLE_EVENT_TYPES.actionStarted, next, { ...data, operation: operationSummary(s.operation) });
      if (turn !== undefined && turn.holdMs > 0) {
        s.operation.notBefore = turn.brake.at;
        const message = brakeMessage(turn, next);
        this.#set(CYCLE_BRAKE_CONDITION, 'True', REASONS.cycleBraked, message);
        if (turn.engages) this.#emit(LIFECYCLE_EVENT_TYPES.braked, next, { ...data, reason: REASONS.cycleBraked, message, cycle: [...turn.cycle], turns: turn.brake.turns });
      }
    } else {
      delete s.operation;
    }
    if (next === desired && !hasAction) {
      this.#readiness(true, REASONS.reached, `${next} reached`);
      this.#emit(LIFECYCLE_EVENT_TYPES.converged, next, { ...data, reason: REASONS.reached });
      // A leaf ends the resource's life: look again to do that once its events are out.
      return model.graph.node(next).isLeaf ? { status: this.#pruned(), again: true } : { status: this.#pruned() };
    }
    const reason = next === desired ? REASONS.actionRunning : REASONS.progressing;
    this.#readiness(false, reason, next === desired ? `${next} entered; its action runs` : `on the way from ${next} to ${desired}`);
    if (s.operation === undefined) return { status: this.#pruned(), again: true };
    const held = heldForMs(s.operation, this.#now);
    if (held > 0) return { status: this.#pruned(), requeueAfterMs: held };
    return { status: this.#pruned(), startOperation: startOf(s.operation, s.operation.epoch ?? ''), poll: true };
  }

  /** At the desired node with its action succeeded (or none): Ready. `last`: a leaf, or the end of the deletion path. */
  converge(resource: ResourceView, last: boolean): StepEffects {
    const desired = this.desired;
    const wasReady = isConditionTrue(this.#stored.conditions, READY);
    const detail = this.status.operation ? '; its action succeeded' : '';
    this.#readiness(true, REASONS.reached, `${desired} reached${detail}`);
    if (!wasReady) this.#emit(LIFECYCLE_EVENT_TYPES.converged, desired, { ...this.#data(desired, desired, []), reason: REASONS.reached });
    const effects = this.writeIfChanged();
    const ending = resource.deleting || resource.spec.onLeaf !== 'Keep';
    if (!last || !ending) return effects;
    // A leaf ends the resource's life (OKT's "on End: delete it"), once its last events are out.
    return this.#finishOnceDelivered(effects, resource.deleting ? 'removeFinalizer' : 'delete');
  }

  /** Deletion is abandoned: a stalled event says what was left undone, then the finalizer goes once it is delivered (or a while after, when the sink cannot take it either). */
  abandon(why: string, graceMs: number): StepEffects {
    const current = this.status.state;
    const running = this.status.operation !== undefined && !isTerminal(this.status.operation.phase) ? ` (operation ${this.status.operation.id} may still run)` : '';
    const effects = this.stall(REASONS.deletionAbandoned, `deletion abandoned at ${current}, ${why}: the application was not driven to ${this.desired}${running}`);
    const deadline = Date.parse(this.#resource.deletionTimestamp ?? this.#now) + graceMs + ABANDON_DELIVERY_WAIT_MS;
    if (Date.parse(this.#now) >= deadline && effects.status === undefined) return { finish: 'removeFinalizer' };
    const finishing = this.#finishOnceDelivered(effects, 'removeFinalizer');
    return finishing.finish === undefined ? { ...finishing, requeueAfterMs: Math.max(deadline - Date.parse(this.#now), 1_000) } : finishing;
  }

  /** The end of the resource's life once its events are out: at once when they are, promptly after this write when they were. */
  #finishOnceDelivered(effects: StepEffects, finish: NonNullable<StepEffects['finish']>): StepEffects {
    if (this.pendingEvents() > 0) return { ...effects, poll: true, awaitingDelivery: true };
    if (effects.status === undefined) return { finish };
    return { ...effects, again: true };
  }

  stall(reason: string, message: string): StepEffects {
    const stalled = findCondition(this.#stored.conditions, STALLED);
    const already = stalled?.status === 'True' && stalled.reason === reason;
    this.#set(READY, 'False', reason, message);
    this.#set(RECONCILING, 'False', reason, message);
    this.#set(STALLED, 'True', reason, message);
    if (!already) {
      const state = this.status.state;
      this.#emit(LIFECYCLE_EVENT_TYPES.stalled, state, { ...this.#data(state, state, []), reason, message });
    }
    return this.writeIfChanged();
  }

  /** A reason to wait that is no failure: not Ready, still Reconciling, not Stalled. */
  waiting(reason: string, message: string): StepEffects {
    this.#readiness(false, reason, message);
    return this.writeIfChanged();
  }

  /** A write only when a reader would see a change (the observed generation included). */
  writeIfChanged(): StepEffects {
    const formatted = inStatusFormat(this.status, this.#format);
    if (!this.#firstSight && isDeepStrictEqual(formatted, this.#stored)) return {};
    return { status: this.#pruned(formatted) };
  }

  /** Delivered events leave the status on a write that is due anyway (no write of their own); this write's are kept short. */
  #pruned(formatted = inStatusFormat(this.status, this.#format)): LifecycleStatus {
    const { outbox: _outbox, emitted: _emitted, ...rest } = formatted;
    // A status of an okt without revisions, on this revision's nodes, gains the revision with its next write.
    const written = rest.graphRevision === undefined && this.onRevision ? { ...rest, graphRevision: this.#graph.revision } : rest;
    return withEvents(written, this.#undelivered, this.#added, this.#graph.name, this.desired);
  }

  /** The checked parameters of `node`'s action (cannotCommit refused a commit with wrong ones). */
  #paramsOf(node: string, input: StepInput): Record<string, unknown> | undefined {
    const params = nodeParams(input.model.graph, node, input.resource.spec.params);
    return params?.ok ? params.params : undefined;
  }

  #readiness(ready: boolean, reason: string, message: string): void {
    this.#set(READY, ready ? 'True' : 'False', reason, message);
    this.#set(RECONCILING, ready ? 'False' : 'True', reason, message);
    this.#set(STALLED, 'False', reason, message);
  }

  #set(type: string, status: ConditionUpdate['status'], reason: string, message: string): void {
    this.status.conditions = setCondition(this.status.conditions, { type, status, reason, message, observedGeneration: this.#generation }, this.#now);
  }

  #data(from: string, to: string, events: readonly string[]): LifecycleEventData {
    return {
      graph: this.#graph.name,
      // The revision the resource is on when the event happens (a migration in this step changes it).
      graphRevision: this.status.graphRevision ?? this.#graph.revision,
      transition: this.status.transition,
      from,
      to,
      desired: this.desired,
      events: [...events],
      path: this.status.pathSummary ?? renderPath(this.status.path),
      generation: this.#generation,
    };
  }

  #emit(type: LifecycleEventType, subject: string, data: LifecycleEventData): void {
    const s = this.status;
    s.sequence += 1;
    this.#added.push({ sequence: s.sequence, type, time: this.#now, subject, data: { ...data } });
  }
}

/** How the reconciler starts an operation: with the parameters it was committed with. */
function startOf(operation: OperationStatus, epoch: string): NonNullable<StepEffects['startOperation']> {
  const start: NonNullable<StepEffects['startOperation']> = { id: operation.id, node: operation.node, epoch };
  if (operation.params !== undefined) start.params = operation.params;
  return start;
}
