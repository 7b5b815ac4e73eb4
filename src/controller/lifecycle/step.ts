// The decision: one reconcile of one resource as a pure function, from what the API server and the
// sidecar say to the effects the reconciler carries out. It reads as two sequences of named guards,
// each guard either deciding the step or passing it on: STEP_GUARDS for every step, AFTER_FAILURE for
// a node whose action failed. The parts it builds on: cleanup.ts (deletion), deadline.ts, model.ts
// (revisions and migration), status/ (what is written).
import { isDeepStrictEqual } from 'node:util';
import { LIFECYCLE_EVENT_TYPES } from '../../events/types.ts';
import { makesObjectsAt, nodeParams, OBJECTS_READY_CONDITION } from '../../graph/index.ts';
import { findCondition } from '../../kube/conditions.ts';
import { decide } from '../../machine/index.ts';
import { predictMigration, resolveDesired, type MigrationPrediction } from '../../plan/index.ts';
import type { LifecycleStatus, OperationStatus } from '../../kube/lifecycle-resource.ts';
import { DEFAULT_STATUS_FORMAT } from '../../kube/status-format.ts';
import { isTerminal } from '../../sidecar-client/index.ts';
import { READY, REASONS, RECONCILING, STALLED } from './reasons.ts';
import { ABANDON_ANNOTATION, abandon, abandonHint, abandonment, cancelCause, DEFAULT_TEARDOWN_GRACE_MS, deletionEnd, deletionEvent } from './cleanup.ts';
import { cancelAtDeadline, lookAgainAtDeadline, passedDeadline, stallAtDeadline, timeoutEdge, deadlineMessage } from './deadline.ts';
import { landing, objectsGraph, recordedPosition, servedMigration } from './model.ts';
import type { StepEffects, StepInput } from './step-types.ts';
import { cannotCommit, converge, move, retry, transition } from './status/commit.ts';
import { initialStatus, unreadable } from './status/conditions.ts';
import { StatusDraft } from './status/draft.ts';
import { migrate } from './status/migration.ts';
import { adoptAttempt, cancelledForChangeOfMind, finishOperation, isChangeOfMind, recordFailureDesired, requestCancel, running, startCommitted } from './status/operation.ts';

export { READY, REASONS, RECONCILING, STALLED };
export { createLifecycleModel } from './model.ts';
export type { InvalidStatus, LifecycleModel, ResourceView, SeenOperation, SidecarRefusal, SidecarView, StartRefusal, StepEffects, StepInput } from './step-types.ts';

/** The longest wait between two runs of a retried action. */
export const MAX_RETRY_BACKOFF_MS = 300_000;

const PAUSED_MESSAGE = 'spec.paused is true: no transition is taken';

/** A paused resource being deleted: the pause holds the deletion's transitions too, until it is lifted or the resource abandoned. */
function pausedDeletionMessage(end: string): string {
  return `${PAUSED_MESSAGE}, the deletion's included; set spec.paused to false to drive the application down to ${end}, or annotate ${ABANDON_ANNOTATION}=true to release the resource without it`;
}

/**
 * One reconcile of one resource, as a pure function: from what the API server and the sidecar say,
 * the effects to carry out. At most one transition. Everything it needs is in the input, so a
 * restart at any line recomputes the same effects.
 */
export function step(given: StepInput): StepEffects {
  return lookAgainAtDeadline(given, startOnceObjectsReady(given, stepUntimed(given)));
}

/**
 * An action starts only once its node's objects are ready: a start committed by a transition or a
 * retry, into a node whose objects were not judged ready in this look, is withheld, and the next look
 * (at once: the objects are applied after this step's write) starts it through operationInFlight,
 * which waits for them or takes a failed one as the action's failure.
 */
function startOnceObjectsReady(input: StepInput, effects: StepEffects): StepEffects {
  const start = effects.startOperation;
  if (start === undefined) return effects;
  // The objects of the revision the start is committed on: an earlier one the Manual policy keeps the resource on makes its own.
  const written = effects.status !== undefined && 'state' in effects.status ? effects.status : undefined;
  const stored = input.resource.status !== undefined && 'state' in input.resource.status ? input.resource.status : undefined;
  const graph = objectsGraph(input.model, { graphRevision: (written ?? stored)?.graphRevision, state: start.node });
  if (graph === undefined || !makesObjectsAt(graph, start.node)) return effects;
  const { objects } = input;
  if (objects?.node === start.node && objects.readiness.kind === 'ready') return effects;
  // Nothing runs yet: no long-poll of the operation either.
  const { startOperation: _withheld, poll: _nothingRuns, ...rest } = effects;
  return { ...rest, again: true };
}

