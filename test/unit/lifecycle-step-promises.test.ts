// The promises of the pure step when the world misbehaves: a sidecar that forgets, a failed action,
// events raised while nothing may move, deletion, a namespace torn down, a sidecar that refuses.
import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../src/events/types.ts';
import { EpochMemory } from '../../src/controller/lifecycle/epoch-news.ts';
import { LifecycleSim, type ActionOutcome } from '../fixtures/lifecycle-sim.ts';

const conditionOf = (sim: LifecycleSim, type: string) => findCondition(sim.status?.conditions ?? [], type);
const outbox = (sim: LifecycleSim) => sim.events;


/** Servicing fails on its first `failures` runs, every other action succeeds raising nothing. */
const servicingFails = (failures: number) => (node: string, run: number): ActionOutcome => (node === 'Servicing' && run <= failures ? { fail: 'pg_dump: disk full' } : { events: [] });

describe('a sidecar that forgets (a new epoch)', () => {
  test('an idempotent action it lost is started again under the same id, counted in attempts, on the new epoch', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running', undefined, () => true);
    sim.reconcile();
    expect(sim.status?.operation).toMatchObject({ id: 'uid-1-1', epoch: 'epoch-1', phase: 'Pending' });
    sim.forgetSidecar();
    const effects = sim.reconcile({ finishRunning: false });
    expect(effects.status?.conditions).toBeDefined();
    expect(sim.status?.operation).toMatchObject({ id: 'uid-1-1', epoch: 'epoch-2', attempts: 2 });
    expect(sim.started.get('uid-1-1')?.starts).toBe(2);
    sim.settle();
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'True', reason: 'DesiredStateReached' });
  });

  test('a non-idempotent action it lost is never run again: Interrupted, naming the operation and the lost sidecar', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.reconcile();
    sim.forgetSidecar();
    sim.settle();
    expect(sim.started.get('uid-1-1')?.starts).toBe(1);
    expect(sim.status?.operation).toMatchObject({ id: 'uid-1-1', phase: 'Failed', reason: 'Interrupted' });
    const stalled = conditionOf(sim, 'Stalled');
    expect(stalled).toMatchObject({ status: 'True', reason: 'Interrupted' });
    expect(stalled?.message).toContain('operation uid-1-1');
    expect(stalled?.message).toContain('epoch-1');
    expect(stalled?.message).toContain('spec.retry');
    expect(conditionOf(sim, 'Ready')?.status).toBe('False');
    expect(outbox(sim).filter((e) => e.type === LIFECYCLE_EVENT_TYPES.stalled)).toHaveLength(1);
  });

  test('a commit whose start went to no sidecar before the old one vanished is not guessed never-started: Interrupted', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.reconcile({ startOperation: false });
    sim.forgetSidecar();
    sim.settle();
    expect(sim.started.size).toBe(0);
    expect(conditionOf(sim, 'Stalled')?.reason).toBe('Interrupted');
  });

  test('a retry of an interrupted action runs it under a new id; the retry policy never re-runs it by itself', () => {
    const graph = defineGraph({ name: 'g', entry: 'Start', nodes: { Start: { children: ['Work'] }, Work: { children: ['End'], retry: { attempts: 5, backoffMs: 0 } }, End: {} } });
    const sim = new LifecycleSim(graph, 'Work');
    sim.reconcile();
    sim.forgetSidecar();
    sim.settle();
    expect(conditionOf(sim, 'Stalled')?.reason).toBe('Interrupted');
    expect(sim.started.size).toBe(1);
    sim.setSpec({ retry: 'again' });
    sim.settle();
    expect(sim.status?.operation).toMatchObject({ id: 'uid-1-1.1', phase: 'Succeeded', retry: 'again' });
    expect(conditionOf(sim, 'Ready')?.status).toBe('True');
  });
});

