import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import type { LifecycleStatus } from '../../src/kube/lifecycle-resource.ts';
import type { Graph } from '../../src/graph/index.ts';
import type { StepEffects } from '../../src/controller/lifecycle/step.ts';
import { inStatusFormat } from '../../src/controller/lifecycle/status/lean-format.ts';
import { isCompactStatus } from '../../src/controller/lifecycle/status/compact-format.ts';
import { isPackedStatus, unpackStatus } from '../../src/controller/lifecycle/status/packed-format.ts';
import { PACKED_FIELD, STATUS_FORMATS, UNPACKED_FIELDS } from '../../src/kube/status-format.ts';
import { graphArb } from '../fixtures/graph-arbitrary.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

const walkArb = graphArb.chain((graph) =>
  fc.record({
    graph: fc.constant(graph),
    desired: fc.array(fc.constantFrom(...graph.nodeNames), { minLength: 1, maxLength: 4 }),
    /** Per reconcile: the action finished, the status write was lost (a crash), the start was lost. */
    faults: fc.array(fc.record({ finish: fc.boolean(), lostWrite: fc.boolean(), lostStart: fc.boolean() }), { maxLength: 60 }),
  }),
);


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
          const sequences = sim.events.map((e) => e.sequence);
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

/** One reconcile under one fault the world may produce. */
const faultArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: 'none' as const }) },
  fc.record({ kind: fc.constant('forget' as const) }),
  fc.record({ kind: fc.constant('lostWrite' as const) }),
  fc.record({ kind: fc.constant('lostStart' as const) }),
  fc.record({ kind: fc.constant('raise' as const), event: fc.nat() }),
  fc.record({ kind: fc.constant('pause' as const), paused: fc.boolean() }),
  fc.record({ kind: fc.constant('retry' as const) }),
  fc.record({ kind: fc.constant('desire' as const), node: fc.nat() }),
  fc.record({ kind: fc.constant('stillRunning' as const) }),
);

const worldArb = graphArb.chain((graph) =>
  fc.record({
    graph: fc.constant(graph),
    idempotent: fc.boolean(),
    /** Per node index: how many of its first runs fail. */
    failures: fc.array(fc.nat({ max: 2 }), { minLength: graph.nodeNames.length, maxLength: graph.nodeNames.length }),
    faults: fc.array(faultArb, { maxLength: 80 }),
  }),
);

function isReady(status: LifecycleStatus | undefined): boolean {
  return status?.conditions.find((c) => c.type === 'Ready')?.status === 'True';
}

/** `status` with its conditions in the order of their types. */
function ordered<S extends { conditions: readonly { type: string }[] }>(status: S | undefined): S | undefined {
  return status === undefined ? undefined : { ...status, conditions: [...status.conditions].sort((a, b) => a.type.localeCompare(b.type)) };
}

type Fault = typeof faultArb extends fc.Arbitrary<infer F> ? F : never;

/** A world of worldArb's: its sidecar's actions fail as `failures` says, idempotent or not. */
function worldSim({ graph, idempotent, failures }: { graph: Graph; idempotent: boolean; failures: number[] }): LifecycleSim {
  const names = graph.nodeNames;
  const sim = new LifecycleSim(graph, names[names.length - 1]!, (node, run) => (run <= failures[names.indexOf(node)]! ? { fail: 'transient' } : { events: [] }), () => idempotent);
  sim.spec = { ...sim.spec, onLeaf: 'Keep' };
  return sim;
}

/** One reconcile of `sim` under `fault` (`retryToken`: the spec.retry value a retry fault sets). */
function reconcileUnder(sim: LifecycleSim, fault: Fault, retryToken: number): StepEffects {
  const names = sim.model.graph.nodeNames;
  switch (fault.kind) {
    case 'forget':
      sim.forgetSidecar();
      break;
    case 'raise':
      sim.raise(names[fault.event % names.length]!);
      break;
    case 'pause':
      sim.setSpec({ paused: fault.paused });
      break;
    case 'retry':
      sim.setSpec({ retry: String(retryToken) });
      break;
    case 'desire':
      sim.setDesired(names[fault.node % names.length]!);
      break;
  }
  return sim.reconcile({ finishRunning: fault.kind !== 'stillRunning', applyWrite: fault.kind !== 'lostWrite', startOperation: fault.kind !== 'lostStart' });
}