/**
 * The operation committed at the current node waits for its objects (undefined: they are ready); a
 * failed one ends it Failed. Condition ObjectsReady records the verdict, and its change to ready or
 * failed is an event (objects.ready, objects.failed) of the same write. No look on a clock meanwhile:
 * a change of one of the objects (the owned objects' caches) or of the CR looks again, and the node's
 * deadline has its own.
 */
function awaitObjects(input: StepInput, work: StatusDraft, operation: OperationStatus): StepEffects | 'failed' | undefined {
  if (!makesObjectsAt(input.model.graph, operation.node)) return undefined;
  const { objects } = input;
  if (objects?.node !== operation.node) return { ...work.waiting(REASONS.objectsNotReady, `the action of ${operation.node} waits for its objects (not read yet)`) };
  const { readiness } = objects;
  if (readiness.kind === 'ready') {
    const said = objectsReady(work, 'True', REASONS.objectsReady, `every object of ${operation.node} is ready: its action starts (operation ${operation.id})`);
    if (said) work.emit(LIFECYCLE_EVENT_TYPES.objectsReady, operation.node, { ...work.data(operation.node, operation.node, []), objects: (objects.objects ?? []).map((o) => ({ ...o })) });
    return undefined;
  }
  const message = `${readiness.object}: ${readiness.message}`;
  if (readiness.kind === 'failed') {
    if (objectsReady(work, 'False', REASONS.objectFailed, message)) {
      work.emit(LIFECYCLE_EVENT_TYPES.objectsFailed, operation.node, {
        ...work.data(operation.node, operation.node, []),
        ...(readiness.ref === undefined ? {} : { objects: [{ ...readiness.ref }] }),
        reason: REASONS.objectFailed,
        message,
      });
    }
    finishOperation(work, operation, { phase: 'Failed', events: [], reason: REASONS.objectFailed, message: `never started: ${message}`, finishedAt: input.now });
    return 'failed';
  }
  objectsReady(work, 'False', REASONS.objectsNotReady, message);
  return { ...work.waiting(REASONS.objectsNotReady, `the action of ${operation.node} waits for its objects: ${message}`) };
}

/** Sets condition ObjectsReady; true when it says something it did not (its news for an event). */
function objectsReady(work: StatusDraft, state: 'True' | 'False', reason: string, message: string): boolean {
  const before = findCondition(work.status.conditions, OBJECTS_READY_CONDITION);
  work.set(OBJECTS_READY_CONDITION, state, reason, message);
  return before?.status !== state || before.reason !== reason || before.message !== message;
}

/** What the guards of one step share: the input (on the revision the resource is driven on), the status being written, and the events collected. */
interface Turn {
  readonly input: StepInput;
  readonly work: StatusDraft;
  /** The migration prediction where the resource stood (updated once the action that held it back ended). */
  migration: MigrationPrediction;
  /** The events to offer to the decision: the ended action's, then those the sidecar observed. */
  collected: string[];
}

/** A guard of the step: the effects, when it decides the step; undefined to pass it on. */
type Guard = (turn: Turn) => StepEffects | undefined;

/**
 * The guards of every step, in the order the course of a resource asks them: first what keeps it
 * from moving at all, then the action that runs, then where it stands; the decision (decideAndMove)
 * takes every step they pass on.
 */
const STEP_GUARDS: readonly Guard[] = [
  stranded,
  abandoned,
  sidecarRefused,
  migratedInto,
  operationInFlight,
  migrationReleased,
  collectObserved,
  endOfDeletion,
  paused,
  actionFailed,
];