describe('events the sidecar observed', () => {
  test('a new resource is not offered what the sidecar observed before it looked', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.raise('Stopping');
    sim.settle();
    expect(sim.status?.state).toBe('Running');
    expect(sim.status?.observedSequence).toBe(1);
    expect(sim.status?.observedEpoch).toBe('epoch-1');
  });

  test('after the sidecar restarts without its journal, its new events are offered although their sequence restarted below the old one', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    for (let i = 0; i < 5; i++) sim.raise('Servicing');
    sim.reconcile();
    expect(sim.status?.state).toBe('Servicing');
    sim.settle();
    expect(sim.status?.state).toBe('Running');
    expect(sim.status?.observedSequence).toBe(5);
    sim.forgetSidecar();
    sim.raise('Stopping');
    sim.reconcile();
    expect(sim.status?.state).toBe('Stopping');
    expect(sim.status).toMatchObject({ observedEpoch: 'epoch-2', observedSequence: 1 });
  });

  test('an event observed while paused or while the outbox is full is offered again later', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.setSpec({ paused: true });
    sim.raise('Stopping');
    sim.settle();
    expect(sim.status?.state).toBe('Running');
    sim.outboxLimit = 1;
    sim.setSpec({ paused: false });
    sim.settle();
    expect(conditionOf(sim, 'Ready')?.reason).toBe('EventsBackpressure');
    expect(sim.status?.state).toBe('Running');
    sim.outboxLimit = 64;
    sim.deliverAll();
    sim.reconcile();
    expect(sim.status?.state).toBe('Stopping');
    expect(sim.status?.lastTransition?.events).toContain('Stopping');
  });

  test('a switch to another sidecar with a life of its own (spec.sidecar.url): what it raised before is not news, what it raises after is', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    const transitions = sim.status?.transition;
    sim.switchSidecar('http://sidecar-2', ['Servicing']);
    sim.settle();
    expect(sim.status).toMatchObject({ state: 'Running', transition: transitions, observedEpoch: 'epoch-2', observedSequence: 1 });
    sim.raise('Servicing');
    sim.reconcile();
    expect(sim.status?.state).toBe('Servicing');
  });

  test('the position chosen on meeting another epoch is recorded at once: a pause and an operator restart keep what came after it', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.setSpec({ paused: true });
    sim.switchSidecar('http://sidecar-2', ['Stopping']);
    sim.settle();
    expect(sim.status).toMatchObject({ state: 'Running', observedEpoch: 'epoch-2', observedSequence: 1 });
    sim.raise('Servicing');
    sim.epochs = new EpochMemory();
    sim.setSpec({ paused: false });
    sim.reconcile();
    expect(sim.status?.state).toBe('Servicing');
    expect(sim.status?.lastTransition?.events).not.toContain('Stopping');
  });

  test('two replicas behind one URL: each is read on from where the resource left it, no event twice', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    const replicaA = { epoch: sim.sidecarEpoch, bornAt: sim.sidecarBornAt, events: sim.probeEvents };
    sim.switchSidecar(sim.sidecarUrl, ['Stopping']); // replica B, older than the resource's last look
    sim.settle();
    expect(sim.status).toMatchObject({ state: 'Running', transition: 1 });
    // Back on A, which raised an event while the resource read B: news, once.
    replicaA.events.push({ seq: replicaA.events.length + 1, event: 'Servicing' });
    Object.assign(sim, { sidecarEpoch: replicaA.epoch, sidecarBornAt: replicaA.bornAt, probeEvents: replicaA.events });
    sim.reconcile();
    expect(sim.status?.state).toBe('Servicing');
    sim.settle();
    expect(sim.status?.state).toBe('Running');
    expect(sim.status?.transition).toBe(3);
  });

  test('a trigger raised by the action wins over an unreachable desired node', () => {
    const graph = defineGraph({
      name: 'g',
      entry: 'A',
      nodes: { A: { children: ['B'] }, B: { triggers: ['Err'], children: ['C'] }, C: { children: ['End'] }, Err: { children: ['End'] }, End: {} },
    });
    const sim = new LifecycleSim(graph, 'B', (node) => (node === 'B' ? { events: ['Err'] } : { events: [] }));
    sim.reconcile();
    sim.reconcile({ finishRunning: false });
    sim.setDesired('A'); // unreachable from B
    sim.reconcile();
    expect(sim.status?.state).toBe('Err');
    expect(conditionOf(sim, 'Stalled')?.reason).not.toBe('UnreachableState');
  });
});

