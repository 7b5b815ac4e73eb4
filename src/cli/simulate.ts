import { createActor } from 'xstate';
import type { Graph } from '../graph/index.ts';
import { nodeOfXStateKey, toXStateMachine, xstateKey, XSTATE_EVENT } from '../machine/index.ts';
import { createPlanner } from '../plan/index.ts';

/** One decision of a simulation: the node it started from, the events offered, the node entered. */
export interface SimulationStep {
  readonly from: string;
  readonly events: readonly string[];
  readonly to: string;
}

export type SimulationOutcome =
  | { readonly kind: 'arrived' }
  /** The planner finds no route from `at` to the desired node. */
  | { readonly kind: 'unreachable'; readonly at: string }
  /** The extra events sent the walk round in a circle: `at` was already left with the same events. */
  | { readonly kind: 'loop'; readonly at: string };

export interface Simulation {
  readonly from: string;
  readonly desired: string;
  readonly steps: readonly SimulationStep[];
  /** Every node entered, the start included: what status.path would hold. */
  readonly path: readonly string[];
  readonly outcome: SimulationOutcome;
}

/**
 * Walks `graph` from `from` to `desired` through the xstate machine compiled from it (an actor of
 * toXStateMachine), as the operator would reconcile by reconcile: each decision is offered the
 * planner's event toward `desired` plus `extraEvents` (events a sidecar might report at every step).
 */
export function simulate(graph: Graph, options: { desired: string; from?: string; extraEvents?: readonly string[] }): Simulation {
  const from = options.from ?? graph.entry;
  const { desired } = options;
  const extra = options.extraEvents ?? [];
  const planner = createPlanner(graph);
  const machine = toXStateMachine(graph);
  const actor = createActor(machine, { snapshot: machine.resolveState({ value: xstateKey(from), context: {} }) });
  actor.start();
  const current = () => nodeOfXStateKey(String(actor.getSnapshot().value));

  const steps: SimulationStep[] = [];
  const path = [from];
  const left = new Set<string>();
  let outcome: SimulationOutcome | undefined;
  while (outcome === undefined) {
    const at = current();
    const plan = planner.next(at, desired);
    if (plan.kind === 'arrived') outcome = { kind: 'arrived' };
    else if (plan.kind === 'unreachable') outcome = { kind: 'unreachable', at };
    else if (left.has(at)) outcome = { kind: 'loop', at };
    else {
      // Same node and same events give the same decision: a node left twice means a circle.
      left.add(at);
      const events = [...new Set([plan.event, ...extra])];
      actor.send({ type: XSTATE_EVENT, events });
      const to = current();
      steps.push({ from: at, events, to });
      path.push(to);
    }
  }
  actor.stop();
  return { from, desired, steps, path, outcome };
}
