// The decision: one reconcile of one resource as a pure function, from what the API server and the
// sidecar say to the effects the reconciler carries out. The parts it builds on: cleanup.ts
// (deletion), deadline.ts, model.ts (revisions and migration), status/ (what is written).
import { isDeepStrictEqual } from 'node:util';
import { nodeParams } from '../../graph/index.ts';
import { decide } from '../../machine/index.ts';
import { predictMigration, resolveDesired, type MigrationPrediction } from '../../plan/index.ts';
import type { OperationStatus } from '../../kube/lifecycle-resource.ts';
import { DEFAULT_STATUS_FORMAT } from '../../kube/status-format.ts';
import { isTerminal } from '../../sidecar-client/index.ts';
import { READY, REASONS, RECONCILING, STALLED } from './reasons.ts';
import { ABANDON_ANNOTATION, abandon, abandonHint, abandonment, cancelCause, DEFAULT_TEARDOWN_GRACE_MS, deletionEnd, deletionEvent } from './cleanup.ts';
import { cancelAtDeadline, lookAgainAtDeadline, passedDeadline, stallAtDeadline, timeoutEdge, deadlineMessage } from './deadline.ts';
import { landing, recordedPosition, servedMigration } from './model.ts';
import type { StepEffects, StepInput } from './step-types.ts';
import { cannotCommit, converge, move, retry, transition } from './status/commit.ts';
import { initialStatus, unreadable } from './status/conditions.ts';
import { StatusDraft } from './status/draft.ts';
import { migrate } from './status/migration.ts';
import { adoptAttempt, cancelledForChangeOfMind, finishOperation, isChangeOfMind, recordFailureDesired, requestCancel, running, startCommitted } from './status/operation.ts';

export { READY, REASONS, RECONCILING, STALLED };
export { createLifecycleModel } from './model.ts';
export { operationId } from './status/operation.ts';
export { unreadable } from './status/conditions.ts';
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
    const why = resource.abandonRequested ? abandonment(input) : undefined;
    if (why !== undefined) return abandon(work, why, input.teardownGraceMs ?? DEFAULT_TEARDOWN_GRACE_MS);
    const release = abandonHint(resource, '; or ');
    return work.stall(REASONS.unknown, `${migration.reason}${release}`);
  }
  work.onRevision = migration.kind === 'current';
  const desired = resolveDesired(graph, resource.spec.desiredState);
  work.desired = resource.deleting ? deletionEnd(graph, landing(graph, stored.state, migration)) : 'node' in desired ? desired.node : resource.spec.desiredState;
  recordFailureDesired(work);
  const abandoned = abandonment(input);
  if (abandoned !== undefined) return abandon(work, abandoned, input.teardownGraceMs ?? DEFAULT_TEARDOWN_GRACE_MS);
  const sidecar = input.sidecar;
  if (sidecar.kind === 'refused') {
    // At the end of its deletion path nothing is asked of the sidecar: the resource is released.
    if (resource.deleting && stored.state === work.desired) return converge(work, true);
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
    migrate(work, migration);
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
    const current = cancel === 'desiredChange' ? requestCancel(work, operation) : operation;
    const seen = sidecar.operation ?? 'unknown';
    const overdue = passedDeadline(input, work.status);
    if (seen === 'unknown') {
      if (cancel !== undefined) {
        const message = cancel === 'deletion' ? 'never started: the resource is being deleted' : 'never started';
        finishOperation(work, current, { phase: 'Cancelled', events: [], reason: 'Cancelled', message, finishedAt: now });
      } else if (overdue !== undefined) {
        finishOperation(work, current, { phase: 'Cancelled', events: [], reason: 'Cancelled', message: `never started: ${deadlineMessage(overdue)}`, finishedAt: now });
      } else {
        // Committed but never started (a crash between the write and the start): start it now, same id, same sidecar.
        return startCommitted(work, current, sidecar.epoch, input.startRefused);
      }
    } else if (seen === 'lost') {
      finishOperation(work, current, {
        phase: 'Failed',
        events: [],
        reason: 'Interrupted',
        message: `the sidecar that held it (epoch ${operation.epoch ?? 'unrecorded'}) is gone and sidecar epoch ${sidecar.epoch} does not know it; its action is not declared idempotent, so it was not run again and may or may not have run`,
        finishedAt: now,
      });
    } else {
      adoptAttempt(work, current, sidecar.epoch, seen);
      if (!isTerminal(seen.phase)) {
        if (overdue !== undefined) return cancelAtDeadline(work, current, overdue);
        return running(work, current, cancel);
      }
      finishOperation(work, current, seen);
      operationEvents = seen.events;
    }
  }
  if (migration.kind === 'waits') {
    // The action that held the migration back is over (its end is recorded): the resource moves now.
    const now = predictMigration(graph, model.planner, { ...recordedPosition(graph, work.status, resource.spec, how), runningAction: undefined });
    if (now.kind === 'migrates' && now.state.kind === 'moved') return migrateInto(input, work, now);
    if (now.kind === 'migrates') migrate(work, now);
  }
  const observed = work.observedEvents(sidecar);

  // At the end of its deletion path (a leaf, or its entry node without onDelete) the resource is
  // released, paused or not: that takes no transition and runs nothing, and no event may move it on.
  if (resource.deleting && work.status.state === work.desired) return converge(work, true);
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
    const exit = deletionEvent(graph, current);
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
    return rerun ?? converge(work, graph.node(desired).isLeaf);
  }
  return move(work, next, events, input);
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
    if (next !== current) return move(work, next, collected, input);
    work.consumeObserved(input.sidecar);
  }
  if (cancelledForChangeOfMind(operation, resource.deleting)) {
    // No failure: the user changed their mind. Still changed, the resource moves on; taken back before
    // the cancellation landed, the node is wanted after all, so its action runs again.
    if (isChangeOfMind(operation, work.desired)) return decideAndMove(input, work, collected);
    return retry(work, operation, input, `its cancellation landed after spec.desiredState came back to ${work.desired}`);
  }
  const retryToken = resource.spec.retry;
  // Past the deadline a new run would be cancelled at once: spec.retry waits for another node.
  if (overdue === undefined && retryToken !== undefined && retryToken !== operation.retry) return retry(work, operation, input, `spec.retry changed to "${retryToken}"`);
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
    if (wait <= 0) return retry(work, operation, input, `retry policy: run ${runs + 1} of ${node.retry.attempts}`);
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