describe('Ready never over a failed action', () => {
  test('a spec edit that keeps desiredState (paused toggled) leaves a failed action stalled: no Ready, no converged event', () => {
    const sim = new LifecycleSim(databaseGraph, 'Servicing', servicingFails(1));
    sim.spec = { ...sim.spec, onLeaf: 'Keep' };
    sim.settle();
    expect(conditionOf(sim, 'Stalled')?.reason).toBe('ActionFailed');
    for (const paused of [true, false]) {
      sim.setSpec({ paused });
      sim.settle();
    }
    expect(conditionOf(sim, 'Ready')?.status).toBe('False');
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });
    expect(sim.status?.operation?.phase).toBe('Failed');
    expect(outbox(sim).filter((e) => e.type === LIFECYCLE_EVENT_TYPES.converged && e.subject === 'Servicing')).toHaveLength(0);
  });

  test('a new spec.retry runs the failed action again under a new operation id, then Ready', () => {
    const sim = new LifecycleSim(databaseGraph, 'Servicing', servicingFails(1));
    sim.settle();
    const failed = sim.status!.operation!.id;
    expect(conditionOf(sim, 'Stalled')?.message).toContain('set spec.retry to a new value');
    sim.setSpec({ retry: '1' });
    const effects = sim.reconcile({ finishRunning: false });
    expect(effects.startOperation?.id).toBe(`${failed}.1`);
    expect(outbox(sim).at(-1)).toMatchObject({ type: LIFECYCLE_EVENT_TYPES.actionStarted, data: { reason: 'ActionRetrying' } });
    sim.settle();
    expect(sim.status?.operation).toMatchObject({ id: `${failed}.1`, phase: 'Succeeded', retries: 1, retry: '1' });
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'True', reason: 'DesiredStateReached' });
    // The same value again is no new request.
    sim.setSpec({ paused: false });
    expect(sim.reconcile().startOperation).toBeUndefined();
  });

  test('a retry policy runs the action again after its backoff, doubling, then stalls when its attempts are spent', () => {
    const graph = defineGraph({ name: 'g', entry: 'Start', nodes: { Start: { children: ['Work'] }, Work: { children: ['End'], retry: { attempts: 3, backoffMs: 4_000 } }, End: {} } });
    const sim = new LifecycleSim(graph, 'Work', () => ({ fail: 'flaky' }));
    sim.reconcile();
    const waiting = sim.reconcile();
    expect(conditionOf(sim, 'Ready')?.reason).toBe('ActionRetrying');
    expect(conditionOf(sim, 'Stalled')?.status).toBe('False');
    expect(waiting.requeueAfterMs).toBe(4_000);
    sim.clock += 4;
    expect(sim.reconcile().startOperation?.id).toBe('uid-1-1.1');
    expect(sim.reconcile().requeueAfterMs).toBe(8_000);
    sim.clock += 8;
    expect(sim.reconcile().startOperation?.id).toBe('uid-1-1.2');
    sim.reconcile();
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });
    expect(conditionOf(sim, 'Stalled')?.message).toContain('after 3 runs');
    expect(sim.started.size).toBe(3);
  });

  test('moving on from a failed action takes a new desiredState; the failure on the way is not skipped by another edit', () => {
    const sim = new LifecycleSim(databaseGraph, 'Servicing', servicingFails(9));
    sim.spec = { ...sim.spec, desiredState: 'End', onLeaf: 'Keep' };
    sim.settle();
    expect(sim.status?.state).toBe('Servicing');
    expect(conditionOf(sim, 'Stalled')?.reason).toBe('ActionFailed');
    sim.setSpec({ paused: false });
    sim.settle();
    expect(sim.status?.state).toBe('Servicing');
    sim.setDesired('Running');
    sim.settle();
    expect(sim.status?.state).toBe('Running');
    expect(conditionOf(sim, 'Ready')?.status).toBe('True');
  });

  test('desiredState moved to the node whose action failed: still not Ready', () => {
    const sim = new LifecycleSim(databaseGraph, 'End', servicingFails(9));
    sim.settle();
    expect(sim.status?.state).toBe('Servicing');
    sim.setDesired('Servicing');
    sim.settle();
    expect(conditionOf(sim, 'Ready')?.status).toBe('False');
  });
});

