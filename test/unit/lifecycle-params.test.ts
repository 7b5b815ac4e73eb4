// Typed parameters in the pure step: recorded with the operation and passed to the sidecar, a change
// re-runs a node's action only where the node says so (onParamsChange: Rerun), and values that do not
// fit the node's schema stall the resource before anything starts.
import { describe, expect, test } from 'vitest';
import { findCondition } from '../../src/kube/conditions.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../src/events/types.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { brokerGraph } from '../fixtures/params-graphs.ts';

const conditionOf = (sim: LifecycleSim, type: string) => findCondition(sim.status?.conditions ?? [], type);
const runsOf = (sim: LifecycleSim, node: string) => [...sim.started.entries()].filter(([, op]) => op.node === node);
const startedEvents = (sim: LifecycleSim) => sim.events.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.actionStarted);

/** A broker Ready at Running with `replicas`, every event delivered. */
function readyAtRunning(params: Record<string, unknown> = { replicas: 2 }, changes: Parameters<typeof brokerGraph>[0] = {}): LifecycleSim {
  const sim = new LifecycleSim(brokerGraph(changes), 'Running');
  sim.setSpec({ params });
  sim.settle();
  expect(conditionOf(sim, 'Ready')?.status).toBe('True');
  sim.deliverAll();
  return sim;
}

describe('parameters reach the action and are recorded with it', () => {
  test("the graph's parameters, defaults filled in, are committed with the operation and sent with its start", () => {
    const sim = readyAtRunning({});
    expect(sim.status?.operation).toMatchObject({ node: 'Running', phase: 'Succeeded', params: { replicas: 1 } });
    expect(runsOf(sim, 'Running').map(([, op]) => op.params)).toEqual([{ replicas: 1 }]);
  });

  test("a node's own parameters join the graph's; other nodes' stay out", () => {
    const sim = readyAtRunning({ replicas: 3 });
    sim.setSpec({ desiredState: 'Upgrading', params: { replicas: 3, version: '2.0.1' } });
    sim.settle();
    expect(sim.status?.operation).toMatchObject({ node: 'Upgrading', params: { replicas: 3, version: '2.0.1' } });
    sim.setSpec({ desiredState: 'Running' });
    sim.settle();
    expect(sim.status?.operation).toMatchObject({ node: 'Running', params: { replicas: 3 } });
  });

  test('an operation committed but not started starts with the parameters it was committed with, whatever spec.params says since', () => {
    const sim = new LifecycleSim(brokerGraph(), 'Running');
    sim.setSpec({ params: { replicas: 2 } });
    sim.reconcile({ startOperation: false });
    expect(sim.status?.operation).toMatchObject({ node: 'Running', phase: 'Pending', params: { replicas: 2 } });
    sim.setSpec({ params: { replicas: 5 } });
    // Started late with what it was committed with; then Running's Rerun policy runs it for the new values.
    sim.settle();
    const runs = runsOf(sim, 'Running');
    expect(runs.map(([, op]) => op.params)).toEqual([{ replicas: 2 }, { replicas: 5 }]);
    expect(runs.every(([, op]) => op.starts === 1)).toBe(true);
  });
});

