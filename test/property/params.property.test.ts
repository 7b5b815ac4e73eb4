// Random changes of spec.params (some of them values the schema refuses) and of spec.desiredState
// while actions run, on random graphs whose action nodes re-run on a change or not: every operation
// starts once, with the values it was committed with, which were the spec's and fitted the schema;
// a run for changed parameters happens only at a Rerun node and only for values it did not run with;
// once the values fit and stay, the resource converges, and a Rerun node's action ran with them.
import fc from 'fast-check';
import { isDeepStrictEqual } from 'node:util';
import { expect, test } from 'vitest';
import { loadGraph, type Graph } from '../../src/graph/index.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../src/events/types.ts';
import { graphArb } from '../fixtures/graph-arbitrary.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

/** `n`, a whole number from 0: -1 is a value the schema refuses. */
const PARAMS = { type: 'object', properties: { n: { type: 'integer', minimum: 0, default: 0 } } };

function withParams(graph: Graph, reruns: readonly boolean[]): Graph {
  const data = graph.toData();
  return loadGraph({
    ...data,
    params: PARAMS,
    nodes: data.nodes.map((node, i) => (graph.node(node.name).hasAction && reruns[i % reruns.length] ? { ...node, onParamsChange: 'Rerun' } : node)),
  });
}

const scenarioArb = graphArb.chain((graph) =>
  fc.record({
    graph: fc.constant(graph),
    reruns: fc.array(fc.boolean(), { minLength: 1, maxLength: 6 }),
    /** Per reconcile: maybe new values, maybe a new desired node, and whether the running action ends. */
    looks: fc.array(
      fc.record({
        n: fc.option(fc.integer({ min: -1, max: 3 }), { freq: 2 }),
        // Mostly resting: a node's parameters change more often than the node wanted.
        desire: fc.oneof({ arbitrary: fc.constant(null), weight: 4 }, { arbitrary: fc.constantFrom(...graph.nodeNames), weight: 1 }),
        finish: fc.boolean(),
      }),
      { minLength: 1, maxLength: 60 },
    ),
    last: fc.integer({ min: 0, max: 3 }),
    first: fc.constantFrom(...graph.nodeNames),
  }),
);

test('parameters: committed with the values of the spec, started once with them, re-run only where declared and only for new values; converged with the last ones', () => {
  fc.assert(
    fc.property(scenarioArb, ({ graph: shape, reruns, looks, last, first }) => {
      const graph = withParams(shape, reruns);
      const sim = new LifecycleSim(graph, first);
      sim.spec = { ...sim.spec, onLeaf: 'Keep', params: { n: 0 } };
      const look = (finishRunning = true) => {
        const before = sim.status?.operation;
        const sequence = sim.status?.sequence ?? 0;
        // The sim refuses a start of a known id with other values (the sidecar's 409 id-conflict).
        sim.reconcile({ finishRunning });
        const after = sim.status?.operation;
        if (after !== undefined && after.id !== before?.id) {
          const n = sim.spec.params?.n as number;
          expect(n).toBeGreaterThanOrEqual(0);
          expect(after.params).toEqual({ n });
        }
        for (const event of sim.events.filter((e) => e.sequence > sequence)) {
          if (event.type !== LIFECYCLE_EVENT_TYPES.actionStarted || event.data.reason !== 'ParamsChanged') continue;
          expect(graph.node(after!.node).onParamsChange).toBe('Rerun');
          expect(before?.node).toBe(after!.node);
          expect(isDeepStrictEqual(before?.params, after!.params)).toBe(false);
        }
      };
      for (const { n, desire, finish } of looks) {
        if (n !== null) sim.setSpec({ params: { n } });
        if (desire !== null) sim.setDesired(desire);
        look(finish);
      }
      sim.setSpec({ params: { n: last } });
      const target = sim.spec.desiredState;
      for (let i = 0; i < 4 * graph.nodeNames.length + 6; i++) look();
      for (const op of sim.started.values()) expect(op.starts).toBe(1);
      const reachable = sim.model.planner.distance(sim.status?.state ?? graph.entry, target) !== undefined;
      if (!reachable) return;
      expect(sim.status?.state).toBe(target);
      expect(sim.status?.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
      const operation = sim.status?.operation;
      if (operation !== undefined && graph.node(operation.node).onParamsChange === 'Rerun') expect(operation.params).toEqual({ n: last });
    }),
    { numRuns: fcRuns(300) },
  );
});