describe('lifecycle step promises under a misbehaving world', () => {
  test('a sidecar that forgets, failing actions, retries, pauses and stray events: no action run twice unless idempotent and forgotten, Ready only at the desired node over a succeeded action, at most one move per reconcile', () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const { idempotent, faults } = world;
        const sim = worldSim(world);
        /** Per operation id: how many times a sidecar forgot it while status held it unfinished. */
        const forgotten = new Map<string, number>();
        for (const [i, fault] of faults.entries()) {
          if (fault.kind === 'forget') {
            // Its fate is unknown to the operator while status still holds it unfinished.
            const op = sim.status?.operation;
            if (op !== undefined && !['Succeeded', 'Failed', 'Cancelled'].includes(op.phase)) forgotten.set(op.id, (forgotten.get(op.id) ?? 0) + 1);
          }
          const before = sim.status?.transition ?? 0;
          reconcileUnder(sim, fault, i);
          const moved = (sim.status?.transition ?? 0) - before;
          expect(moved).toBeGreaterThanOrEqual(0);
          expect(moved).toBeLessThanOrEqual(1);
          if (isReady(sim.status)) {
            expect(sim.status?.state).toBe(sim.spec.desiredState);
            const op = sim.status?.operation;
            if (op !== undefined) expect(op.phase).toBe('Succeeded');
          }
          const sequences = sim.events.map((e) => e.sequence);
          expect(sequences).toEqual(sequences.map((_, k) => k + 1));
        }
        for (const [id, op] of sim.started) {
          const allowed = idempotent ? 1 + (forgotten.get(id) ?? 0) : 1;
          expect(op.starts, `runs of ${id}`).toBeLessThanOrEqual(allowed);
        }
      }),
      { numRuns: fcRuns(2000) },
    );
  });

  test('the lean status format changes no decision: in the same world, lean and full take the same steps, start the same actions and emit the same events; lean writes what full writes, less what it leaves out', () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const full = worldSim(world);
        const lean = worldSim(world);
        lean.statusFormat = 'lean';
        for (const [i, fault] of world.faults.entries()) {
          const { status: fullStatus, ...fullEffects } = reconcileUnder(full, fault, i);
          const { status: leanStatus, ...leanEffects } = reconcileUnder(lean, fault, i);
          expect(leanEffects).toEqual(fullEffects);
          // Conditions are a map keyed by type (the CRD's list-map): lean may hold them in another order.
          expect(ordered(leanStatus)).toEqual(fullStatus === undefined ? undefined : ordered(inStatusFormat(fullStatus, 'lean')));
          expect(lean.events).toEqual(full.events);
          for (const c of lean.status?.conditions ?? []) {
            expect(c.status === 'False' && (c.type === 'Reconciling' || c.type === 'Stalled' || c.reason === 'Left'), `${c.type} ${c.status} ${c.reason}`).toBe(false);
          }
          const op = lean.status?.operation;
          if (op?.phase === 'Succeeded') expect([op.epoch, op.startedAt, op.desiredAtStart]).toEqual([undefined, undefined, undefined]);
        }
        expect([...lean.started]).toEqual([...full.started]);
      }),
      { numRuns: fcRuns(1000) },
    );
  });

  test('the compact format is an encoding of lean: in the same world, compact and lean take the same steps and emit the same events; every status the engine writes is stored compact and read back as exactly the lean one', () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const lean = worldSim(world);
        lean.statusFormat = 'lean';
        const compact = worldSim(world);
        compact.statusFormat = 'compact';
        for (const [i, fault] of world.faults.entries()) {
          const leanEffects = reconcileUnder(lean, fault, i);
          const compactEffects = reconcileUnder(compact, fault, i);
          expect(compactEffects).toEqual(leanEffects);
          // What the reader rebuilds from the stored compact status is what lean stores.
          expect(compact.status).toEqual(lean.status);
          expect(compact.events).toEqual(lean.events);
          if (compact.stored === undefined) continue;
          const stored = JSON.parse(compact.stored) as Record<string, unknown>;
          if (!('state' in stored)) continue;
          expect(isCompactStatus(stored), compact.stored).toBe(true);
          expect(compact.stored.length).toBeLessThan(lean.stored!.length);
        }
        expect([...compact.started]).toEqual([...lean.started]);
        expect(compact.writes).toBe(lean.writes);
      }),
      { numRuns: fcRuns(1000) },
    );
  });

  test('the packed format is an encoding of compact: in the same world, packed and compact take the same steps, emit the same events and write as often; every status the engine writes is stored with only what kubectl reads beside the packed string, and read back as exactly the lean one', () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const compact = worldSim(world);
        compact.statusFormat = 'compact';
        const packed = worldSim(world);
        packed.statusFormat = 'packed';
        for (const [i, fault] of world.faults.entries()) {
          const compactEffects = reconcileUnder(compact, fault, i);
          const packedEffects = reconcileUnder(packed, fault, i);
          expect(packedEffects).toEqual(compactEffects);
          expect(packed.status).toEqual(compact.status);
          expect(packed.events).toEqual(compact.events);
          if (packed.stored === undefined) continue;
          const stored = JSON.parse(packed.stored) as Record<string, unknown>;
          if (!('state' in stored)) continue;
          expect(isPackedStatus(stored), packed.stored).toBe(true);
          expect(Object.keys(stored).filter((key) => key !== PACKED_FIELD && !(UNPACKED_FIELDS as readonly string[]).includes(key)), packed.stored).toEqual([]);
          expect(unpackStatus(stored)).toEqual(JSON.parse(compact.stored!));
        }
        expect([...packed.started]).toEqual([...compact.started]);
        expect(packed.writes).toBe(compact.writes);
      }),
      { numRuns: fcRuns(1000) },
    );
  });

  test('in either format, every condition okt writes carries the generation its write was judged at, and a condition whose status stays keeps its lastTransitionTime', () => {
    fc.assert(
      fc.property(worldArb, fc.constantFrom(...STATUS_FORMATS), (world, format) => {
        const sim = worldSim(world);
        sim.statusFormat = format;
        for (const [i, fault] of world.faults.entries()) {
          const before = new Map((sim.status?.conditions ?? []).map((c) => [c.type, c]));
          reconcileUnder(sim, fault, i);
          const status = sim.status;
          if (status === undefined) continue;
          for (const c of status.conditions) {
            expect(c.observedGeneration, `${c.type} ${c.status} ${c.reason}`).toBe(status.observedGeneration);
            const was = before.get(c.type);
            if (was?.status === c.status) expect(c.lastTransitionTime, c.type).toBe(was.lastTransitionTime);
          }
        }
      }),
      { numRuns: fcRuns(500) },
    );
  });

  test('a CR stalled on a failed action by an okt that did not record the node it failed for (before a1de124) is not moved on without a spec edit, in any world', () => {
    fc.assert(
      fc.property(worldArb, (world) => {
        const sim = worldSim(world);
        for (const [i, fault] of world.faults.entries()) {
          reconcileUnder(sim, fault, i);
          const status = sim.status;
          const stalled = status?.conditions.find((c) => c.type === 'Stalled');
          if (status?.operation === undefined || stalled?.status !== 'True' || stalled.reason !== 'ActionFailed' || status.observedGeneration !== sim.generation) continue;
          // An event the sidecar raised since still moves it (a trigger wins over a failure, as always).
          const since = status.observedEpoch === sim.sidecarEpoch ? (status.observedSequence ?? 0) : 0;
          const news = status.observedEpoch !== undefined && sim.probeEvents.some((e) => e.seq > since);
          if (news) continue;
          // As the older okt stored it.
          const { desired: _desired, ...older } = status.operation;
          sim.status = { ...status, operation: older };
          const effects = sim.reconcile();
          expect(sim.status.transition).toBe(status.transition);
          expect(effects.startOperation).toBeUndefined();
        }
      }),
      { numRuns: fcRuns(500) },
    );
  });

  test('deletion from any node drives the application down the deletion path (default child, node after node; none from the entry node), running exactly those actions, even when the sidecar forgets on the way; paused, it waits until resumed unless nothing is left to do', () => {
    fc.assert(
      fc.property(
        graphArb.chain((graph) => fc.record({ graph: fc.constant(graph), from: fc.constantFrom(...graph.nodeNames), forgets: fc.array(fc.boolean(), { maxLength: 20 }), paused: fc.boolean() })),
        ({ graph, from, forgets, paused }) => {
          const sim = new LifecycleSim(graph, from, () => ({ events: [] }), () => true);
          sim.spec = { ...sim.spec, onLeaf: 'Keep' };
          for (let i = 0; i < 4 * graph.nodeNames.length + 4; i++) sim.reconcile();
          expect(sim.status?.state).toBe(from);
          const ranBefore = new Set(sim.started.keys());
          const transitionAtDeletion = sim.status!.transition;
          if (paused) sim.setSpec({ paused: true });
          sim.delete();
          const expected: string[] = [];
          for (let at = graph.node(from); at.deletionChild !== undefined; at = graph.node(at.deletionChild)) expected.push(at.deletionChild);
          if (from === graph.entry) expect(expected).toEqual([]);
          if (paused) {
            for (let i = 0; i < 4 * graph.nodeNames.length + 4 && sim.finished === undefined; i++) {
              sim.reconcile();
              sim.deliverAll();
            }
            // The pause holds every transition of the deletion; where none is left to take, the resource goes.
            expect(sim.status!.transition).toBe(transitionAtDeletion);
            expect(sim.finished).toBe(expected.length === 0 ? 'removeFinalizer' : undefined);
            expect([...sim.started.keys()].filter((id) => !ranBefore.has(id))).toEqual([]);
            sim.setSpec({ paused: false });
          }
          for (const forget of forgets) {
            if (forget) sim.forgetSidecar();
            sim.reconcile({ finishRunning: false });
          }
          for (let i = 0; i < 4 * graph.nodeNames.length + 4 && sim.finished === undefined; i++) {
            sim.reconcile();
            sim.deliverAll();
          }
          expect(sim.finished).toBe('removeFinalizer');
          expect(sim.status?.path.slice(-expected.length - 1)).toEqual([from, ...expected]);
          expect(sim.status!.transition - transitionAtDeletion).toBe(expected.length);
          const ranAfter = [...sim.started.entries()].filter(([id]) => !ranBefore.has(id)).map(([, op]) => op.node);
          expect(ranAfter).toEqual(expected.filter((node) => graph.node(node).hasAction));
        },
      ),
    );
  });
});