describe('deletion', () => {
  test('a cancellable running action is cancelled when deletion starts, then the default path goes on', () => {
    const graph = defineGraph({
      name: 'db',
      entry: 'Start',
      nodes: { Start: { children: ['Running'] }, Running: { children: ['Backup', 'Stopping'] }, Backup: { children: ['Running', 'Stopping'], cancellable: true }, Stopping: { children: ['End'] }, End: {} },
    });
    const sim = new LifecycleSim(graph, 'Backup');
    sim.settle();
    sim.setDesired('Running');
    sim.settle();
    sim.setDesired('Backup');
    sim.reconcile();
    expect(sim.status?.state).toBe('Backup');
    sim.delete();
    const effects = sim.reconcile({ finishRunning: false });
    expect(effects.cancelOperation).toBe(sim.status?.operation?.id);
    sim.settle();
    expect(sim.status?.path.slice(-3)).toEqual(['Backup', 'Stopping', 'End']);
    sim.deliverAll();
    sim.reconcile();
    expect(sim.finished).toBe('removeFinalizer');
  });

  test('a resource deleted at its entry node is released with no transition and nothing run, paused or not, with a refused sidecar, and over an event that would move it', () => {
    const worlds: { name: string; spec: { desiredState: string; paused?: boolean }; refused?: boolean }[] = [
      { name: 'paused on the way to Running', spec: { desiredState: 'Running', paused: true } },
      { name: 'resting at Start', spec: { desiredState: 'Start' } },
      { name: 'its sidecar refused', spec: { desiredState: 'Running' }, refused: true },
    ];
    for (const world of worlds) {
      const sim = new LifecycleSim(databaseGraph, world.spec.desiredState);
      sim.spec = { ...sim.spec, ...world.spec };
      if (world.refused) sim.sidecarRefusal = { reason: 'SidecarNotAllowed', message: 'not on the allow-list' };
      sim.settle();
      expect(sim.status?.state, world.name).toBe('Start');
      sim.raise('Running'); // the sidecar observed an event naming the entry's child
      sim.delete();
      for (let i = 0; i < 5 && sim.finished === undefined; i++) {
        sim.reconcile();
        sim.deliverAll();
      }
      expect(sim.finished, world.name).toBe('removeFinalizer');
      expect(sim.status?.transition, world.name).toBe(0);
      expect(sim.status?.path, world.name).toEqual(['Start']);
      expect([...sim.started.keys()], world.name).toEqual([]);
      expect(sim.events.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.transition), world.name).toEqual([]);
    }
  });

  test('an entry node that declares onDelete is left that way, even when it names its default child', () => {
    const graph = defineGraph({
      name: 'database',
      entry: 'Start',
      nodes: { Start: { children: ['Running'], onDelete: 'Running' }, Running: { children: ['Stopping'] }, Stopping: { children: ['End'] }, End: {} },
    });
    const sim = new LifecycleSim(graph, 'Start');
    sim.settle();
    sim.delete();
    for (let i = 0; i < 10 && sim.finished === undefined; i++) {
      sim.reconcile();
      sim.deliverAll();
    }
    expect(sim.finished).toBe('removeFinalizer');
    expect(sim.status?.path).toEqual(['Start', 'Running', 'Stopping', 'End']);
    expect([...sim.started.values()].map((op) => op.node)).toEqual(['Running', 'Stopping']);
  });

  test('a paused resource being deleted waits (Paused): no transition, its cancellable action not cancelled; resumed, it is driven down', () => {
    const graph = defineGraph({
      name: 'db',
      entry: 'Start',
      nodes: { Start: { children: ['Running'] }, Running: { children: ['Backup', 'Stopping'] }, Backup: { children: ['Running', 'Stopping'], cancellable: true }, Stopping: { children: ['End'] }, End: {} },
    });
    const sim = new LifecycleSim(graph, 'Backup');
    sim.reconcile();
    sim.reconcile({ finishRunning: true }); // Running's action done: Backup entered, its action runs
    expect(sim.status?.state).toBe('Backup');
    sim.setSpec({ paused: true });
    sim.delete();
    const transition = sim.status!.transition;
    for (let i = 0; i < 3; i++) expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBeUndefined();
    sim.reconcile(); // the action ends on its own: still no move
    for (let i = 0; i < 3; i++) sim.reconcile();
    expect(sim.status?.transition).toBe(transition);
    expect(sim.finished).toBeUndefined();
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'False', reason: 'Paused' });
    expect(conditionOf(sim, 'Ready')?.message).toBe(
      "spec.paused is true: no transition is taken, the deletion's included; set spec.paused to false to drive the application down to End, or annotate okt.dev/abandon=true to release the resource without it",
    );
    sim.setSpec({ paused: false });
    for (let i = 0; i < 10 && sim.finished === undefined; i++) {
      sim.reconcile();
      sim.deliverAll();
    }
    expect(sim.finished).toBe('removeFinalizer');
    expect(sim.status?.path.slice(-3)).toEqual(['Backup', 'Stopping', 'End']);
  });

  test('a node that declares onDelete is left that way', () => {
    const graph = defineGraph({
      name: 'g',
      entry: 'Start',
      nodes: { Start: { children: ['Serving'] }, Serving: { children: ['Drain', 'Crash'], onDelete: 'Drain' }, Drain: { children: ['End'] }, Crash: { children: ['End'] }, End: {} },
    });
    const sim = new LifecycleSim(graph, 'Serving');
    sim.settle();
    sim.delete();
    sim.settle();
    expect(sim.status?.path).toEqual(['Start', 'Serving', 'Drain', 'End']);
  });

  test('a namespace torn down with its sidecar: the finalizer goes after the grace period, with a stalled event saying what was abandoned', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.tick = 10;
    sim.settle();
    sim.delete();
    sim.namespaceTerminating = true;
    sim.sidecarDown = true;
    sim.reconcile();
    expect(conditionOf(sim, 'Ready')?.reason).toBe('SidecarUnavailable');
    expect(sim.finished).toBeUndefined();
    for (let i = 0; i < 6 && conditionOf(sim, 'Stalled')?.status !== 'True'; i++) sim.reconcile();
    const stalled = conditionOf(sim, 'Stalled');
    expect(stalled?.reason).toBe('DeletionAbandoned');
    expect(stalled?.message).toContain('namespace is terminating');
    expect(stalled?.message).toContain('not driven to End');
    expect(outbox(sim).at(-1)).toMatchObject({ type: LIFECYCLE_EVENT_TYPES.stalled, data: { reason: 'DeletionAbandoned' } });
    sim.deliverAll();
    sim.reconcile();
    expect(sim.finished).toBe('removeFinalizer');
  });

  test('the teardown message counts the grace from the deletion, as the rule does: it claims no silence of the sidecar it did not measure', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.delete();
    sim.reconcile({ finishRunning: false }); // Stopping's action runs: the sidecar answers, the deletion waits for it
    expect(sim.status?.state).toBe('Stopping');
    sim.clock = 90; // the sidecar answered until now; the namespace is torn down with it
    sim.namespaceTerminating = true;
    sim.sidecarDown = true;
    sim.reconcile({ finishRunning: false });
    expect(conditionOf(sim, 'Stalled')?.message).toBe(
      'deletion abandoned at Stopping, its namespace is terminating, its sidecar does not answer (connection refused) and the teardown grace of 60 s since the deletion at 2026-01-01T00:00:02.000Z has passed: the application was not driven to End (operation uid-1-2 may still run)',
    );
  });

  test('the abandon annotation releases a deleted resource at once, once its stalled event is out', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.delete();
    sim.abandonRequested = true;
    sim.reconcile();
    expect(conditionOf(sim, 'Stalled')?.reason).toBe('DeletionAbandoned');
    sim.deliverAll();
    // Abandoned: the reconciler asks for its objects' deletions and waits for none of them.
    expect(sim.reconcile()).toMatchObject({ finish: 'removeFinalizer', abandoned: true });
  });

  test('a deletion driven down to its end waits for its objects to be gone (the finish is not abandoned)', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.delete();
    let last: ReturnType<LifecycleSim['reconcile']> | undefined;
    for (let i = 0; i < 10 && sim.finished === undefined; i++) {
      last = sim.reconcile();
      sim.deliverAll();
    }
    expect(last?.finish).toBe('removeFinalizer');
    expect(last?.abandoned).toBeUndefined();
  });

  test('a leaf whose last write is due with every event already delivered ends at once (again), not at the next poll', () => {
    const sim = new LifecycleSim(databaseGraph, 'End');
    sim.settle();
    sim.deliverAll();
    sim.setSpec({ paused: false });
    const effects = sim.reconcile();
    expect(effects.status).toBeDefined();
    expect(effects.again).toBe(true);
    expect(effects.poll).toBeUndefined();
  });
});

