import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../src/events/types.ts';
import type { LifecycleStatus } from '../../src/kube/lifecycle-resource.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { loadGraph } from '../../src/graph/index.ts';

function conditionOf(sim: LifecycleSim, type: string) {
  return findCondition(sim.status?.conditions ?? [], type);
}


describe('lifecycle step', () => {
  test('first sight records the entry node and takes the first transition toward the desired node', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    const effects = sim.reconcile();
    expect(sim.status?.state).toBe('Running');
    expect(sim.status?.transition).toBe(1);
    expect(sim.status?.path).toEqual(['Start', 'Running']);
    expect(effects.startOperation).toEqual({ id: 'uid-1-1', node: 'Running', epoch: 'epoch-1' });
    expect(sim.status?.operation?.epoch).toBe('epoch-1');
    expect(conditionOf(sim, 'Start')?.status).toBe('False');
    expect(conditionOf(sim, 'Running')?.status).toBe('True');
    expect(conditionOf(sim, 'Ready')?.status).toBe('False');
    expect(conditionOf(sim, 'Ready')?.reason).toBe('ActionRunning');
  });

  test('walks Start -> Running -> Servicing -> Running -> Stopping -> End, one transition per reconcile', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.spec = { ...sim.spec, onLeaf: 'Keep' };
    sim.settle();
    expect(conditionOf(sim, 'Ready')?.status).toBe('True');
    for (const desired of ['Servicing', 'Running', 'Stopping', 'End']) {
      const before = sim.status!.transition;
      sim.setDesired(desired);
      sim.reconcile();
      expect(sim.status!.transition).toBe(before + 1);
      sim.settle();
      expect(sim.status?.state).toBe(desired);
    }
    expect(sim.status?.pathSummary).toBe('>Start>(Running<<>>Servicing)x1>Running>Stopping>End');
    expect(conditionOf(sim, 'End')?.status).toBe('True');
    expect(conditionOf(sim, 'Stopping')?.status).toBe('False');
    // Only the node it is on and the one it just left keep a condition: status does not grow with the graph.
    expect(conditionOf(sim, 'Running')).toBeUndefined();
    expect(sim.status?.conditions.map((c) => c.type).sort()).toEqual(['End', 'Ready', 'Reconciling', 'Stalled', 'Stopping']);
    expect(sim.status?.graphRevision).toBe(databaseGraph.revision);
  });

  test('while the operation runs the reconciler polls; status.operation.phase follows the sidecar (Pending as committed, Running once it says so), then nothing changes', () => {
    const sim = new LifecycleSim(databaseGraph, 'Stopping');
    sim.reconcile();
    expect(sim.status?.operation?.phase).toBe('Pending');
    const seen = sim.reconcile({ finishRunning: false });
    expect(seen.poll).toBe(true);
    expect(seen.status).toBeDefined();
    expect(sim.status?.operation?.phase).toBe('Running');
    const written = structuredClone(sim.status);
    const effects = sim.reconcile({ finishRunning: false });
    expect(effects).toEqual({ poll: true });
    expect(sim.status).toEqual(written);
  });

  test('a crash between the status write and the start starts the same operation id once', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.reconcile({ startOperation: false }); // written, never started
    const effects = sim.reconcile({ finishRunning: false });
    expect(effects.startOperation).toEqual({ id: 'uid-1-1', node: 'Running', epoch: 'epoch-1' });
    expect(effects.status).toBeUndefined();
    expect(sim.started.get('uid-1-1')?.starts).toBe(1);
  });

  test('a lost status write is recomputed identically: same transition number and operation id', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    const lost = sim.reconcile({ applyWrite: false });
    sim.clock = 0; // the same instant: a restart reads the same API state
    const retried = sim.reconcile();
    expect(lost.status).toBeDefined();
    expect(retried.status).toEqual(lost.status);
    expect(retried.startOperation).toEqual(lost.startOperation);
  });

  test('every committed event has the next sequence number: no gap, no repeat', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.setDesired('End');
    sim.settle();
    const sequences = sim.events.map((e) => e.sequence);
    expect(sequences).toEqual(sequences.map((_, i) => i + 1));
    expect(sim.status?.sequence).toBe(sequences.length);
    const types = sim.events.map((e) => e.type);
    expect(types.filter((t) => t === LIFECYCLE_EVENT_TYPES.transition)).toHaveLength(3);
  });

  test('delivered events leave the outbox on the next write', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.deliverAll();
    const delivered = sim.delivered;
    sim.setDesired('Servicing');
    sim.reconcile();
    expect(sim.events.every((e) => e.sequence > delivered)).toBe(true);
  });

  test('an unreachable desired node stalls with UnreachableState naming both nodes, once', () => {
    const sim = new LifecycleSim(databaseGraph, 'Stopping');
    sim.settle();
    sim.setDesired('Running');
    const effects = sim.reconcile();
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'UnreachableState' });
    expect(conditionOf(sim, 'Stalled')?.message).toContain('Running cannot be reached from Stopping');
    expect(effects.status).toBeDefined();
    expect(sim.reconcile().status).toBeUndefined();
  });

  test('a failed action without events stalls with ActionFailed until the spec changes', () => {
    const sim = new LifecycleSim(databaseGraph, 'Servicing', (node) => (node === 'Servicing' ? { fail: 'pg_dump: disk full' } : { events: [] }));
    sim.settle();
    expect(sim.status?.state).toBe('Servicing');
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });
    expect(conditionOf(sim, 'Stalled')?.message).toContain('pg_dump: disk full');
    sim.setDesired('Running');
    sim.reconcile();
    expect(sim.status?.state).toBe('Running');
  });

  test('an unavailable sidecar while an action runs: SidecarUnavailable, not stalled, written once', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.reconcile();
    sim.sidecarDown = true;
    const first = sim.reconcile({ finishRunning: false });
    expect(first.poll).toBe(true);
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'False', reason: 'SidecarUnavailable' });
    expect(conditionOf(sim, 'Stalled')?.status).toBe('False');
    expect(sim.reconcile({ finishRunning: false }).status).toBeUndefined();
  });

  test('an invalid status is never overwritten: only conditions say why', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.status = { invalid: 'status.transition: expected number, received string' } as unknown as LifecycleStatus;
    const effects = sim.reconcile({ applyWrite: false });
    expect(Object.keys(effects.status ?? {})).toEqual(['conditions']);
    expect(findCondition(effects.status!.conditions, 'Stalled')).toMatchObject({ status: 'True', reason: 'InvalidStatus' });
    expect(effects.startOperation).toBeUndefined();
  });

  test('deletion follows the default path (Running -> Stopping -> End, not the shorter-by-priority Servicing), then lets the finalizer go once events are out', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.delete();
    sim.settle();
    expect(sim.status?.state).toBe('End');
    expect(sim.status?.path.slice(-3)).toEqual(['Running', 'Stopping', 'End']);
    expect([...sim.started.values()].map((op) => op.node)).toEqual(['Running', 'Stopping']);
    expect(sim.finished).toBeUndefined();
    sim.deliverAll();
    sim.reconcile();
    expect(sim.finished).toBe('removeFinalizer');
  });

  test('a leaf reached through the spec deletes the resource, unless onLeaf is Keep', () => {
    const deleted = new LifecycleSim(databaseGraph, 'End');
    deleted.settle();
    deleted.deliverAll();
    deleted.reconcile();
    expect(deleted.finished).toBe('delete');
    const kept = new LifecycleSim(databaseGraph, 'End');
    kept.spec = { ...kept.spec, onLeaf: 'Keep' };
    kept.settle();
    kept.deliverAll();
    kept.reconcile();
    expect(kept.finished).toBeUndefined();
  });

  test('the transition into a leaf asks for another look only when the leaf ends the resource\'s life: onLeaf Keep has nothing left to do', () => {
    const intoLeaf = (onLeaf: 'Keep' | 'Delete') => {
      const sim = new LifecycleSim(databaseGraph, 'Running');
      sim.spec = { ...sim.spec, onLeaf };
      sim.settle();
      sim.setDesired('End');
      for (let i = 0; i < 10; i++) {
        const effects = sim.reconcile();
        if (sim.status?.state === 'End') return effects;
      }
      throw new Error('End was not reached');
    };
    const kept = intoLeaf('Keep');
    expect(kept.status).toBeDefined();
    expect(kept.again).toBeUndefined();
    expect(intoLeaf('Delete').again).toBe(true);
  });

  test('paused: no transition, Ready False with reason Paused', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.spec = { ...sim.spec, paused: true };
    sim.reconcile();
    expect(sim.status?.state).toBe('Start');
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'False', reason: 'Paused' });
  });

  test('a full outbox holds transitions back (EventsBackpressure) until events are delivered', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.outboxLimit = 6;
    sim.settle();
    sim.setDesired('Servicing');
    sim.reconcile();
    expect(sim.status?.state).toBe('Running');
    expect(conditionOf(sim, 'Ready')?.reason).toBe('EventsBackpressure');
    sim.deliverAll();
    sim.reconcile();
    expect(sim.status?.state).toBe('Servicing');
  });

  test('lastTransitionTime changes only when a condition status changes', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.reconcile();
    const ready = conditionOf(sim, 'Ready')!;
    sim.reconcile({ finishRunning: false });
    sim.sidecarDown = true;
    sim.reconcile({ finishRunning: false });
    expect(conditionOf(sim, 'Ready')?.reason).toBe('SidecarUnavailable');
    expect(conditionOf(sim, 'Ready')?.lastTransitionTime).toBe(ready.lastTransitionTime);
  });
});

