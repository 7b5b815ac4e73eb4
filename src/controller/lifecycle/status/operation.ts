// What a step writes of the operation the status holds: its id, its end as the sidecar reports it,
// the attempt and epoch of its run, a change of mind's request to cancel it, and how it is started.
import { isDeepStrictEqual } from 'node:util';
import type { OperationStatus } from '../../../kube/lifecycle-resource.ts';
import { operationSummary } from '../../../events/status-events.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../../events/types.ts';
import { isTerminal } from '../../../sidecar-client/index.ts';
import { REASONS } from '../reasons.ts';
import { heldForMs } from '../cycle-brake.ts';
import type { SeenOperation, StartRefusal, StepEffects } from '../step-types.ts';
import type { StatusDraft } from './draft.ts';

/**
 * The operation id of a transition's action: a retry after a crash derives the same id, so nothing starts
 * twice; the k-th re-run of a failed action (spec.retry, a retry policy) is `<uid>-<transition>.<k>`.
 */
export function operationId(uid: string, transition: number, retries = 0): string {
  return retries === 0 ? `${uid}-${transition}` : `${uid}-${transition}.${retries}`;
}

/** `desired` is neither the operation's node nor the node wanted when it started (on the way there, its action is no detour). */
export function isChangeOfMind(operation: OperationStatus, desired: string): boolean {
  // An operation started by an okt that did not record desiredAtStart: no telling a change of mind from the route.
  return operation.desiredAtStart !== undefined && desired !== operation.node && desired !== operation.desiredAtStart;
}

/** The operation ended Cancelled after a change of mind asked for it (a deletion's cancellation is no change of mind). */
export function cancelledForChangeOfMind(operation: OperationStatus, deleting: boolean): boolean {
  return !deleting && operation.phase === 'Cancelled' && operation.cancelRequestedFor !== undefined;
}

/** Records the end of `operation` as the sidecar reports it, and its event. */
export function finishOperation(work: StatusDraft, operation: OperationStatus, seen: SeenOperation): void {
  const finished: OperationStatus = { ...operation, phase: seen.phase, events: [...seen.events] };
  if (seen.message !== undefined) finished.message = seen.message;
  if (seen.reason !== undefined) finished.reason = seen.reason;
  if (seen.startedAt !== undefined) finished.startedAt = seen.startedAt;
  if (seen.finishedAt !== undefined) finished.finishedAt = seen.finishedAt;
  if (seen.phase !== 'Succeeded') finished.desired = work.desired;
  if (cancelledForChangeOfMind(finished, work.resource.deleting)) {
    finished.reason = REASONS.desiredStateChanged;
    finished.message = `cancelled: spec.desiredState moved to ${operation.cancelRequestedFor}${seen.message ? ` (${seen.message})` : ''}`;
  }
  work.status.operation = finished;
  const type = seen.phase === 'Succeeded' ? LIFECYCLE_EVENT_TYPES.actionSucceeded : LIFECYCLE_EVENT_TYPES.actionFailed;
  work.emit(type, operation.node, { ...work.data(operation.node, operation.node, seen.events), operation: operationSummary(finished) });
}

/**
 * What the sidecar says of the operation it holds: its epoch and attempt (it re-ran an idempotent
 * action a lost sidecar held) and, while it runs, its phase (a commit writes Pending).
 */
export function adoptAttempt(work: StatusDraft, operation: OperationStatus, epoch: string, seen: SeenOperation): void {
  const attempts = Math.max(seen.attempts ?? 1, operation.attempts ?? 1);
  const adopted: OperationStatus = { ...operation, epoch };
  if (attempts > 1) adopted.attempts = attempts;
  if (!isTerminal(seen.phase)) adopted.phase = seen.phase;
  if (!isDeepStrictEqual(adopted, operation)) work.status.operation = adopted;
}

/**
 * An okt before a1de124 recorded a failure without the node wanted then (another one moves the
 * resource on) and held the resource until its spec changed: seen at the generation it was written
 * at, it failed for the node wanted now (the deletion's end included), recorded so that today's rule
 * applies from here on. Written at an older generation, the node is unknown.
 */
export function recordFailureDesired(work: StatusDraft): void {
  const operation = work.status.operation;
  if (operation === undefined || operation.phase === 'Succeeded' || !isTerminal(operation.phase) || operation.desired !== undefined) return;
  if (work.stored.observedGeneration === work.generation) work.status.operation = { ...operation, desired: work.desired };
}

/** The operation runs: wait for it (cancelling it, when its node allows it for `cancel`), keeping the conditions true to it. */
export function running(work: StatusDraft, operation: OperationStatus, cancel: 'deletion' | 'desiredChange' | undefined): StepEffects {
  const node = operation.node;
  if (node === work.desired) work.readiness(false, REASONS.actionRunning, `${node} entered; its action runs`);
  else if (cancel === 'desiredChange') work.readiness(false, REASONS.progressing, `on the way from ${node} to ${work.desired}; its action (operation ${operation.id}) is being cancelled, spec.desiredState moved`);
  else work.readiness(false, REASONS.progressing, `on the way from ${node} to ${work.desired}`);
  const effects: StepEffects = { ...work.writeIfChanged(), poll: true };
  if (cancel !== undefined) effects.cancelOperation = operation.id;
  return effects;
}

/** Records that a change of mind asks to cancel the running operation (once per desired node); returns it as recorded. */
export function requestCancel(work: StatusDraft, operation: OperationStatus): OperationStatus {
  if (operation.cancelRequestedFor === work.desired) return operation;
  const requested = { ...operation, cancelRequestedFor: work.desired };
  work.status.operation = requested;
  return requested;
}

/** Starts an operation committed earlier, on the sidecar it was committed with; a refusal is said in the conditions. */
export function startCommitted(work: StatusDraft, operation: OperationStatus, epoch: string, refusal: StartRefusal | undefined): StepEffects {
  // The parameters it was committed with: the same id with others would be another operation.
  const held = heldForMs(operation, work.now);
  if (held > 0) {
    // Held by the cycle brake, it was given to no sidecar yet: it goes to the one answering now (the
    // one it was committed with may have lost its memory meanwhile).
    if (operation.epoch !== epoch) work.status.operation = { ...operation, epoch };
    return { ...work.writeIfChanged(), requeueAfterMs: held };
  }
  const start = startOf(operation, operation.epoch ?? epoch);
  if (refusal === undefined || refusal.operation !== operation.id) return { ...work.writeIfChanged(), startOperation: start, poll: true };
  const effects = refusal.stall ? work.stall(refusal.reason, refusal.message) : work.waiting(refusal.reason, refusal.message);
  return { ...effects, startOperation: start, requeueAfterMs: refusal.retryAfterMs };
}

/** How the reconciler starts an operation: with the parameters it was committed with. */
export function startOf(operation: OperationStatus, epoch: string): NonNullable<StepEffects['startOperation']> {
  const start: NonNullable<StepEffects['startOperation']> = { id: operation.id, node: operation.node, epoch };
  if (operation.params !== undefined) start.params = operation.params;
  return start;
}