/** step() but for the requeue at the current node's deadline. */
function stepUntimed(given: StepInput): StepEffects {
  const { resource, now } = given;
  if (resource.status !== undefined && 'invalid' in resource.status) {
    return unreadable(resource.status.conditions ?? [], REASONS.invalidStatus, resource.status.invalid, resource.generation, now, given.statusFormat);
  }
  const turn = startTurn(given, resource.status);
  for (const guard of STEP_GUARDS) {
    const effects = guard(turn);
    if (effects !== undefined) return effects;
  }
  return decideAndMove(turn);
}

/** The status as read (or the entry node's, on first sight), on the revision the resource is driven on. */
function startTurn(given: StepInput, status: LifecycleStatus | undefined): Turn {
  const { resource, now } = given;
  const stored = status ?? initialStatus(given.model.graph, resource.generation, now);
  // The revision the resource is driven on: the operator's, or (Manual policy) the earlier one it stays on.
  const { model, migration } = servedMigration(given.model, recordedPosition(given.model.graph, stored, resource.spec, howDriven(given)));
  const input: StepInput = { ...given, model };
  const work = new StatusDraft(stored, status === undefined, resource, now, model.graph, input.delivered, input.statusFormat ?? DEFAULT_STATUS_FORMAT, input.storedEncoding ?? 'plain');
  work.desired = stored.state;
  if (migration.kind !== 'stranded') {
    work.onRevision = migration.kind === 'current';
    const desired = resolveDesired(model.graph, resource.spec.desiredState);
    work.desired = resource.deleting ? deletionEnd(model.graph, landing(model.graph, stored.state, migration)) : 'node' in desired ? desired.node : resource.spec.desiredState;
    recordFailureDesired(work);
  }
  return { input, work, migration, collected: [] };
}

function howDriven(input: StepInput): { deleting: boolean; migrateRequested: boolean } {
  return { deleting: input.resource.deleting, migrateRequested: input.resource.migrateRequested === true };
}

/** Stranded on a revision the operator no longer serves: only okt.dev/abandon releases a deleted one. */
function stranded(turn: Turn): StepEffects | undefined {
  const { input, work, migration } = turn;
  if (migration.kind !== 'stranded') return undefined;
  const released = input.resource.abandonRequested ? abandoned(turn) : undefined;
  return released ?? work.stall(REASONS.unknown, `${migration.reason}${abandonHint(input.resource, '; or ')}`);
}

/** A deletion abandoned (okt.dev/abandon, or a namespace teardown without a sidecar): see cleanup.ts. */
function abandoned({ input, work }: Turn): StepEffects | undefined {
  const why = abandonment(input);
  return why === undefined ? undefined : abandon(work, why, input.teardownGraceMs ?? DEFAULT_TEARDOWN_GRACE_MS);
}

/** The operator refused the CR's sidecar: nothing was asked of it. */
function sidecarRefused({ input, work }: Turn): StepEffects | undefined {
  const { resource, sidecar } = input;
  if (sidecar.kind !== 'refused') return undefined;
  // At the end of its deletion path nothing is asked of the sidecar: the resource is released.
  if (resource.deleting && work.stored.state === work.desired) return converge(work, true);
  // Paused with no action to follow, nothing would be asked of the sidecar anyway: the CR says it is
  // paused (the refusal is said once it is resumed).
  const operation = work.stored.operation;
  if (resource.spec.paused === true && (operation === undefined || isTerminal(operation.phase))) return pausedWait(input, work);
  // Nothing moves without the sidecar the CR names: a person must fix spec.sidecar (or the Secret).
  const effects = work.stall(sidecar.reason, `${sidecar.message}${abandonHint(resource, '; or ')}`);
  return sidecar.retryAfterMs === undefined ? effects : { ...effects, requeueAfterMs: sidecar.retryAfterMs };
}

/** The resource's node was removed and mapped to another: it enters that one now; a rename is rewritten in this write. */
function migratedInto(turn: Turn): StepEffects | undefined {
  const { migration } = turn;
  if (migration.kind !== 'migrates') return undefined;
  if (migration.state.kind === 'moved') return migrateInto(turn.input, turn.work, migration);
  migrate(turn.work, migration);
  return undefined;
}

/**
 * The current node's operation while it has not ended: wait and change nothing but what the sidecar
 * says of it; its end is recorded and its events collected. Taken as the migration left it: a renamed
 * node's operation goes on under the node's new name.
 */
