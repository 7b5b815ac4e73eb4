import fc from 'fast-check';
import { expect, test } from 'vitest';
import { DEFAULT_STATE } from '../../src/graph/index.ts';
import { maxTurnsWithin, REST_MS } from '../../src/controller/lifecycle/cycle-brake.ts';
import { graphArb } from '../fixtures/graph-arbitrary.ts';
import { LifecycleSim, type ActionOutcome } from '../fixtures/lifecycle-sim.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

/** How long each world runs: shorter than a rest, so the brake's count never starts again on its own. */
const WINDOW_S = 60;

/**
 * A world that does its worst without touching the spec: each node's action raises any events (node
 * names, DefaultState) or fails, run after run; the probe raises stray events; the sidecar forgets;
 * the operator looks again every few milliseconds or every second.
 */
const worldArb = graphArb.chain((graph) => {
  const event = fc.constantFrom(...graph.nodeNames, DEFAULT_STATE);
  const outcome: fc.Arbitrary<ActionOutcome> = fc.oneof({ weight: 4, arbitrary: fc.array(event, { maxLength: 3 }).map((events) => ({ events })) }, fc.constant({ fail: 'failed' }));
  return fc.record({
    graph: fc.constant(graph),
    desired: fc.constantFrom(...graph.nodeNames),
    /** Per node: the outcomes of its runs, in turn. */
    outcomes: fc.array(fc.array(outcome, { minLength: 1, maxLength: 4 }), { minLength: graph.nodeNames.length, maxLength: graph.nodeNames.length }),
    idempotent: fc.boolean(),
    tick: fc.constantFrom(0.005, 0.05, 0.2, 1),
    /** Per reconcile, taken in turn: a stray event (a node's index), a forgetting sidecar, or nothing. */
    faults: fc.array(fc.oneof({ weight: 8, arbitrary: fc.constant('none' as const) }, fc.constant('forget' as const), fc.nat()), { minLength: 1, maxLength: 50 }),
  });
});

/** Runs one world for WINDOW_S and checks the bound. */
const braked = fc.property(worldArb, ({ graph, desired, outcomes, idempotent, tick, faults }) => {
  const names = graph.nodeNames;
  const sim = new LifecycleSim(graph, desired, (node, run) => { const own = outcomes[names.indexOf(node)]!; return own[(run - 1) % own.length]!; }, () => idempotent);
  sim.spec = { ...sim.spec, onLeaf: 'Keep' };
  sim.tick = tick;
  for (let i = 0; sim.clock < WINDOW_S; i++) {
    const fault = faults[i % faults.length]!;
    if (fault === 'forget') sim.forgetSidecar();
    else if (fault !== 'none') sim.raise(names[fault % names.length]!);
    sim.reconcile();
    sim.deliverAll();
    const operation = sim.status?.operation;
    if (operation?.notBefore !== undefined && operation.phase === 'Pending') {
      expect(sim.status?.conditions.find((c) => c.type === 'CycleBrake')?.status).toBe('True');
    }
  }
  // Every transition turns a cycle but those into nodes the path has not seen: the first visit of each node.
  expect(sim.status!.transition).toBeLessThanOrEqual(2 * maxTurnsWithin(WINDOW_S * 1000) + names.length);
});

test('in any graph and any world, a CR makes no more transitions without a spec edit than the cycle brake allows', () => {
  expect(WINDOW_S * 1000).toBeLessThan(REST_MS);
  fc.assert(braked, { numRuns: fcRuns(60) });
}, 120_000);

test('a world found failing stays a fixed case: a held action whose sidecar forgot was failed as lost, and the cycle turned unbraked (3,000 transitions)', () => {
  fc.assert(braked, { seed: 545949241, path: '25:717:0:0:0:0:0:2:5:3:3:7:5:3:3:3:3:3:3:3:13:12:22:17:13:17:15:13:15:16:15', endOnFailure: true });
});
