import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../src/events/types.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import type { OutboxEntry } from '../../src/kube/lifecycle-resource.ts';
import { predictMigration } from '../../src/plan/index.ts';
import { createLifecycleModel } from '../../src/controller/lifecycle/step.ts';
import { databaseRevision2 as revision2 } from '../fixtures/database-revisions.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';

/** Reconciles `times` times, keeping every event committed on the way (the outbox is pruned once delivered). */
function collect(sim: LifecycleSim, times: number, into: Map<number, OutboxEntry>, options: Parameters<LifecycleSim['reconcile']>[0] = {}): void {
  for (let i = 0; i < times; i++) {
    sim.reconcile(options);
    for (const entry of sim.events) into.set(entry.sequence, entry);
  }
}

const condition = (sim: LifecycleSim, type: string) => findCondition(sim.status?.conditions ?? [], type);

describe('a graph upgraded under a live resource', () => {
  test('a renamed node with its action running: the state, the operation and the condition follow the rename, the operation id is kept, one migrated event', () => {
    const sim = new LifecycleSim(databaseGraph, 'Servicing');
    const events = new Map<number, OutboxEntry>();
    collect(sim, 2, events, { finishRunning: true });
    collect(sim, 1, events, { finishRunning: false });
    expect(sim.status?.state).toBe('Servicing');
    const running = sim.status!.operation!;
    expect(running.phase).toBe('Running');
    const v2 = revision2();
    const transition = sim.status!.transition;
    sim.upgrade(v2);
    collect(sim, 1, events, { finishRunning: false });
    // A rename is no transition: the count, and so the operation ids, stay.
    expect(sim.status).toMatchObject({ state: 'Backup', graphRevision: v2.revision, transition });
    expect(sim.status?.operation).toMatchObject({ id: running.id, node: 'Backup' });
    expect(condition(sim, 'Backup')?.status).toBe('True');
    expect(condition(sim, 'Servicing')).toBeUndefined();
    // Its action, now Backup's, runs at the desired node (desiredState Servicing stands for Backup).
    expect(condition(sim, 'Ready')).toMatchObject({ status: 'False', reason: 'ActionRunning' });
    expect(sim.status?.path.at(-1)).toBe('Backup');
    expect(sim.status?.lastTransition?.to).toBe('Backup');
    const migrated = [...events.values()].filter((e) => e.type === LIFECYCLE_EVENT_TYPES.migrated);
    expect(migrated).toHaveLength(1);
    expect(migrated[0]!.data).toMatchObject({
      graphRevision: v2.revision,
      migration: { fromRevision: databaseGraph.revision, toRevision: v2.revision, fromState: 'Servicing', toState: 'Backup', kind: 'renamed' },
      operation: { id: running.id, node: 'Backup', formerNode: 'Servicing' },
    });
    // spec.desiredState still says Servicing: it stands for Backup, which is reached once the action ends.
    sim.settle();
    expect(sim.status?.state).toBe('Backup');
    expect(condition(sim, 'Ready')).toMatchObject({ status: 'True', reason: 'DesiredStateReached' });
    expect([...sim.started.keys()].filter((id) => id === running.id)).toHaveLength(1);
    expect(sim.started.get(running.id)?.starts).toBe(1);
    const sequences = [...events.keys()];
    expect(sequences).toEqual(sequences.map((_, i) => i + 1));
  });

  test('a renamed node whose action ended while the operator was rolled: the migration and the end in one write, both in the new names', () => {
    const sim = new LifecycleSim(databaseGraph, 'Servicing');
    const events = new Map<number, OutboxEntry>();
    collect(sim, 2, events, { finishRunning: true });
    collect(sim, 1, events, { finishRunning: false });
    const running = sim.status!.operation!;
    expect(running).toMatchObject({ node: 'Servicing', phase: 'Running' });
    const before = sim.status!.sequence;
    const v2 = revision2();
    sim.upgrade(v2);
    // The action ended while no operator ran: the first reconcile of revision 2 sees it over.
    collect(sim, 1, events, { finishRunning: true });
    expect(sim.status).toMatchObject({ state: 'Backup', graphRevision: v2.revision });
    expect(sim.status?.operation).toMatchObject({ id: running.id, node: 'Backup', phase: 'Succeeded' });
    const after = [...events.values()].filter((e) => e.sequence > before);
    expect(after.map((e) => e.type)).toEqual([LIFECYCLE_EVENT_TYPES.migrated, LIFECYCLE_EVENT_TYPES.actionSucceeded, LIFECYCLE_EVENT_TYPES.converged]);
    expect(after.map((e) => e.subject)).toEqual(['Backup', 'Backup', 'Backup']);
    expect(after[1]!.data).toMatchObject({ from: 'Backup', to: 'Backup', operation: { id: running.id, node: 'Backup', phase: 'Succeeded' } });
  });

  test('a removed node mapped to another: the resource enters that node by a transition in the migration\'s write, and its action starts', () => {
    const sim = new LifecycleSim(databaseGraph, 'Stopping');
    const events = new Map<number, OutboxEntry>();
    sim.settle();
    expect(sim.status?.state).toBe('Stopping');
    const v2 = revision2();
    sim.upgrade(v2);
    const before = sim.status!.transition;
    const effects = sim.reconcile();
    for (const entry of sim.events) events.set(entry.sequence, entry);
    expect(sim.status).toMatchObject({ state: 'Draining', graphRevision: v2.revision, transition: before + 1 });
    expect(effects.startOperation).toMatchObject({ node: 'Draining', id: `uid-1-${before + 1}` });
    const types = [...events.values()].slice(-3).map((e) => e.type);
    expect(types).toEqual([LIFECYCLE_EVENT_TYPES.migrated, LIFECYCLE_EVENT_TYPES.transition, LIFECYCLE_EVENT_TYPES.actionStarted]);
    expect(condition(sim, 'Stopping')?.status).toBe('False');
    expect(condition(sim, 'Draining')?.status).toBe('True');
    sim.settle();
    // spec.desiredState Stopping stands for Draining.
    expect(sim.status?.state).toBe('Draining');
    expect(condition(sim, 'Ready')?.status).toBe('True');
  });

  test('a removed node whose action still runs: the resource waits on its revision, then moves once the action ends', () => {
    const sim = new LifecycleSim(databaseGraph, 'Stopping');
    sim.reconcile();
    sim.reconcile();
    sim.reconcile({ finishRunning: false });
    expect(sim.status?.operation).toMatchObject({ node: 'Stopping', phase: 'Running' });
    const stopping = sim.status!.operation!.id;
    const v2 = revision2();
    expect(predictMigration(v2, createLifecycleModel(v2).planner, { revision: sim.status!.graphRevision, state: 'Stopping', desired: 'Stopping', runningAction: 'Stopping' }).kind).toBe('waits');
    sim.upgrade(v2);
    sim.reconcile({ finishRunning: false });
    expect(sim.status).toMatchObject({ state: 'Stopping', graphRevision: databaseGraph.revision });
    sim.reconcile({ finishRunning: true });
    expect(sim.status).toMatchObject({ state: 'Draining', graphRevision: v2.revision });
    expect(sim.started.get(stopping)).toMatchObject({ starts: 1, done: true });
  });

  test('a removed node whose action ended while the operator was rolled: that end is said on the old revision, then the migration and the move on the new one', () => {
    const sim = new LifecycleSim(databaseGraph, 'Stopping');
    const events = new Map<number, OutboxEntry>();
    collect(sim, 2, events);
    collect(sim, 1, events, { finishRunning: false });
    const stopping = sim.status!.operation!;
    expect(stopping).toMatchObject({ node: 'Stopping', phase: 'Running' });
    const before = sim.status!.sequence;
    const v2 = revision2();
    sim.upgrade(v2);
    collect(sim, 1, events, { finishRunning: true });
    expect(sim.status).toMatchObject({ state: 'Draining', graphRevision: v2.revision });
    const written = [...events.values()].filter((e) => e.sequence > before);
    expect(written.map((e) => [e.type, e.subject, e.data.graphRevision])).toEqual([
      [LIFECYCLE_EVENT_TYPES.actionSucceeded, 'Stopping', databaseGraph.revision],
      [LIFECYCLE_EVENT_TYPES.migrated, 'Draining', v2.revision],
      [LIFECYCLE_EVENT_TYPES.transition, 'Draining', v2.revision],
      [LIFECYCLE_EVENT_TYPES.actionStarted, 'Draining', v2.revision],
    ]);
    expect(written[0]!.data.operation).toMatchObject({ id: stopping.id, node: 'Stopping', phase: 'Succeeded' });
  });

  test('a node the migrations refuse: the resource stalls at UnknownState with the reason and what to do; nothing is started', () => {
    const v2 = defineGraph({
      name: 'database', entry: 'Start', previous: [databaseGraph],
      migrations: { removed: { Servicing: { refuse: 'finish the backup on revision 1 first' }, Stopping: 'End' } },
      nodes: { Start: { children: ['Running'] }, Running: { children: ['End'] }, End: {} },
    });
    const sim = new LifecycleSim(databaseGraph, 'Servicing');
    sim.spec = { ...sim.spec, desiredState: 'Servicing' };
    sim.settle();
    sim.upgrade(v2);
    const effects = sim.reconcile();
    expect(effects.startOperation).toBeUndefined();
    expect(condition(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'UnknownState' });
    expect(condition(sim, 'Stalled')?.message).toContain('finish the backup on revision 1 first');
    expect(sim.status?.graphRevision).toBe(databaseGraph.revision);
    // Said on the revision it is stuck on, in that revision's names.
    expect(sim.events.at(-1)).toMatchObject({ type: LIFECYCLE_EVENT_TYPES.stalled, subject: 'Servicing', data: { graphRevision: databaseGraph.revision } });
  });

  test('deletion does not need spec.desiredState to fit the new revision; a stranded deleted resource is released by okt.dev/abandon', () => {
    const v2 = defineGraph({
      name: 'database', entry: 'Start', previous: [databaseGraph],
      migrations: { removed: { Servicing: { refuse: 'gone' }, Stopping: 'End' } },
      nodes: { Start: { children: ['Running'] }, Running: { children: ['End'] }, End: {} },
    });
    const going = new LifecycleSim(databaseGraph, 'Running');
    going.settle();
    going.setDesired('Servicing');
    going.upgrade(v2);
    going.delete();
    going.settle();
    going.deliverAll();
    going.settle();
    expect(going.status?.state).toBe('End');
    expect(going.finished).toBe('removeFinalizer');

    const stuck = new LifecycleSim(databaseGraph, 'Servicing');
    stuck.settle();
    stuck.upgrade(v2);
    stuck.delete();
    stuck.reconcile();
    expect(condition(stuck, 'Stalled')?.message).toMatch(/gone; or annotate okt\.dev\/abandon=true/);
    stuck.abandonRequested = true;
    stuck.settle();
    stuck.deliverAll();
    stuck.settle();
    expect(stuck.finished).toBe('removeFinalizer');
  });

  test('Manual policy: the resource stays on its revision (still driven there) until annotated okt.dev/migrate=true', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    const v2 = revision2('Manual');
    sim.upgrade(v2);
    sim.setDesired('Servicing');
    sim.settle();
    expect(sim.status).toMatchObject({ state: 'Servicing', graphRevision: databaseGraph.revision });
    expect(condition(sim, 'Ready')?.status).toBe('True');
    sim.migrateRequested = true;
    sim.reconcile();
    expect(sim.status).toMatchObject({ state: 'Backup', graphRevision: v2.revision });
  });

  test('Manual policy and a revision the graph does not serve: stalled, saying how to move it', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    const v3 = defineGraph({ name: 'database', entry: 'Start', migrations: { policy: 'Manual' }, nodes: { Start: { children: ['Running'] }, Running: { children: ['End'] }, End: {} } });
    sim.upgrade(v3);
    sim.reconcile();
    expect(condition(sim, 'Stalled')?.message).toMatch(/okt\.dev\/migrate=true/);
  });

  test('a node named Ready is mirrored as node.okt.dev/Ready, beside the kstatus Ready', () => {
    const graph = defineGraph({ name: 'app', entry: 'Start', nodes: { Start: { children: ['Ready'] }, Ready: { children: ['End'] }, End: {} } });
    const sim = new LifecycleSim(graph, 'Ready');
    sim.settle();
    expect(sim.status?.state).toBe('Ready');
    expect(condition(sim, 'node.okt.dev/Ready')).toMatchObject({ status: 'True', reason: 'Entered' });
    expect(condition(sim, 'Ready')).toMatchObject({ status: 'True', reason: 'DesiredStateReached' });
  });
});