function operationInFlight(turn: Turn): StepEffects | undefined {
  const { input, work } = turn;
  const { sidecar, now } = input;
  const operation = work.status.operation;
  if (operation === undefined || isTerminal(operation.phase)) return undefined;
  if (sidecar.kind !== 'answered') {
    return { ...work.waiting(REASONS.sidecarUnavailable, `sidecar unavailable while the action of ${operation.node} runs: ${sidecar.message}`), poll: true };
  }
  const cancel = cancelCause(input, work.desired, operation);
  // Recorded before the cancellation is sent: its end then reads as a change of mind, not a failure.
  const current = cancel === 'desiredChange' ? requestCancel(work, operation) : operation;
  const seen = sidecar.operation ?? 'unknown';
  const overdue = passedDeadline(input, work.status);
  if (seen === 'unknown') {
    // Committed but never started (a crash between the write and the start): start it now, same id,
    // same sidecar, unless it is no longer wanted.
    const never = neverStarted(cancel, overdue);
    if (never === undefined) {
      const waits = awaitObjects(input, work, current);
      if (waits === 'failed') return undefined;
      return waits ?? startCommitted(work, current, sidecar.epoch, input.startRefused);
    }
    finishOperation(work, current, { phase: 'Cancelled', events: [], reason: 'Cancelled', message: never, finishedAt: now });
    return undefined;
  }
  if (seen === 'lost') {
    finishOperation(work, current, {
      phase: 'Failed',
      events: [],
      reason: 'Interrupted',
      message: `the sidecar that held it (epoch ${operation.epoch ?? 'unrecorded'}) is gone and sidecar epoch ${sidecar.epoch} does not know it; its action is not declared idempotent, so it was not run again and may or may not have run`,
      finishedAt: now,
    });
    return undefined;
  }
  adoptAttempt(work, current, sidecar.epoch, seen);
  if (!isTerminal(seen.phase)) return overdue !== undefined ? cancelAtDeadline(work, current, overdue) : running(work, current, cancel);
  finishOperation(work, current, seen);
  turn.collected.push(...seen.events);
  return undefined;
}

/** Why an operation the sidecar never started is no longer wanted (its end's message), if it is not. */
function neverStarted(cancel: ReturnType<typeof cancelCause>, overdue: ReturnType<typeof passedDeadline>): string | undefined {
  if (cancel === 'deletion') return 'never started: the resource is being deleted';
  if (cancel === 'desiredChange') return 'never started';
  return overdue === undefined ? undefined : `never started: ${deadlineMessage(overdue)}`;
}

/** The action that held a migration back is over (its end is recorded): the resource moves now. */
function migrationReleased(turn: Turn): StepEffects | undefined {
  if (turn.migration.kind !== 'waits') return undefined;
  const { input, work } = turn;
  const { graph, planner } = input.model;
  const now = predictMigration(graph, planner, { ...recordedPosition(graph, work.status, input.resource.spec, howDriven(input)), runningAction: undefined });
  turn.migration = now;
  return migratedInto(turn);
}

/** The events the sidecar observed outside any action join the collected ones (never deciding the step). */
function collectObserved(turn: Turn): undefined {
  turn.collected.push(...turn.work.observedEvents(turn.input.sidecar));
  return undefined;
}

/**
 * At the end of its deletion path (a leaf, or its entry node without onDelete) the resource is
 * released, paused or not: that takes no transition and runs nothing, and no event may move it on.
 */
function endOfDeletion({ input, work }: Turn): StepEffects | undefined {
  return input.resource.deleting && work.status.state === work.desired ? converge(work, true) : undefined;
}

/** Paused: no transition is taken (a running action was waited for above). */
function paused({ input, work }: Turn): StepEffects | undefined {
  return input.resource.spec.paused === true ? pausedWait(input, work) : undefined;
}

function pausedWait(input: StepInput, work: StatusDraft): StepEffects {
  return work.waiting(REASONS.paused, input.resource.deleting ? pausedDeletionMessage(work.desired) : PAUSED_MESSAGE);
}

