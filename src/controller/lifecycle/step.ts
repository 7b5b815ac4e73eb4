import { isDeepStrictEqual } from 'node:util';
import type { Graph } from '../../graph/index.ts';
import { appendToPath, decide, renderPath } from '../../machine/index.ts';
import type { Planner } from '../../plan/index.ts';
import { findCondition, isConditionTrue, sameConditions, setCondition, type Condition, type ConditionUpdate } from '../../kube/conditions.ts';
import {
  STATUS_PATH_LIMIT,
  TERMINAL_PHASES,
  type LifecycleSpec,
  type LifecycleStatus,
  type OperationStatus,
  type OutboxEntry,
} from '../../kube/lifecycle-resource.ts';
import { LIFECYCLE_EVENT_TYPES, type LifecycleEventData, type LifecycleEventType } from '../../events/types.ts';

/** The graph of a controller with its planner (both precompute their tables once). */
export interface LifecycleModel {
  readonly graph: Graph;
  readonly planner: Planner;
}

/** The resource as the informer cache has it, already parsed. */
export interface ResourceView {
  uid: string;
  generation: number;
  deleting: boolean;
  spec: LifecycleSpec;
  /** undefined on first sight; InvalidStatus when status does not parse. */
  status: LifecycleStatus | InvalidStatus | undefined;
}

/** A status that does not parse: which field and why, and its conditions if those still parse. */
export interface InvalidStatus {
  invalid: string;
  conditions?: Condition[];
}

type SeenOperation = { phase: OperationStatus['phase']; events: string[]; message?: string; startedAt?: string; finishedAt?: string };

/** What the sidecar said in this reconcile. */
export type SidecarView =
  | { kind: 'unavailable'; message: string }
  | {
      kind: 'answered';
      /** The current operation as the sidecar knows it; 'unknown' when the sidecar has never seen its id. */
      operation?: SeenOperation | 'unknown';
      /** Events the sidecar raised outside any action (a crash, say), newer than status.observedSequence. */
      observedEvents: string[];
      /** The sidecar's sequence of its newest observed event. */
      observedSequence?: number;
    };

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
}

/** What the reconciler must do, in this order: write status, start the operation, delete/unfinalize, requeue. */
export interface StepEffects {
  /** The new status, written with the resourceVersion the step was computed from; absent: no write. */
  status?: LifecycleStatus | Pick<LifecycleStatus, 'conditions'>;
  /** Start (idempotently) this operation on the sidecar, only after the status write succeeded. */
  startOperation?: { id: string; node: string };
  /** The application sits on a leaf with every event delivered: end the resource's life. */
  finish?: 'removeFinalizer' | 'delete';
  /** Wait for the running operation, or for the sidecar, then look again. */
  poll?: boolean;
  /** Go on at once: the resource is still moving and nothing is running. */
  again?: boolean;
  /** Nothing moves until the emitter delivers this resource's events (a leaf's last events, a full outbox). */
  awaitingDelivery?: boolean;
}

export const READY = 'Ready';
export const RECONCILING = 'Reconciling';
export const STALLED = 'Stalled';

/** Why a resource is not Ready; each reason is also a CloudEvent `reason` and a condition reason. */
export const REASONS = {
  reached: 'DesiredStateReached',
  progressing: 'Progressing',
  actionRunning: 'ActionRunning',
  unreachable: 'UnreachableState',
  unknown: 'UnknownState',
  sidecarUnavailable: 'SidecarUnavailable',
  actionFailed: 'ActionFailed',
  invalidStatus: 'InvalidStatus',
  invalidSpec: 'InvalidSpec',
  paused: 'Paused',
  backpressure: 'EventsBackpressure',
  entered: 'Entered',
  left: 'Left',
} as const;

/** The operation id of a transition: a retry after a crash derives the same id, so nothing starts twice. */
export function operationId(uid: string, transition: number): string {
  return `${uid}-${transition}`;
}

/**
 * One reconcile of one resource, as a pure function: from what the API server and the sidecar say,
 * the effects to carry out. At most one transition. Everything it needs is in the input, so a
 * restart at any line recomputes the same effects.
 */
