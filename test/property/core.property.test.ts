import fc from 'fast-check';
import { transition } from 'xstate';
import { describe, expect, test } from 'vitest';
import { DEFAULT_STATE, loadGraph, type Graph } from '../../src/graph/index.ts';
import { decide, toXStateMachine, XSTATE_EVENT, xstateKey } from '../../src/machine/index.ts';
import { createPlanner } from '../../src/plan/index.ts';
import { graphArb } from '../fixtures/graph-arbitrary.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

/** A graph, one of its nodes, and a random event list: children, DefaultState, other nodes, junk. */
const caseArb = graphArb.chain((graph) =>
  fc.record({
    graph: fc.constant(graph),
    current: fc.constantFrom(...graph.nodeNames),
    events: fc.array(fc.constantFrom(...graph.nodeNames, DEFAULT_STATE, 'NotANode'), { maxLength: 6 }),
  }),
);

/** Shortest distances from `from`, by a plain BFS independent of the planner. */
function bfs(graph: Graph, from: string): Map<string, number> {
  const distance = new Map([[from, 0]]);
  const queue = [from];
  for (let head = 0; head < queue.length; head++) {
    const node = queue[head]!;
    for (const child of graph.node(node).children) {
      if (!distance.has(child)) {
        distance.set(child, distance.get(node)! + 1);
        queue.push(child);
      }
    }
  }
  return distance;
}

describe('properties over random valid graphs', () => {
  test('generated graphs are valid and survive a trip through plain data', () => {
    fc.assert(
      fc.property(graphArb, (graph) => {
        expect(loadGraph(JSON.parse(JSON.stringify(graph.toData()))).toData()).toEqual(graph.toData());
      }),
    );
  });

  test('the decision lands on a child of the current node, or stays', () => {
    fc.assert(
      fc.property(caseArb, ({ graph, current, events }) => {
        const next = decide(graph, current, events);
        expect(next === current || graph.node(current).children.includes(next)).toBe(true);
      }),
    );
  });

  test('priority holds: the first child named by an event wins, else the default on DefaultState', () => {
    fc.assert(
      fc.property(caseArb, ({ graph, current, events }) => {
        const node = graph.node(current);
        const named = node.children.find((child) => events.includes(child));
        const expected = named ?? (events.includes(DEFAULT_STATE) && node.defaultChild !== undefined ? node.defaultChild : current);
        expect(decide(graph, current, events)).toBe(expected);
      }),
    );
  });

  test('DefaultState alone always takes the default child; a leaf never moves', () => {
    fc.assert(
      fc.property(caseArb, ({ graph, current, events }) => {
        const node = graph.node(current);
        if (node.isLeaf) expect(decide(graph, current, events)).toBe(current);
        else expect(decide(graph, current, [DEFAULT_STATE])).toBe(node.defaultChild);
      }),
    );
  });

  test('the xstate machine and the decision table agree on every input', () => {
    fc.assert(
      fc.property(caseArb, ({ graph, current, events }) => {
        const machine = toXStateMachine(graph);
        const [snapshot] = transition(machine, machine.resolveState({ value: xstateKey(current) }), { type: XSTATE_EVENT, events });
        expect(snapshot.value).toBe(xstateKey(decide(graph, current, events)));
      }),
      { numRuns: fcRuns(200) },
    );
  });

  test('following the planner reaches every reachable node in exactly the shortest number of decisions', () => {
    fc.assert(
      fc.property(graphArb, (graph) => {
        const planner = createPlanner(graph);
        for (const from of graph.nodeNames) {
          const distances = bfs(graph, from);
          for (const to of graph.nodeNames) {
            const shortest = distances.get(to);
            expect(planner.distance(from, to)).toBe(shortest);
            if (shortest === undefined) {
              expect(planner.next(from, to)).toEqual({ kind: 'unreachable', from, to });
              continue;
            }
            let at = from;
            let decisions = 0;
            for (let step = planner.next(at, to); step.kind === 'move'; step = planner.next(at, to)) {
              at = decide(graph, at, [step.event]);
              decisions++;
              expect(step.remaining).toBe(shortest - decisions);
            }
            expect(at).toBe(to);
            expect(decisions).toBe(shortest);
          }
        }
      }),
      { numRuns: fcRuns(100) },
    );
  });
});