/** The current node's action ended without success (a deletion's cancellation aside): AFTER_FAILURE decides. */
function actionFailed(turn: Turn): StepEffects | undefined {
  const operation = turn.work.status.operation;
  if (operation === undefined || operation.phase === 'Succeeded' || (turn.input.resource.deleting && operation.phase === 'Cancelled')) return undefined;
  for (const guard of AFTER_FAILURE) {
    const effects = guard(turn, operation);
    if (effects !== undefined) return effects;
  }
  return stallAfterFailure(turn, operation);
}

/** The regular course: the collected events plus the planner's (or deletion's) event, one decision, at most one move. */
function decideAndMove({ input, work, collected }: Turn): StepEffects {
  const { model, resource } = input;
  const { graph } = model;
  const current = work.status.state;
  const desired = work.desired;
  const overdue = passedDeadline(input, work.status);
  const timedOut = timeoutEdge(input, work, overdue);
  if (timedOut !== undefined) return timedOut;
  const plan = resource.deleting ? undefined : model.planner.next(current, desired);
  const course = resource.deleting ? deletionEvent(graph, current) : plan?.kind === 'move' ? plan.event : undefined;
  const events = course === undefined ? [...collected] : [...collected, course];
  const next = decide(graph, current, events);
  if (next !== current) return move(work, next, events, input);
  // The events were offered to a decision: they are used up, whatever it decided.
  work.consumeObserved(input.sidecar);
  if (overdue !== undefined) return stallAtDeadline(work, overdue);
  if (plan?.kind === 'unreachable') return work.stall(REASONS.unreachable, `${desired} cannot be reached from ${current} in graph "${graph.name}"`);
  // A collected event naming the node's own self-loop child outranked the planned one: that decision
  // stays, the events are used up, and the next one moves on.
  if (current !== desired) return { ...work.waiting(REASONS.progressing, `on the way from ${current} to ${desired}`), again: true };
  const operation = work.status.operation;
  const rerun = operation === undefined ? undefined : rerunForParams(input, work, operation);
  return rerun ?? converge(work, graph.node(desired).isLeaf);
}

/** A guard after a failed (or Cancelled) action: the effects, when it decides the step. */
type FailureGuard = (turn: Turn, operation: OperationStatus) => StepEffects | undefined;

/**
 * The current node's action failed (or ended Cancelled) without moving the resource, in this order:
 * a timeout edge and other events still win; then a change of mind moves on (or runs the node again);
 * a new spec.retry runs it again, a new desired node moves on from it; past the deadline it stalls; a
 * change of parameters or a retry policy runs it again; otherwise it stalls (stallAfterFailure),
 * saying how to go on.
 */
const AFTER_FAILURE: readonly FailureGuard[] = [
  ({ input, work }) => timeoutEdge(input, work, passedDeadline(input, work.status)),
  eventsMoveOn,
  afterChangeOfMind,
  retryAsked,
  desiredMovedOn,
  ({ work, input }) => {
    const overdue = passedDeadline(input, work.status);
    return overdue === undefined ? undefined : stallAtDeadline(work, overdue);
  },
  ({ input, work }, operation) => rerunForParams(input, work, operation),
  retryPolicy,
];

/** Triggers and other events collected still move the resource; offered to a decision, they are used up. */
function eventsMoveOn({ input, work, collected }: Turn): StepEffects | undefined {
  if (collected.length === 0) return undefined;
  const current = work.status.state;
  const next = decide(input.model.graph, current, collected);
  if (next !== current) return move(work, next, collected, input);
  work.consumeObserved(input.sidecar);
  return undefined;
}

/**
 * No failure: the user changed their mind. Still changed, the resource moves on; taken back before
 * the cancellation landed, the node is wanted after all, so its action runs again.
 */
function afterChangeOfMind(turn: Turn, operation: OperationStatus): StepEffects | undefined {
  const { input, work } = turn;
  if (!cancelledForChangeOfMind(operation, input.resource.deleting)) return undefined;
  if (isChangeOfMind(operation, work.desired)) return decideAndMove(turn);
  return retry(work, operation, input, `its cancellation landed after spec.desiredState came back to ${work.desired}`);
}