export function step(input: StepInput): StepEffects {
  const { model, resource, now } = input;
  const { graph } = model;
  if (resource.status !== undefined && 'invalid' in resource.status) {
    return unreadable(resource.status.conditions ?? [], REASONS.invalidStatus, resource.status.invalid, resource.generation, now);
  }
  const firstSight = resource.status === undefined;
  const stored = resource.status ?? initialStatus(graph.entry, resource.generation, now);
  const work = new StatusDraft(stored, firstSight, resource.generation, now, graph.name, input.delivered);
  const current = stored.state;
  if (!graph.has(current)) {
    return work.stall(REASONS.unknown, `status.state "${current}" is not a node of graph "${graph.name}"`);
  }
  const desired = resource.deleting ? nearestLeaf(model, current) : resource.spec.desiredState;
  if (!graph.has(desired)) {
    return work.stall(REASONS.unknown, `spec.desiredState "${desired}" is not a node of graph "${graph.name}" (nodes: ${graph.nodeNames.join(', ')})`);
  }

  // The current node's operation: while it runs, wait and change nothing.
  const operation = stored.operation;
  let operationEvents = operation?.events ?? [];
  if (operation !== undefined && !TERMINAL_PHASES.has(operation.phase)) {
    if (input.sidecar.kind === 'unavailable') {
      return { ...work.waiting(REASONS.sidecarUnavailable, `sidecar unavailable while the action of ${operation.node} runs: ${input.sidecar.message}`), poll: true };
    }
    const seen = input.sidecar.operation;
    if (seen === undefined || seen === 'unknown') {
      // Committed but never started (a crash between the write and the start): start it now, same id.
      return { ...work.writeIfChanged(), startOperation: { id: operation.id, node: operation.node }, poll: true };
    }
    if (!TERMINAL_PHASES.has(seen.phase)) return { poll: true };
    work.finishOperation(operation, seen);
    operationEvents = seen.events;
  }
  const observedEvents = input.sidecar.kind === 'answered' ? input.sidecar.observedEvents : [];
  // Observed events are offered once: a stale one must not fire when a later node happens to have it as a child.
  if (input.sidecar.kind === 'answered' && observedEvents.length > 0) work.status.observedSequence = input.sidecar.observedSequence;

  if (resource.spec.paused === true && !resource.deleting) {
    return work.waiting(REASONS.paused, 'spec.paused is true: no transition is taken');
  }
  const finished = work.status.operation;
  const failed = finished !== undefined && finished.phase !== 'Succeeded' && operationEvents.length === 0;
  if (failed && !work.userMovedOnFromFailure()) {
    // A failed action holds the resource where it is until the spec changes (a new generation).
    return work.stall(REASONS.actionFailed, failureMessage(finished));
  }

  const plan = model.planner.next(current, desired);
  if (plan.kind === 'unreachable') {
    return work.stall(REASONS.unreachable, `${desired} cannot be reached from ${current} in graph "${graph.name}"`);
  }
  const events = [...operationEvents, ...observedEvents];
  if (plan.kind === 'move') events.push(plan.event);
  const next = decide(graph, current, events);
  // The planner's event always names a child, so staying means the resource is where it should be.
  if (next === current) return work.converge(desired, input.resource, model.graph.node(desired).isLeaf);
  if (work.pendingEvents() + MAX_EVENTS_PER_TRANSITION > input.outboxLimit) {
    const message = `${input.outboxLimit} events wait in the outbox for the sink: transitions wait too${input.deliveryProblem ? ` (${input.deliveryProblem})` : ''}`;
    return { ...work.waiting(REASONS.backpressure, message), poll: true, awaitingDelivery: true };
  }
  return work.transition(next, desired, events, model, resource.uid);
}

/** A transition commits at most: action succeeded/failed, transition, action started, converged. */
const MAX_EVENTS_PER_TRANSITION = 4;

function initialStatus(entry: string, generation: number, now: string): LifecycleStatus {
  return {
    state: entry,
    observedGeneration: generation,
    transition: 0,
    sequence: 0,
    path: [entry],
    pathSummary: renderPath([entry]),
    conditions: setCondition([], { type: entry, status: 'True', reason: REASONS.entered, message: `${entry} is the entry node`, observedGeneration: generation }, now),
  };
}

