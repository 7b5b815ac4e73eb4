import { describe, expect, test } from 'vitest';
import { findCondition } from '../../src/kube/conditions.ts';
import { LIFECYCLE_EVENT_TYPES, type LifecycleEventData } from '../../src/events/types.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { stallGraph, timeoutGraph, WAITING_DEADLINE_MS } from '../fixtures/deadline-graphs.ts';

const DEADLINE_S = WAITING_DEADLINE_MS / 1000;

function conditionOf(sim: LifecycleSim, type: string) {
  return findCondition(sim.status?.conditions ?? [], type);
}

/** The transitions taken by a deadline, as their CloudEvents say. */
function timeouts(sim: LifecycleSim) {
  return sim.events.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.transition && e.data.reason === 'DeadlineExceeded');
}

/** A resource that entered Waiting at t=0 (its clock), its action left as the caller says. */
function enteredWaiting(graph = timeoutGraph, finishAction = true): LifecycleSim {
  const sim = new LifecycleSim(graph, 'Waiting');
  sim.tick = 0;
  sim.reconcile();
  expect(sim.status?.state).toBe('Waiting');
  expect(sim.status?.lastTransition?.time).toBe(sim.time(0));
  sim.clock = 1;
  sim.reconcile({ finishRunning: finishAction });
  return sim;
}

