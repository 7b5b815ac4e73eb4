import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../src/events/types.ts';
import type { OutboxEntry } from '../../src/kube/lifecycle-resource.ts';
import { FREE_TURNS, MAX_HOLD_MS, maxTurnsWithin, REST_MS, turnHoldMs } from '../../src/controller/lifecycle/cycle-brake.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { provisioningLoopGraph, provisioningLoopOutcomes } from '../fixtures/cycle-graphs.ts';

/** Reconciles `times` times, delivering each write's events, and returns every event committed. */
function run(sim: LifecycleSim, times: number): OutboxEntry[] {
  const events: OutboxEntry[] = [];
  for (let i = 0; i < times; i++) {
    sim.reconcile();
    events.push(...sim.events.filter((e) => e.sequence > (events.at(-1)?.sequence ?? 0)));
    sim.deliverAll();
  }
  return events;
}

describe('the cycle brake', () => {
  test('holds a CR its action drives round a cycle: exponential holds up to the bound, one condition naming the cycle, one CloudEvent', () => {
    const sim = new LifecycleSim(provisioningLoopGraph, 'Running', provisioningLoopOutcomes);
    sim.tick = 0.01; // a reconcile every 10 ms: the API server's pace
    const events = run(sim, 6_000); // 60 s
    const transitions = sim.status!.transition;
    // Without the brake: one transition per reconcile or two, thousands in a minute.
    expect(transitions).toBeLessThanOrEqual(2 * maxTurnsWithin(60_000) + provisioningLoopGraph.nodeNames.length);
    expect(transitions).toBeGreaterThan(FREE_TURNS);
    const brake = findCondition(sim.status!.conditions, 'CycleBrake');
    expect(brake).toMatchObject({ status: 'True', reason: 'CycleBraked', observedGeneration: 1 });
    expect(brake!.message).toMatch(/the cycle (Provisioning > Failed > Provisioning|Failed > Provisioning > Failed) turned without a spec edit: \d+ turns since generation 1/);
    expect(events.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.braked)).toHaveLength(1);
    expect(events.find((e) => e.type === LIFECYCLE_EVENT_TYPES.braked)?.data).toMatchObject({ reason: 'CycleBraked', turns: FREE_TURNS + 1 });
    // Kubernetes conditions the docs show for kubectl wait still say where the CR is.
    expect(findCondition(sim.status!.conditions, 'Ready')?.status).toBe('False');
    expect(findCondition(sim.status!.conditions, sim.status!.state)?.status).toBe('True');
  });

  test('the holds double from 1 s up to the bound, each after the turn before', () => {
    expect([1, FREE_TURNS, FREE_TURNS + 1, FREE_TURNS + 2, FREE_TURNS + 3, FREE_TURNS + 20].map(turnHoldMs)).toEqual([0, 0, 1_000, 2_000, 4_000, MAX_HOLD_MS]);
    const sim = new LifecycleSim(provisioningLoopGraph, 'Running', provisioningLoopOutcomes);
    sim.tick = 0.01;
    const starts: number[] = [];
    for (let i = 0; i < 30_000; i++) {
      const effects = sim.reconcile();
      if (effects.startOperation !== undefined) starts.push(sim.clock);
    }
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    // Past the free turns, no two actions start closer than the holds allow, and at the bound once a minute.
    expect(Math.min(...gaps.slice(FREE_TURNS + 1))).toBeGreaterThanOrEqual(1 - 0.02);
    expect(gaps.slice(-3).every((gap) => gap >= MAX_HOLD_MS / 1000 - 0.02 && gap <= MAX_HOLD_MS / 1000 + 0.1)).toBe(true);
  });

  test('a spec edit or spec.retry releases the brake: the held action starts at once and the count starts again', () => {
    const sim = new LifecycleSim(provisioningLoopGraph, 'Running', provisioningLoopOutcomes);
    sim.tick = 0.01;
    run(sim, 3_000);
    expect(sim.status!.operation?.notBefore).toBeDefined();
    expect(findCondition(sim.status!.conditions, 'CycleBrake')?.status).toBe('True');
    sim.setSpec({ retry: 'again' });
    const effects = sim.reconcile();
    expect(effects.startOperation?.id).toBe(sim.status!.operation?.id);
    expect(sim.status!.operation?.notBefore).toBeUndefined();
    expect(sim.status!.cycleBrake).toBeUndefined();
    expect(findCondition(sim.status!.conditions, 'CycleBrake')).toBeUndefined();
    const before = sim.status!.transition;
    const events = run(sim, 30); // 0.3 s: the free turns again, then the first hold
    expect(sim.status!.transition - before).toBeGreaterThanOrEqual(FREE_TURNS);
    expect(sim.status!.cycleBrake).toMatchObject({ generation: 2, held: 1 });
    expect(events.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.braked)).toHaveLength(1);
  });

  test('a deadline\'s self-loop turns at its own pace, unbraked', () => {
    const graph = defineGraph({
      name: 'timer',
      entry: 'Start',
      nodes: { Start: { children: ['Polling'] }, Polling: { children: ['Polling', 'End'], deadline: { after: '1s', then: 'Polling' } }, End: {} },
    });
    const sim = new LifecycleSim(graph, 'Polling');
    sim.tick = 0.1;
    run(sim, 1_000); // 100 s: a turn a second
    expect(sim.status!.transition).toBeGreaterThanOrEqual(90);
    expect(sim.status!.cycleBrake).toBeUndefined();
    expect(findCondition(sim.status!.conditions, 'CycleBrake')).toBeUndefined();
  });

  test('a cycle that rests between rounds never waits (a database serviced every few minutes, its service quick)', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    for (let round = 0; round < 20; round++) {
      sim.clock += REST_MS / 1000;
      sim.raise('Servicing');
      sim.settle();
      sim.deliverAll();
      expect(sim.status!.operation?.notBefore).toBeUndefined();
    }
    expect(sim.status!.transition).toBe(41);
    expect(sim.status!.cycleBrake?.turns).toBe(2);
    expect(sim.status!.cycleBrake?.held).toBeUndefined();
    expect(findCondition(sim.status!.conditions, 'CycleBrake')).toBeUndefined();
  });

  test('a braked CR that comes to rest is released at its next look: the condition goes', () => {
    // Provisioning raises Failed on its first 5 runs, then succeeds: the CR reaches Running and rests there.
    const sim = new LifecycleSim(provisioningLoopGraph, 'Running', (node, runs) => (node === 'Provisioning' && runs <= 5 ? { events: ['Failed'] } : { events: [] }));
    sim.tick = 0.05;
    run(sim, 1_200); // 60 s
    expect(sim.status!.state).toBe('Running');
    expect(findCondition(sim.status!.conditions, 'CycleBrake')?.status).toBe('True');
    sim.clock += REST_MS / 1000;
    sim.reconcile();
    expect(sim.status!.cycleBrake).toBeUndefined();
    expect(findCondition(sim.status!.conditions, 'CycleBrake')).toBeUndefined();
    expect(findCondition(sim.status!.conditions, 'Ready')?.status).toBe('True');
  });

  test('the documented bound: 10 turns in a minute', () => {
    expect(maxTurnsWithin(60_000)).toBe(10);
    expect(maxTurnsWithin(0)).toBe(FREE_TURNS + 1);
  });

  test('a status without status.cycleBrake (an earlier okt\'s) has no brake: its path\'s turns count from the next one', () => {
    const sim = new LifecycleSim(provisioningLoopGraph, 'Running', provisioningLoopOutcomes);
    sim.tick = 0.01;
    sim.generation = 3;
    // Twenty turns round the loop, as an okt without the brake left them: no brake state, no hold.
    const path = ['Start', ...Array.from({ length: 10 }, () => ['Provisioning', 'Failed']).flat(), 'Provisioning'];
    run(sim, 1);
    const { cycleBrake: _none, ...earlier } = sim.status!;
    sim.status = { ...earlier, path, transition: path.length - 1, state: 'Provisioning' };
    const before = sim.status.transition;
    run(sim, 20);
    expect(sim.status.transition - before).toBeGreaterThanOrEqual(FREE_TURNS);
    expect(sim.status.cycleBrake).toMatchObject({ generation: 3, held: 1 });
  });

  test('a cycle through the entry node (no action to hold) is braked at its next node, with one CloudEvent', () => {
    const graph = defineGraph({ name: 'restart', entry: 'Start', nodes: { Start: { children: ['Booting'] }, Booting: { triggers: ['Start'], children: ['Up'] }, Up: { children: ['End'] }, End: {} } });
    const sim = new LifecycleSim(graph, 'Up', (node) => (node === 'Booting' ? { events: ['Start'] } : { events: [] }));
    sim.tick = 0.01;
    const events = run(sim, 6_000); // 60 s
    expect(sim.status!.transition).toBeLessThanOrEqual(2 * maxTurnsWithin(60_000) + graph.nodeNames.length);
    expect(events.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.braked)).toHaveLength(1);
    expect(events.find((e) => e.type === LIFECYCLE_EVENT_TYPES.braked)?.subject).toBe('Booting');
  });
});
