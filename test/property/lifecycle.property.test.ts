import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { LifecycleStatus } from '../../src/kube/lifecycle-resource.ts';
import { graphArb } from '../fixtures/graph-arbitrary.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';

const walkArb = graphArb.chain((graph) =>
  fc.record({
    graph: fc.constant(graph),
    desired: fc.array(fc.constantFrom(...graph.nodeNames), { minLength: 1, maxLength: 4 }),
    /** Per reconcile: the action finished, the status write was lost (a crash), the start was lost. */
    faults: fc.array(fc.record({ finish: fc.boolean(), lostWrite: fc.boolean(), lostStart: fc.boolean() }), { maxLength: 60 }),
  }),
);

function outboxSequences(status: LifecycleStatus | undefined): number[] {
  return (status?.outbox ?? []).map((e) => e.sequence);
}

describe('lifecycle step properties', () => {
  test('with actions that succeed at once, reaching a node takes exactly its shortest-path number of transitions', () => {
    fc.assert(
      fc.property(graphArb.chain((graph) => fc.record({ graph: fc.constant(graph), desired: fc.constantFrom(...graph.nodeNames) })), ({ graph, desired }) => {
        const sim = new LifecycleSim(graph, desired);
        sim.spec = { ...sim.spec, onLeaf: 'Keep' };
        const distance = sim.model.planner.distance(graph.entry, desired)!;
        for (let i = 0; i < 3 * distance + 3; i++) sim.reconcile();
        expect(sim.status?.state).toBe(desired);
        expect(sim.status?.transition).toBe(distance);
        expect(sim.status?.conditions.find((c) => c.type === 'Ready')?.status).toBe('True');
      }),
    );
  });

  test('under lost writes and lost starts: at most one transition per reconcile, no operation id reused for another node, gap-free event sequence, and convergence once faults stop', () => {
    fc.assert(
      fc.property(walkArb, ({ graph, desired, faults }) => {
        const sim = new LifecycleSim(graph, desired[0]!);
        sim.spec = { ...sim.spec, onLeaf: 'Keep' };
        const nodeOfOperation = new Map<string, string>();
        let desiredIndex = 0;
        for (const [i, fault] of faults.entries()) {
          if (i % 15 === 14 && desiredIndex + 1 < desired.length) sim.setDesired(desired[++desiredIndex]!);
          const before = sim.status?.transition ?? 0;
          const effects = sim.reconcile({ finishRunning: fault.finish, applyWrite: !fault.lostWrite, startOperation: !fault.lostStart });
          const after = sim.status?.transition ?? 0;
          expect(after - before).toBeGreaterThanOrEqual(0);
          expect(after - before).toBeLessThanOrEqual(1);
          if (effects.startOperation) {
            const known = nodeOfOperation.get(effects.startOperation.id);
            if (fault.lostWrite) continue; // a start is only ever made after its write succeeded
            expect(known === undefined || known === effects.startOperation.node).toBe(true);
            nodeOfOperation.set(effects.startOperation.id, effects.startOperation.node);
          }
          const sequences = outboxSequences(sim.status);
          expect(sequences).toEqual(sequences.map((_, k) => k + 1));
          expect(sim.status?.path.at(-1)).toBe(sim.status?.state);
        }
        const target = desired[desiredIndex]!;
        const reachable = sim.model.planner.distance(sim.status?.state ?? graph.entry, target) !== undefined;
        for (let i = 0; i < 4 * graph.nodeNames.length + 4; i++) sim.reconcile();
        if (reachable) expect(sim.status?.state).toBe(target);
        else expect(sim.status?.conditions.find((c) => c.type === 'Stalled')?.reason).toBe('UnreachableState');
        for (const op of sim.started.values()) expect(op.starts).toBe(1);
      }),
    );
  });
});