test('a status read back with its keys in another order is no reason to write', () => {
  const sim = new LifecycleSim(databaseGraph, 'Running');
  for (let i = 0; i < 5; i++) sim.reconcile();
  const reversed = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(reversed);
    if (typeof value !== 'object' || value === null) return value;
    return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, reversed(v)]));
  };
  const before = sim.status!;
  sim.status = reversed(before) as LifecycleStatus;
  expect(Object.keys(sim.status)).toEqual(Object.keys(before).reverse());
  expect(sim.reconcile().status).toBeUndefined();
});

describe('status formats', () => {
  test('a CR at rest in the full format is rewritten once in the lean one, with the same events, then left alone; and back', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.setDesired('Servicing');
    sim.settle();
    const full = sim.status!;
    const conditions = (status: LifecycleStatus) => status.conditions.map((c) => `${c.type}=${c.status}`).sort();
    expect(conditions(full)).toEqual(['Ready=True', 'Reconciling=False', 'Running=False', 'Servicing=True', 'Stalled=False']);
    const events = sim.events;
    sim.statusFormat = 'lean';
    const writes = sim.writes;
    sim.reconcile();
    expect(sim.writes).toBe(writes + 1);
    expect(conditions(sim.status!)).toEqual(['Ready=True', 'Servicing=True']);
    expect(sim.status!.operation).toEqual({ id: full.operation!.id, node: 'Servicing', phase: 'Succeeded', message: full.operation!.message });
    expect(sim.events).toEqual(events);
    sim.reconcile();
    expect(sim.writes).toBe(writes + 1);
    // Back to full: the conditions lean left out come back False (their times are those of the rewrite).
    sim.statusFormat = 'full';
    sim.reconcile();
    expect(sim.writes).toBe(writes + 2);
    expect(conditions(sim.status!)).toEqual(['Ready=True', 'Reconciling=False', 'Servicing=True', 'Stalled=False']);
    expect(sim.events).toEqual(events);
  });
});

