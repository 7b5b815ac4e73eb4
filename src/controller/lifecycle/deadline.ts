// A node's deadline: when it falls, the timeout edge it takes or the stall it causes, the cancellation
// of an action that outlives it, and the one requeue it costs.
import { formatDuration, type Deadline, type Graph } from '../../graph/index.ts';
import type { LifecycleStatus, OperationStatus } from '../../kube/lifecycle-resource.ts';
import { REASONS } from './reasons.ts';
import { modelOfRevision } from './model.ts';
import type { StepEffects, StepInput } from './step-types.ts';
import { move } from './status/commit.ts';
import type { StatusDraft } from './status/draft.ts';

/** The longest requeue toward a deadline (a timer cannot wait beyond ~24.8 days): a farther one is looked at again daily. */
export const MAX_DEADLINE_WAIT_MS = 86_400_000;

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
export function passedDeadline(input: StepInput, status: LifecycleStatus): NodeDeadline | undefined {
  if (input.resource.deleting || input.resource.spec.paused === true) return undefined;
  const due = deadlineOf(input.model.graph, status);
  return due !== undefined && Date.parse(input.now) >= due.at ? due : undefined;
}

export function deadlineMessage(due: NodeDeadline): string {
  return `the deadline of ${due.node} (${formatDuration(due.deadline.afterMs)} after it was entered at ${due.entered}) passed at ${new Date(due.at).toISOString()}`;
}

/** A passed deadline's edge, if it has one: its event is offered alone, so it is taken whatever else was raised. */
export function timeoutEdge(input: StepInput, work: StatusDraft, due: NodeDeadline | undefined): StepEffects | undefined {
  const then = due?.deadline.then;
  if (due === undefined || then === undefined) return undefined;
  return move(work, then, [then], input, { reason: REASONS.deadlineExceeded, message: `${deadlineMessage(due)}: timeout edge to ${then}` });
}

export function stallAtDeadline(work: StatusDraft, due: NodeDeadline): StepEffects {
  return work.stall(REASONS.deadlineExceeded, `${deadlineMessage(due)}; set spec.desiredState to another node to move on`);
}

/**
 * The one requeue a deadline costs: at the deadline of the node the step leaves the resource on,
 * unless something sooner is due. Deletion and a pause hold the deadline off; their end is a change
 * of the resource, which is reconciled anyway.
 */
export function lookAgainAtDeadline(given: StepInput, effects: StepEffects): StepEffects {
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

/** The node's deadline passed while its action runs: cancel it; its end (Cancelled) takes the timeout edge or stalls. */
export function cancelAtDeadline(work: StatusDraft, operation: OperationStatus, due: NodeDeadline): StepEffects {
  const then = due.deadline.then === undefined ? 'it stalls' : `it goes to ${due.deadline.then}`;
  return { ...work.waiting(REASONS.deadlineExceeded, `${deadlineMessage(due)}: its action (operation ${operation.id}) is cancelled, then ${then}`), poll: true, cancelOperation: operation.id };
}