describe('node deadlines in the step', () => {
  test('a resting node takes its timeout edge at the deadline, never before, and is requeued for exactly the time left', () => {
    const sim = enteredWaiting();
    expect(conditionOf(sim, 'Ready')?.status).toBe('True');
    sim.clock = 300;
    expect(sim.reconcile().requeueAfterMs).toBe(300_000);
    sim.clock = DEADLINE_S - 0.001;
    const early = sim.reconcile();
    expect(early.requeueAfterMs).toBe(1);
    expect(sim.status?.state).toBe('Waiting');
    sim.clock = DEADLINE_S;
    const effects = sim.reconcile();
    expect(sim.status?.state).toBe('Expired');
    expect(sim.status?.lastTransition).toMatchObject({ from: 'Waiting', to: 'Expired', events: ['Expired'], time: sim.time(DEADLINE_S) });
    expect(effects.startOperation?.node).toBe('Expired');
    const [timeout] = timeouts(sim);
    expect(timeout?.data.message).toContain('the deadline of Waiting (10m after it was entered at 2026-01-01T00:00:00.000Z) passed at 2026-01-01T00:10:00.000Z');
    // Expired has no deadline: nothing more is scheduled for it.
    sim.clock = DEADLINE_S + 1;
    expect(sim.reconcile({ finishRunning: false }).requeueAfterMs).toBeUndefined();
  });

  test('exactly once: a lost write is recomputed the same, and a restarted operator (a fresh model on the same status) neither resets nor repeats it', () => {
    const sim = enteredWaiting();
    sim.clock = DEADLINE_S + 5;
    const lost = sim.reconcile({ applyWrite: false });
    expect(sim.status?.state).toBe('Waiting');
    sim.upgrade(timeoutGraph); // the operator restarts: nothing of it survives but the resource's status
    const again = sim.reconcile();
    expect(again.status).toEqual(lost.status);
    expect(sim.status?.transition).toBe(2);
    sim.upgrade(timeoutGraph);
    for (let t = DEADLINE_S + 6; t < 3 * DEADLINE_S; t += 60) {
      sim.clock = t;
      sim.reconcile();
    }
    expect(timeouts(sim)).toHaveLength(1);
    expect(sim.status?.path).toEqual(['Start', 'Waiting', 'Expired']);
  });

  test('an operator down across the deadline takes the edge at its first look after it', () => {
    const sim = enteredWaiting();
    sim.upgrade(timeoutGraph);
    sim.clock = 5 * DEADLINE_S;
    sim.reconcile();
    expect(sim.status?.state).toBe('Expired');
    expect(timeouts(sim)).toHaveLength(1);
  });

  test('an action still running at the deadline is cancelled first; once it ended Cancelled, the edge is taken', () => {
    const sim = enteredWaiting(timeoutGraph, false);
    const operation = sim.status?.operation?.id ?? '';
    sim.clock = 120;
    const waiting = sim.reconcile({ finishRunning: false });
    expect(waiting).toMatchObject({ poll: true, requeueAfterMs: 480_000 });
    expect(waiting.cancelOperation).toBeUndefined();
    sim.clock = DEADLINE_S;
    const cancelling = sim.reconcile({ finishRunning: false });
    expect(cancelling.cancelOperation).toBe(operation);
    expect(sim.status?.state).toBe('Waiting');
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'False', reason: 'DeadlineExceeded' });
    expect(conditionOf(sim, 'Ready')?.message).toContain(`its action (operation ${operation}) is cancelled, then it goes to Expired`);
    sim.clock = DEADLINE_S + 1;
    sim.reconcile({ finishRunning: false });
    expect(sim.status?.state).toBe('Expired');
    const types = sim.events.map((e) => [e.type, (e.data as LifecycleEventData).operation?.phase ?? e.data.to]);
    expect(types.slice(-3)).toEqual([
      [LIFECYCLE_EVENT_TYPES.actionFailed, 'Cancelled'],
      [LIFECYCLE_EVENT_TYPES.transition, 'Expired'],
      [LIFECYCLE_EVENT_TYPES.actionStarted, 'Pending'],
    ]);
    expect(timeouts(sim)).toHaveLength(1);
  });

  test('the timeout event is offered alone: it wins over the events the action raised after the deadline', () => {
    const sim = new LifecycleSim(timeoutGraph, 'Waiting', (node) => (node === 'Waiting' ? { events: ['Done'] } : { events: [] }));
    sim.tick = 0;
    sim.reconcile();
    sim.clock = DEADLINE_S;
    sim.reconcile();
    expect(sim.status?.lastTransition).toMatchObject({ from: 'Waiting', to: 'Expired', events: ['Expired'] });
  });

  test('without an edge the deadline stalls with DeadlineExceeded, once, saying how to go on; a new desired node moves on', () => {
    const sim = enteredWaiting(stallGraph);
    sim.clock = DEADLINE_S;
    sim.reconcile();
    expect(sim.status?.state).toBe('Waiting');
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'False', reason: 'DeadlineExceeded' });
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'DeadlineExceeded' });
    expect(conditionOf(sim, 'Stalled')?.message).toContain('the deadline of Waiting (10m after');
    expect(conditionOf(sim, 'Stalled')?.message).toContain('set spec.desiredState to another node to move on');
    sim.clock = DEADLINE_S + 60;
    expect(sim.reconcile()).toEqual({});
    expect(sim.events.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.stalled && e.data.reason === 'DeadlineExceeded')).toHaveLength(1);
    sim.setDesired('Done');
    sim.reconcile();
    expect(sim.status?.state).toBe('Done');
  });

  test('without an edge a running action is cancelled at the deadline, then the resource stalls (no retry policy run, no ActionFailed)', () => {
    const sim = enteredWaiting(stallGraph, false);
    sim.clock = DEADLINE_S;
    expect(sim.reconcile({ finishRunning: false }).cancelOperation).toBe(sim.status?.operation?.id);
    sim.clock = DEADLINE_S + 1;
    const stalled = sim.reconcile({ finishRunning: false });
    expect(stalled.startOperation).toBeUndefined();
    expect(sim.status?.operation?.phase).toBe('Cancelled');
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'DeadlineExceeded' });
  });

  test('an action committed but never started by the deadline is not started: it ends Cancelled and the edge is taken', () => {
    const sim = new LifecycleSim(timeoutGraph, 'Waiting');
    sim.tick = 0;
    sim.reconcile({ startOperation: false });
    sim.clock = DEADLINE_S;
    const effects = sim.reconcile();
    expect(effects.startOperation?.node).toBe('Expired');
    expect(sim.started.has('uid-1-1')).toBe(false);
    expect(sim.status?.state).toBe('Expired');
  });

  test('a pause holds the deadline off (no cancel, no requeue); resumed after it, the edge is taken at once', () => {
    const sim = enteredWaiting(timeoutGraph, false);
    sim.setSpec({ paused: true });
    sim.clock = DEADLINE_S + 10;
    const paused = sim.reconcile({ finishRunning: false });
    expect(paused.cancelOperation).toBeUndefined();
    expect(paused.requeueAfterMs).toBeUndefined();
    sim.reconcile();
    expect(sim.status?.state).toBe('Waiting');
    sim.setSpec({ paused: false });
    sim.reconcile();
    expect(sim.status?.state).toBe('Expired');
  });

  test('deletion holds the deadline off: the resource is driven down its deletion path', () => {
    const sim = enteredWaiting();
    sim.delete();
    sim.clock = DEADLINE_S + 10;
    sim.reconcile();
    expect(sim.status?.lastTransition).toMatchObject({ from: 'Waiting', to: 'Done' });
    expect(timeouts(sim)).toHaveLength(0);
  });
});