describe('a change of parameters while the resource rests on a node', () => {
  test('onParamsChange: Rerun runs the action once more, under a new operation id, with the new values', () => {
    const sim = readyAtRunning({ replicas: 2 });
    const first = sim.status!.operation!.id;
    sim.setSpec({ params: { replicas: 4 } });
    const effects = sim.reconcile({ finishRunning: false });
    expect(effects.startOperation).toEqual({ id: `${first}.1`, node: 'Running', epoch: 'epoch-1', params: { replicas: 4 } });
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'False', reason: 'ActionRunning' });
    expect(startedEvents(sim).at(-1)?.data).toMatchObject({ reason: 'ParamsChanged', message: 'spec.params changed (replicas)' });
    sim.settle();
    for (let i = 0; i < 3; i++) expect(sim.reconcile().startOperation).toBeUndefined();
    expect(runsOf(sim, 'Running').map(([, op]) => op.params)).toEqual([{ replicas: 2 }, { replicas: 4 }]);
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'True', reason: 'DesiredStateReached' });
    expect(sim.status?.transition).toBe(1);
  });

  test('values equal after defaults are no change: nothing runs again', () => {
    const sim = readyAtRunning({});
    sim.setSpec({ params: { replicas: 1 } });
    sim.settle();
    expect(runsOf(sim, 'Running')).toHaveLength(1);
  });

  test('a change while the action runs waits for it, then runs it once with the newest values', () => {
    const sim = new LifecycleSim(brokerGraph(), 'Running');
    sim.setSpec({ params: { replicas: 2 } });
    sim.reconcile();
    sim.reconcile({ finishRunning: false });
    sim.setSpec({ params: { replicas: 3 } });
    sim.reconcile({ finishRunning: false });
    sim.setSpec({ params: { replicas: 4 } });
    expect(sim.reconcile({ finishRunning: false }).startOperation).toBeUndefined();
    sim.settle();
    expect(runsOf(sim, 'Running').map(([, op]) => op.params)).toEqual([{ replicas: 2 }, { replicas: 4 }]);
  });

  test('onParamsChange: NextTransition (the default) runs nothing until the resource moves; the next action gets the new values', () => {
    const sim = readyAtRunning({ replicas: 2 });
    sim.setSpec({ desiredState: 'Upgrading', params: { replicas: 2, version: '1.0.0' } });
    sim.settle();
    sim.setSpec({ params: { replicas: 2, version: '1.1.0' } });
    sim.settle();
    expect(runsOf(sim, 'Upgrading')).toHaveLength(1);
    expect(conditionOf(sim, 'Ready')?.status).toBe('True');
    sim.setSpec({ desiredState: 'Running' });
    sim.settle();
    expect(sim.status?.operation?.params).toEqual({ replicas: 2 });
  });

  test('a failed action whose parameters change runs again with them (Rerun): a fix needs no spec.retry', () => {
    const sim = new LifecycleSim(brokerGraph(), 'Running', (node, run) => (node === 'Running' && run === 1 ? { fail: 'bad replicas' } : { events: [] }));
    sim.setSpec({ params: { replicas: 2 } });
    sim.settle();
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });
    sim.setSpec({ params: { replicas: 3 } });
    sim.settle();
    expect(conditionOf(sim, 'Ready')?.status).toBe('True');
    expect(runsOf(sim, 'Running').map(([, op]) => op.params)).toEqual([{ replicas: 2 }, { replicas: 3 }]);
  });

  test('a run for changed parameters starts the retry policy count again', () => {
    const failing = (node: string, run: number) => (node === 'Running' && run >= 2 && run <= 3 ? { fail: 'flaky' } : { events: [] });
    const sim = new LifecycleSim(brokerGraph({ Running: { retry: { attempts: 2, backoffMs: 0 } } }), 'Running', failing);
    sim.setSpec({ params: { replicas: 2 } });
    sim.settle();
    sim.setSpec({ params: { replicas: 3 } });
    sim.settle();
    // Run 2 (new params) failed, run 3 (its retry) failed too: two runs under these params, as attempts allows.
    expect(runsOf(sim, 'Running')).toHaveLength(3);
    expect(sim.status?.operation).toMatchObject({ retries: 2, paramsSince: 1, phase: 'Failed' });
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });
  });

  test('an operation started before its graph declared parameters recorded none: nothing runs again for them', () => {
    const sim = readyAtRunning({ replicas: 2 });
    const { params: _none, ...operation } = sim.status!.operation!;
    sim.status = { ...sim.status!, operation };
    sim.setSpec({ params: { replicas: 9 } });
    sim.settle();
    expect(runsOf(sim, 'Running')).toHaveLength(1);
  });
});

describe('parameters that do not fit', () => {
  test("a node's required parameter missing: the resource stalls before entering it, naming the field; set, it moves on", () => {
    const sim = readyAtRunning({ replicas: 2 });
    sim.setDesired('Upgrading');
    sim.settle();
    expect(sim.status?.state).toBe('Running');
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'InvalidParams' });
    expect(conditionOf(sim, 'Stalled')?.message).toMatch(/^spec\.params do not fit the parameters of Upgrading \(spec\.params\.version: .+\); set spec\.params to values they accept to enter Upgrading$/);
    expect(runsOf(sim, 'Upgrading')).toHaveLength(0);
    expect(sim.events.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.stalled)).toHaveLength(1);
    sim.setSpec({ params: { replicas: 2, version: '3.1' } });
    sim.settle();
    expect(conditionOf(sim, 'Stalled')?.message).toContain('spec.params.version: a version like 1.2.3');
    sim.setSpec({ params: { replicas: 2, version: '3.1.0' } });
    sim.settle();
    expect(sim.status?.state).toBe('Upgrading');
    expect(conditionOf(sim, 'Ready')?.status).toBe('True');
  });

  test('a Rerun node whose new values do not fit stalls instead of running, and runs once they fit', () => {
    const sim = readyAtRunning({ replicas: 2 });
    sim.setSpec({ params: { replicas: 0 } });
    sim.settle();
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'InvalidParams' });
    expect(conditionOf(sim, 'Stalled')?.message).toContain('to run the action of Running again');
    expect(runsOf(sim, 'Running')).toHaveLength(1);
    sim.setSpec({ params: { replicas: 5 } });
    sim.settle();
    expect(runsOf(sim, 'Running').map(([, op]) => op.params)).toEqual([{ replicas: 2 }, { replicas: 5 }]);
  });

  test('a deletion held up by parameters says how to release the resource', () => {
    const sim = readyAtRunning({ replicas: 2 }, { Running: { onDelete: 'Upgrading' }, Upgrading: { children: ['Running', 'Stopping'] } });
    sim.delete();
    sim.settle();
    expect(conditionOf(sim, 'Stalled')?.message).toContain('annotate okt.dev/abandon=true');
  });
});