/**
 * A spec or status the operator cannot read: only conditions say why (the rest of status is left for
 * a person to repair), written once.
 */
export function unreadable(before: readonly Condition[], reason: typeof REASONS.invalidStatus | typeof REASONS.invalidSpec, problem: string, generation: number, now: string): StepEffects {
  let conditions = [...before];
  const what = reason === REASONS.invalidSpec ? 'spec' : 'status';
  const message = `${what} cannot be read: ${problem}; repair it to resume`;
  for (const [type, value] of [[READY, 'False'], [RECONCILING, 'False'], [STALLED, 'True']] as const) {
    conditions = setCondition(conditions, { type, status: value, reason, message, observedGeneration: generation }, now);
  }
  return sameConditions(before, conditions) ? {} : { status: { conditions } };
}

/** The leaf closest to `from` (ties: the first in graph order): where deletion drives the application. */
function nearestLeaf(model: LifecycleModel, from: string): string {
  let best = from;
  let bestDistance = Infinity;
  for (const name of model.graph.nodeNames) {
    if (!model.graph.node(name).isLeaf) continue;
    const distance = model.planner.distance(from, name);
    if (distance !== undefined && distance < bestDistance) {
      best = name;
      bestDistance = distance;
    }
  }
  return best; // validation guarantees that a leaf is reachable from every node
}

function failureMessage(operation: OperationStatus): string {
  const detail = operation.message ? `: ${operation.message}` : '';
  return `the action of ${operation.node} (operation ${operation.id}) ended ${operation.phase}${detail} and raised no event; change the spec to go on`;
}

/** The status being built in one step, with the bookkeeping every write shares. */
class StatusDraft {
  readonly status: LifecycleStatus;
  readonly #stored: LifecycleStatus;
  readonly #firstSight: boolean;
  readonly #generation: number;
  readonly #now: string;
  readonly #graph: string;
  readonly #delivered: number;

  constructor(stored: LifecycleStatus, firstSight: boolean, generation: number, now: string, graph: string, delivered: number) {
    this.#stored = stored;
    this.#firstSight = firstSight;
    this.status = { ...stored, observedGeneration: generation, conditions: [...stored.conditions] };
    this.#generation = generation;
    this.#now = now;
    this.#graph = graph;
    this.#delivered = delivered;
  }

  finishOperation(operation: OperationStatus, seen: SeenOperation): void {
    const finished: OperationStatus = { ...operation, phase: seen.phase, events: [...seen.events] };
    if (seen.message !== undefined) finished.message = seen.message;
    if (seen.startedAt !== undefined) finished.startedAt = seen.startedAt;
    if (seen.finishedAt !== undefined) finished.finishedAt = seen.finishedAt;
    this.status.operation = finished;
    const type = seen.phase === 'Succeeded' ? LIFECYCLE_EVENT_TYPES.actionSucceeded : LIFECYCLE_EVENT_TYPES.actionFailed;
    this.#emit(type, operation.node, { ...this.#data(operation.node, operation.node, seen.events), operation: summary(finished) });
  }