describe('a self-loop child named by a collected event', () => {
  test('outranks the planned move for one decision, which stays; Ready is never said away from the desired node, and the next decision moves on', () => {
    const graph = loadGraph({ name: 'g', entry: 'N0', nodes: [{ name: 'N0', children: ['N0', 'Up'] }, { name: 'Up' }] });
    const sim = new LifecycleSim(graph, 'Up');
    sim.spec = { ...sim.spec, onLeaf: 'Keep', paused: true };
    sim.reconcile();
    sim.raise('N0');
    sim.reconcile();
    sim.setSpec({ paused: false });
    const effects = sim.reconcile();
    expect(sim.status?.state).toBe('N0');
    expect(conditionOf(sim, 'Ready')).toMatchObject({ status: 'False', reason: 'Progressing' });
    expect(effects.again).toBe(true);
    sim.reconcile();
    expect(sim.status?.state).toBe('Up');
    expect(conditionOf(sim, 'Ready')?.status).toBe('True');
  });
});

describe('conditions carry the generation they were judged at (kubectl wait ignores older ones)', () => {
  /** What `kubectl wait --for=condition=TYPE` takes as met: True, and judged at the object's generation. */
  const waitMet = (sim: LifecycleSim, type: string) => {
    const c = conditionOf(sim, type);
    return c?.status === 'True' && (c.observedGeneration === undefined || c.observedGeneration >= sim.generation);
  };

  for (const format of ['full', 'lean'] as const) {
    test(`${format}: a spec edit that does not move the CR (paused on and off, retry, onLeaf) brings the node's condition to the new generation in the one write it costs, lastTransitionTime kept`, () => {
      const sim = new LifecycleSim(databaseGraph, 'Running');
      sim.statusFormat = format;
      sim.settle();
      const entered = conditionOf(sim, 'Running')!;
      const ready = conditionOf(sim, 'Ready')!;
      const edits = [{ paused: true }, { paused: false }, { retry: 'again' }, { onLeaf: 'Keep' as const }];
      for (const edit of edits) {
        const writes = sim.writes;
        sim.setSpec(edit);
        sim.settle();
        expect(sim.writes, JSON.stringify(edit)).toBe(writes + 1);
        expect(sim.status?.state).toBe('Running');
        expect(waitMet(sim, 'Running'), JSON.stringify(edit)).toBe(true);
        for (const c of sim.status!.conditions) expect(c.observedGeneration, `${c.type} after ${JSON.stringify(edit)}`).toBe(sim.generation);
        expect(conditionOf(sim, 'Running')?.lastTransitionTime).toBe(entered.lastTransitionTime);
        // Looked at again with nothing changed: no write.
        sim.reconcile();
        expect(sim.writes).toBe(writes + 1);
      }
      expect(waitMet(sim, 'Ready')).toBe(true);
      // Ready went False under the pause and back: its time is the resume's; Running's never changed.
      expect(conditionOf(sim, 'Ready')?.lastTransitionTime).not.toBe(ready.lastTransitionTime);
    });
  }

  test('a stalled CR: spec.params edited while it stays stalled brings Stalled and the node condition to the new generation', () => {
    const sim = new LifecycleSim(databaseGraph, 'Servicing', (node) => (node === 'Servicing' ? { fail: 'pg_dump: disk full' } : { events: [] }));
    sim.settle();
    expect(conditionOf(sim, 'Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });
    sim.setSpec({ params: { unused: 1 } });
    sim.settle();
    expect(conditionOf(sim, 'Stalled')?.status).toBe('True');
    expect(waitMet(sim, 'Stalled')).toBe(true);
    expect(waitMet(sim, 'Servicing')).toBe(true);
  });

  test('a node condition an earlier okt left at an older generation is brought up to date in one write, then left alone', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.setSpec({ paused: true });
    sim.settle();
    sim.setSpec({ paused: false });
    sim.settle();
    // As an earlier okt left it: the node's condition at the generation that entered the node.
    sim.status = { ...sim.status!, conditions: sim.status!.conditions.map((c) => (c.type === 'Running' ? { ...c, observedGeneration: 1 } : c)) };
    const writes = sim.writes;
    sim.reconcile();
    sim.reconcile();
    expect(sim.writes).toBe(writes + 1);
    expect(conditionOf(sim, 'Running')?.observedGeneration).toBe(3);
  });

  test('a condition of another writer keeps its observedGeneration', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    const theirs = { type: 'example.com/Backup', status: 'True' as const, reason: 'Done', message: 'nightly', lastTransitionTime: sim.time(0), observedGeneration: 1 };
    sim.status = { ...sim.status!, conditions: [...sim.status!.conditions, theirs] };
    sim.setSpec({ paused: true });
    sim.settle();
    expect(conditionOf(sim, 'example.com/Backup')).toEqual(theirs);
    expect(conditionOf(sim, 'Running')?.observedGeneration).toBe(2);
  });
});