describe('what events say', () => {
  test('data.desired is spec.desiredState on action.succeeded, action.failed and stalled events', () => {
    const sim = new LifecycleSim(databaseGraph, 'End', servicingFails(1));
    sim.settle();
    const byType = (type: string) => outbox(sim).filter((e) => e.type === type);
    for (const type of [LIFECYCLE_EVENT_TYPES.actionSucceeded, LIFECYCLE_EVENT_TYPES.actionFailed, LIFECYCLE_EVENT_TYPES.stalled]) {
      expect(byType(type).length, type).toBeGreaterThan(0);
      for (const event of byType(type)) expect(event.data.desired, type).toBe('End');
    }
  });
});

describe('the sidecar refuses or is missing', () => {
  test('no action is committed while the sidecar does not answer: SidecarUnavailable, nothing started', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.sidecarDown = true;
    const effects = sim.reconcile();
    expect(sim.status?.state).toBe('Start');
    expect(effects.startOperation).toBeUndefined();
    expect(conditionOf(sim, 'Ready')?.reason).toBe('SidecarUnavailable');
  });

  test('a refused start is said on the CR (waiting when busy, stalled when misconfigured) and tried again after its delay', () => {
    for (const refusal of [
      { reason: 'SidecarBusy', stall: false, retryAfterMs: 5_000 },
      { reason: 'SidecarRefused', stall: true, retryAfterMs: 60_000 },
    ]) {
      const sim = new LifecycleSim(databaseGraph, 'Running');
      sim.reconcile({ startOperation: false });
      const id = sim.status!.operation!.id;
      const effects = sim.reconcile({ finishRunning: false, startOperation: false, startRefused: { operation: id, message: 'no', ...refusal } });
      expect(effects.startOperation?.id).toBe(id);
      expect(effects.requeueAfterMs).toBe(refusal.retryAfterMs);
      expect(conditionOf(sim, 'Ready')?.reason).toBe(refusal.reason);
      expect(conditionOf(sim, 'Stalled')?.status).toBe(refusal.stall ? 'True' : 'False');
    }
  });
});