/** A new spec.retry runs the action again; past the deadline a new run would be cancelled at once, so it waits for another node. */
function retryAsked({ input, work }: Turn, operation: OperationStatus): StepEffects | undefined {
  const token = input.resource.spec.retry;
  if (passedDeadline(input, work.status) !== undefined || token === undefined || token === operation.retry) return undefined;
  return retry(work, operation, input, `spec.retry changed to "${token}"`);
}

/** A desired node other than the one wanted when the action failed: the resource moves on from here. */
function desiredMovedOn(turn: Turn, operation: OperationStatus): StepEffects | undefined {
  const { work } = turn;
  return work.desired !== operation.desired && work.desired !== work.status.state ? decideAndMove(turn) : undefined;
}

/** Runs under the current parameters: a run for changed parameters starts the count again. */
function runsOf(operation: OperationStatus): number {
  return (operation.retries ?? 0) - (operation.paramsSince ?? 0) + 1;
}

/** The node's retry policy runs a failed (not interrupted) action again, after its backoff. */
function retryPolicy({ input, work }: Turn, operation: OperationStatus): StepEffects | undefined {
  const policy = input.model.graph.node(work.status.state).retry;
  const runs = runsOf(operation);
  if (operation.reason === 'Interrupted' || policy === undefined || runs >= policy.attempts) return undefined;
  const backoff = Math.min(policy.backoffMs * 2 ** (runs - 1), MAX_RETRY_BACKOFF_MS);
  const due = Date.parse(operation.finishedAt ?? input.now) + backoff;
  const wait = due - Date.parse(input.now);
  if (wait <= 0) return retry(work, operation, input, `retry policy: run ${runs + 1} of ${policy.attempts}`);
  const message = `the action of ${work.status.state} (operation ${operation.id}) failed: run ${runs} of ${policy.attempts}; the next run starts in ${Math.ceil(wait / 1000)} s${operation.message ? ` (${operation.message})` : ''}`;
  return { ...work.waiting(REASONS.actionRetrying, message), requeueAfterMs: wait };
}

/** Nothing runs the action again: the resource stalls, saying how to go on. */
function stallAfterFailure({ input, work }: Turn, operation: OperationStatus): StepEffects {
  const reason = operation.reason === 'Interrupted' ? REASONS.interrupted : REASONS.actionFailed;
  return work.stall(reason, failureMessage(operation, runsOf(operation), input.resource.deleting));
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
  return retry(work, operation, input, `spec.params changed${changed.length > 0 ? ` (${changed.join(', ')})` : ''}`, { reason: REASONS.paramsChanged, paramsChanged: true });
}

/** The names of the parameters whose values differ between two sets. */
function changedParams(before: Record<string, unknown>, after: Record<string, unknown>): string[] {
  return [...new Set([...Object.keys(before), ...Object.keys(after)])].filter((k) => !isDeepStrictEqual(before[k], after[k])).sort();
}

/**
 * The resource's node was removed and mapped to another: it enters that node by a transition (whose
 * action, if any, starts), in the same write as the migration. Paused, or with no sidecar for that
 * action, it waits on its old revision.
 */
function migrateInto(input: StepInput, work: StatusDraft, migration: Extract<MigrationPrediction, { kind: 'migrates' }>): StepEffects {
  if (input.resource.spec.paused === true) return work.waiting(REASONS.paused, `${PAUSED_MESSAGE}; its migration waits too`);
  const into = migration.state.node;
  const waiting = cannotCommit(work, input, input.model.graph.node(into).hasAction ? into : undefined, `enter ${into}`);
  if (waiting !== undefined) return waiting;
  migrate(work, migration);
  work.consumeObserved(input.sidecar);
  return transition(work, into, [], input);
}

function failureMessage(operation: OperationStatus, runs: number, deleting: boolean): string {
  const detail = operation.message ? `: ${operation.message}` : '';
  const tries = runs > 1 ? ` after ${runs} runs` : '';
  const ended = operation.reason === 'Interrupted' ? 'was interrupted' : `ended ${operation.phase}`;
  const moveOn = deleting ? `annotate ${ABANDON_ANNOTATION}=true to release the resource without it` : 'set spec.desiredState to another node to move on';
  return `the action of ${operation.node} (operation ${operation.id}) ${ended}${tries}${detail} and raised no event; set spec.retry to a new value to run it again, or ${moveOn}`;
}
