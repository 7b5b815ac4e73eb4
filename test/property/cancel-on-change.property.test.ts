// Random changes of spec.desiredState while actions run, on random graphs whose action nodes declare
// random cancellable policies: cancellation is only ever of the running operation, asked once, and never
// a failure; the resource ends at the last desired node.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { loadGraph, type Graph } from '../../src/graph/index.ts';
import { TERMINAL_PHASES } from '../../src/kube/lifecycle-resource.ts';
import { graphArb } from '../fixtures/graph-arbitrary.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

const policyArb = fc.constantFrom(undefined, true, { onDesiredChange: true }, { onDelete: true });

/** The graph with each action node given one of the policies (by index, cycling). */
function withPolicies(graph: Graph, policies: readonly (typeof policyArb extends fc.Arbitrary<infer P> ? P : never)[]): Graph {
  const data = graph.toData();
  return loadGraph({
    ...data,
    nodes: data.nodes.map((node, i) => {
      const policy = policies[i % policies.length];
      return graph.node(node.name).hasAction && policy !== undefined ? { ...node, cancellable: policy } : node;
    }),
  });
}

const scenarioArb = graphArb.chain((graph) =>
  fc.record({
    graph: fc.constant(graph),
    policies: fc.array(policyArb, { minLength: 1, maxLength: 6 }),
    /** Per reconcile: maybe a new desired node first, and whether the running action ends by itself. */
    looks: fc.array(fc.record({ desire: fc.option(fc.constantFrom(...graph.nodeNames), { freq: 3 }), finish: fc.boolean() }), { minLength: 1, maxLength: 60 }),
  }),
);

test('every cancel is of the running operation, at a node cancellable on a change of mind, at most once per operation; no action starts twice, nothing stalls ActionFailed, and the resource converges to the last desired node', () => {
  fc.assert(
    fc.property(scenarioArb, ({ graph: shape, policies, looks }) => {
      const graph = withPolicies(shape, policies);
      const sim = new LifecycleSim(graph, graph.entry);
      sim.spec = { ...sim.spec, onLeaf: 'Keep' };
      const cancels = new Map<string, number>();
      for (const look of looks) {
        if (look.desire !== null) sim.setDesired(look.desire);
        const read = sim.status?.operation;
        const effects = sim.reconcile({ finishRunning: look.finish });
        if (effects.cancelOperation !== undefined) {
          expect(read?.id).toBe(effects.cancelOperation);
          expect(TERMINAL_PHASES.has(read!.phase)).toBe(false);
          expect(graph.node(read!.node).cancellable.onDesiredChange).toBe(true);
          expect([read!.node, read!.desiredAtStart]).not.toContain(sim.spec.desiredState);
          cancels.set(read!.id, (cancels.get(read!.id) ?? 0) + 1);
        }
        expect(sim.status?.conditions.find((c) => c.type === 'Stalled' && c.status === 'True')?.reason).not.toBe('ActionFailed');
      }
      for (const count of cancels.values()) expect(count).toBe(1);
      const target = sim.spec.desiredState;
      const reachable = sim.model.planner.distance(sim.status?.state ?? graph.entry, target) !== undefined;
      for (let i = 0; i < 4 * graph.nodeNames.length + 4; i++) sim.reconcile();
      if (reachable) {
        expect(sim.status?.state).toBe(target);
        expect(sim.status?.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
      } else {
        expect(sim.status?.conditions.find((c) => c.type === 'Stalled')?.reason).toBe('UnreachableState');
      }
      for (const op of sim.started.values()) expect(op.starts).toBe(1);
    }),
    { numRuns: fcRuns(300) },
  );
});
