// A commit: a transition (its action committed with it), a run of the current node's action again, or
// the desired node reached; and what keeps one from being written now (a full outbox, parameters that
// do not fit, no sidecar to start the action on).
import { nodeConditionType, nodeParams } from '../../../graph/index.ts';
import { appendToPath, renderPath } from '../../../machine/index.ts';
import { isConditionTrue } from '../../../kube/conditions.ts';
import { STATUS_PATH_LIMIT, type OperationStatus } from '../../../kube/lifecycle-resource.ts';
import { operationSummary } from '../../../events/status-events.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../../events/types.ts';
import { READY, REASONS } from '../reasons.ts';
import { brakeMessage, CYCLE_BRAKE_CONDITION, cycleTurn, heldForMs } from '../cycle-brake.ts';
import { abandonHint, endOfLife, leafEndsLife } from '../cleanup.ts';
import type { SidecarView, StepEffects, StepInput, TransitionCause } from '../step-types.ts';
import { NODE_CONDITION_REASONS } from './conditions.ts';
import type { StatusDraft } from './draft.ts';
import { operationId, startOf } from './operation.ts';

/** A transition commits at most: action succeeded/failed, migrated, transition, action started, converged (or braked). */
const MAX_EVENTS_PER_TRANSITION = 5;

/** A transition to `next` (backpressure and a missing sidecar may make it wait). */
export function move(work: StatusDraft, next: string, events: string[], input: StepInput, cause?: TransitionCause): StepEffects {
  const waiting = cannotCommit(work, input, input.model.graph.node(next).hasAction ? next : undefined, `enter ${next}`);
  if (waiting !== undefined) return waiting;
  work.consumeObserved(input.sidecar);
  return transition(work, next, events, input, cause);
}

/** Runs the action of the current node again (it failed, or its parameters changed), under the next operation id. */
export function retry(work: StatusDraft, operation: OperationStatus, input: StepInput, why: string, how: { reason: string; paramsChanged?: boolean } = { reason: REASONS.actionRetrying }): StepEffects {
  const node = operation.node;
  const waiting = cannotCommit(work, input, node, `run the action of ${node} again`);
  if (waiting !== undefined) return waiting;
  const s = work.status;
  const retries = (operation.retries ?? 0) + 1;
  const next: OperationStatus = { id: operationId(input.resource.uid, s.transition, retries), node, phase: 'Pending', startedAt: work.now, retries, desiredAtStart: work.desired };
  const epoch = (input.sidecar as Extract<SidecarView, { kind: 'answered' }>).epoch;
  next.epoch = epoch;
  if (input.resource.spec.retry !== undefined) next.retry = input.resource.spec.retry;
  const params = work.paramsOf(node, input);
  if (params !== undefined) next.params = params;
  const since = how.paramsChanged ? retries : operation.paramsSince;
  if (since !== undefined) next.paramsSince = since;
  s.operation = next;
  work.emit(LIFECYCLE_EVENT_TYPES.actionStarted, node, { ...work.data(node, node, []), operation: operationSummary(next), reason: how.reason, message: why });
  if (node === work.desired) work.readiness(false, REASONS.actionRunning, `${node}: its action runs again (${why})`);
  else work.readiness(false, REASONS.progressing, `on the way from ${node} to ${work.desired}; its action runs again (${why})`);
  return { status: work.pruned(), startOperation: startOf(next, epoch), poll: true };
}

/**
 * What keeps a commit from being written now: a full outbox, or, when it starts the action of
 * `actionOf`, parameters that do not fit that node or no sidecar to start it on. `goal` says what the
 * commit would do, for the message.
 */
export function cannotCommit(work: StatusDraft, input: StepInput, actionOf: string | undefined, goal: string): StepEffects | undefined {
  if (work.pendingEvents() + MAX_EVENTS_PER_TRANSITION > input.outboxLimit) {
    const message = `${work.pendingEvents()} events wait in the outbox for the sink, which holds ${input.outboxLimit}: transitions wait too${input.deliveryProblem ? ` (${input.deliveryProblem})` : ''}`;
    return { ...work.waiting(REASONS.backpressure, message), poll: true, awaitingDelivery: true };
  }
  if (actionOf === undefined) return undefined;
  const params = nodeParams(input.model.graph, actionOf, input.resource.spec.params);
  if (params !== undefined && !params.ok) {
    const problems = params.problems.map((p) => `${p.field}: ${p.reason}`).join('; ');
    const release = abandonHint(input.resource, ', or ');
    return work.stall(REASONS.invalidParams, `spec.params do not fit the parameters of ${actionOf} (${problems}); set spec.params to values they accept to ${goal}${release}`);
  }
  if (input.sidecar.kind === 'unavailable') {
    // An action is committed with the epoch of the sidecar that will run it: no commit without one.
    return { ...work.waiting(REASONS.sidecarUnavailable, `the next node's action needs the sidecar: ${input.sidecar.message}`), poll: true };
  }
  return undefined;
}