  /** A failure already reported at an older generation: the user has changed the spec since. */
  userMovedOnFromFailure(): boolean {
    const stalled = findCondition(this.#stored.conditions, STALLED);
    return stalled?.status === 'True' && stalled.reason === REASONS.actionFailed && (stalled.observedGeneration ?? 0) < this.#generation;
  }

  pendingEvents(): number {
    return (this.status.outbox ?? []).filter((e) => e.sequence > this.#delivered).length;
  }

  transition(next: string, desired: string, events: string[], model: LifecycleModel, uid: string): StepEffects {
    const s = this.status;
    const from = s.state;
    s.transition += 1;
    s.state = next;
    s.path = appendToPath(s.path, next, STATUS_PATH_LIMIT);
    s.pathSummary = renderPath(s.path);
    s.lastTransition = { from, to: next, events: [...events], time: this.#now, generation: this.#generation };
    this.#set(from, 'False', REASONS.left, `left for ${next} at transition ${s.transition}`);
    this.#set(next, 'True', REASONS.entered, `entered from ${from} at transition ${s.transition} on ${events.join(', ')}`);
    const data = this.#data(from, next, events, desired);
    this.#emit(LIFECYCLE_EVENT_TYPES.transition, next, data);
    const hasAction = model.graph.node(next).hasAction;
    if (hasAction) {
      const id = operationId(uid, s.transition);
      s.operation = { id, node: next, phase: 'Pending', startedAt: this.#now };
      this.#emit(LIFECYCLE_EVENT_TYPES.actionStarted, next, { ...data, operation: summary(s.operation) });
    } else {
      delete s.operation;
    }
    if (next === desired && !hasAction) {
      this.#readiness(true, REASONS.reached, `${next} reached`);
      this.#emit(LIFECYCLE_EVENT_TYPES.converged, next, { ...data, reason: REASONS.reached });
      // A leaf ends the resource's life: look again to do that once its events are out.
      return model.graph.node(next).isLeaf ? { status: this.#pruned(), again: true } : { status: this.#pruned() };
    }
    const why = next === desired ? REASONS.actionRunning : REASONS.progressing;
    this.#readiness(false, why, next === desired ? `${next} entered; its action runs` : `on the way from ${next} to ${desired}`);
    if (s.operation !== undefined) return { status: this.#pruned(), startOperation: { id: s.operation.id, node: next }, poll: true };
    return { status: this.#pruned(), again: true };
  }

  converge(desired: string, resource: ResourceView, isLeaf: boolean): StepEffects {
    const wasReady = isConditionTrue(this.#stored.conditions, READY);
    const detail = this.status.operation ? '; its action succeeded' : '';
    this.#readiness(true, REASONS.reached, `${desired} reached${detail}`);
    if (!wasReady) this.#emit(LIFECYCLE_EVENT_TYPES.converged, desired, { ...this.#data(desired, desired, []), reason: REASONS.reached });
    const effects = this.writeIfChanged();
    const ending = resource.deleting || resource.spec.onLeaf !== 'Keep';
    if (!isLeaf || !ending) return effects;
    // A leaf ends the resource's life (OKT's "on End: delete it"), once its last events are out.
    if (effects.status === undefined && this.pendingEvents() === 0) return { finish: resource.deleting ? 'removeFinalizer' : 'delete' };
    return { ...effects, poll: true, awaitingDelivery: true };
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
    if (!this.#firstSight && isDeepStrictEqual(this.status, this.#stored)) return {};
    return { status: this.#pruned() };
  }

  /** Delivered events leave the outbox on a write that is due anyway: no write of their own. */
  #pruned(): LifecycleStatus {
    const outbox = (this.status.outbox ?? []).filter((e) => e.sequence > this.#delivered);
    const { outbox: _old, ...rest } = this.status;
    return outbox.length > 0 ? { ...rest, outbox } : rest;
  }

  #readiness(ready: boolean, reason: string, message: string): void {
    this.#set(READY, ready ? 'True' : 'False', reason, message);
    this.#set(RECONCILING, ready ? 'False' : 'True', reason, message);
    this.#set(STALLED, 'False', reason, message);
  }

  #set(type: string, status: ConditionUpdate['status'], reason: string, message: string): void {
    this.status.conditions = setCondition(this.status.conditions, { type, status, reason, message, observedGeneration: this.#generation }, this.#now);
  }

  #data(from: string, to: string, events: readonly string[], desired?: string): LifecycleEventData {
    return {
      graph: this.#graph,
      transition: this.status.transition,
      from,
      to,
      desired: desired ?? to,
      events: [...events],
      path: this.status.pathSummary ?? renderPath(this.status.path),
      generation: this.#generation,
    };
  }

  #emit(type: LifecycleEventType, subject: string, data: LifecycleEventData): void {
    const s = this.status;
    s.sequence += 1;
    const entry: OutboxEntry = { sequence: s.sequence, type, time: this.#now, subject, data: { ...data } };
    s.outbox = [...(s.outbox ?? []), entry];
  }
}

function summary(operation: OperationStatus): NonNullable<LifecycleEventData['operation']> {
  const out: NonNullable<LifecycleEventData['operation']> = { id: operation.id, node: operation.node, phase: operation.phase };
  if (operation.message !== undefined) out.message = operation.message;
  return out;
}
