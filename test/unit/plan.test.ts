import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { decide } from '../../src/machine/index.ts';
import { createPlanner } from '../../src/plan/index.ts';

describe('planner', () => {
  const planner = createPlanner(databaseGraph);

  test('arrived when current is desired', () => {
    expect(planner.next('Running', 'Running')).toEqual({ kind: 'arrived' });
  });

  test('the event to raise now is the next node on the shortest route', () => {
    expect(planner.next('Start', 'Servicing')).toEqual({ kind: 'move', event: 'Running', to: 'Running', remaining: 1 });
    expect(planner.next('Running', 'Servicing')).toEqual({ kind: 'move', event: 'Servicing', to: 'Servicing', remaining: 0 });
    expect(planner.next('Servicing', 'End')).toEqual({ kind: 'move', event: 'End', to: 'End', remaining: 0 });
  });

  test('unreachable is a typed result, not an exception', () => {
    expect(planner.next('End', 'Running')).toEqual({ kind: 'unreachable', from: 'End', to: 'Running' });
    expect(planner.next('Running', 'Start')).toEqual({ kind: 'unreachable', from: 'Running', to: 'Start' });
    expect(planner.distance('Stopping', 'Running')).toBeUndefined();
    expect(planner.route('Stopping', 'Running')).toBeUndefined();
  });

  test('distance and route', () => {
    expect(planner.distance('Start', 'End')).toBe(3);
    expect(planner.distance('End', 'End')).toBe(0);
    expect(planner.route('Start', 'End')).toEqual(['Running', 'Servicing', 'End']);
    expect(planner.route('Start', 'Start')).toEqual([]);
  });

  test('ties are broken by child priority', () => {
    // Start -> Stopping -> End and Start -> Running -> End are both two moves; Running comes first.
    const graph = defineGraph({ name: 'tie', entry: 'Start', nodes: { Start: { children: ['Running', 'Stopping'] }, Running: { children: ['End'] }, Stopping: { children: ['End'] }, End: {} } });
    expect(createPlanner(graph).next('Start', 'End')).toMatchObject({ event: 'Running' });
    const swapped = defineGraph({ name: 'tie', entry: 'Start', nodes: { Start: { children: ['Stopping', 'Running'] }, Running: { children: ['End'] }, Stopping: { children: ['End'] }, End: {} } });
    expect(createPlanner(swapped).next('Start', 'End')).toMatchObject({ event: 'Stopping' });
  });

  test('following the planner reaches the desired node, one decision per move', () => {
    const reconcile = createPlanner(reconciliationGraph);
    let at: string = 'CRChecker';
    let moves = 0;
    for (;;) {
      const step = reconcile.next(at as 'CRChecker', 'GiveupManager');
      if (step.kind !== 'move') break;
      at = decide(reconciliationGraph, at as 'CRChecker', [step.event]);
      moves++;
    }
    expect(at).toBe('GiveupManager');
    expect(moves).toBe(reconcile.distance('CRChecker', 'GiveupManager'));
    expect(moves).toBe(1);
  });

  test('precompute fills every table up front and changes no answer', () => {
    const eager = createPlanner(databaseGraph);
    eager.precompute();
    for (const from of databaseGraph.nodeNames) {
      for (const to of databaseGraph.nodeNames) expect(eager.next(from, to)).toEqual(planner.next(from, to));
    }
  });

  test('rejects a node that is not in the graph', () => {
    expect(() => planner.next('Start', 'Nowhere' as 'End')).toThrow(/no node "Nowhere"/);
  });
});