/**
 * The transition to `next` on `events`: the node, path, node conditions and readiness, the action
 * committed with it (held by the cycle brake, or started once this write succeeded), and its events.
 */
export function transition(work: StatusDraft, next: string, events: string[], input: StepInput, cause?: TransitionCause): StepEffects {
  const { model } = input;
  const s = work.status;
  const from = s.state;
  const desired = work.desired;
  const hasAction = model.graph.node(next).hasAction;
  // A deadline's timer turns at its own pace, and a migration (no events) is none of the CR's doing.
  const turn = cause === undefined && events.length > 0 ? cycleTurn(s, next, hasAction, work.generation, work.now) : undefined;
  if (turn !== undefined) s.cycleBrake = turn.brake;
  s.transition += 1;
  s.state = next;
  s.path = appendToPath(s.path, next, STATUS_PATH_LIMIT);
  s.pathSummary = renderPath(s.path);
  s.lastTransition = { from, to: next, events: [...events], time: work.now, generation: work.generation };
  // Node conditions of nodes left earlier go: status does not grow with the graph.
  s.conditions = s.conditions.filter((c) => !NODE_CONDITION_REASONS.has(c.reason) || c.type === nodeConditionType(from) || c.type === nodeConditionType(next));
  work.set(nodeConditionType(from), 'False', REASONS.left, `left for ${next} at transition ${s.transition}`);
  const why = events.length > 0 ? ` on ${events.join(', ')}` : ' by migration';
  work.set(nodeConditionType(next), 'True', REASONS.entered, `entered from ${from} at transition ${s.transition}${why}`);
  const data = work.data(from, next, events);
  work.emit(LIFECYCLE_EVENT_TYPES.transition, next, cause === undefined ? data : { ...data, ...cause });
  if (hasAction) {
    const epoch = (input.sidecar as Extract<SidecarView, { kind: 'answered' }>).epoch;
    s.operation = { id: operationId(input.resource.uid, s.transition), node: next, phase: 'Pending', startedAt: work.now, epoch, desiredAtStart: desired };
    if (input.resource.spec.retry !== undefined) s.operation.retry = input.resource.spec.retry;
    const params = work.paramsOf(next, input);
    if (params !== undefined) s.operation.params = params;
    work.emit(LIFECYCLE_EVENT_TYPES.actionStarted, next, { ...data, operation: operationSummary(s.operation) });
    if (turn !== undefined && turn.holdMs > 0) {
      s.operation.notBefore = turn.brake.at;
      const message = brakeMessage(turn, next);
      work.set(CYCLE_BRAKE_CONDITION, 'True', REASONS.cycleBraked, message);
      if (turn.engages) work.emit(LIFECYCLE_EVENT_TYPES.braked, next, { ...data, reason: REASONS.cycleBraked, message, cycle: [...turn.cycle], turns: turn.brake.turns });
    }
  } else {
    delete s.operation;
  }
  if (next === desired && !hasAction) {
    work.readiness(true, REASONS.reached, `${next} reached`);
    work.emit(LIFECYCLE_EVENT_TYPES.converged, next, { ...data, reason: REASONS.reached });
    // A leaf ends the resource's life: look again to do that once its events are out. One kept there
    // (spec.onLeaf: Keep) has nothing left to do: that look would change nothing.
    return model.graph.node(next).isLeaf && leafEndsLife(input.resource) ? { status: work.pruned(), again: true } : { status: work.pruned() };
  }
  const reason = next === desired ? REASONS.actionRunning : REASONS.progressing;
  work.readiness(false, reason, next === desired ? `${next} entered; its action runs` : `on the way from ${next} to ${desired}`);
  if (s.operation === undefined) return { status: work.pruned(), again: true };
  const held = heldForMs(s.operation, work.now);
  if (held > 0) return { status: work.pruned(), requeueAfterMs: held };
  return { status: work.pruned(), startOperation: startOf(s.operation, s.operation.epoch ?? ''), poll: true };
}

/** At the desired node with its action succeeded (or none): Ready. `last`: a leaf, or the end of the deletion path. */
export function converge(work: StatusDraft, last: boolean): StepEffects {
  const desired = work.desired;
  const wasReady = isConditionTrue(work.stored.conditions, READY);
  const detail = work.status.operation ? '; its action succeeded' : '';
  work.readiness(true, REASONS.reached, `${desired} reached${detail}`);
  if (!wasReady) work.emit(LIFECYCLE_EVENT_TYPES.converged, desired, { ...work.data(desired, desired, []), reason: REASONS.reached });
  const effects = work.writeIfChanged();
  return last ? endOfLife(work, effects) : effects;
}
