// The events a status holds: a write's own events kept as what they add to that status, read back
// exactly; earlier undelivered ones in full; anything the status cannot say kept in full.
import { describe, expect, test } from 'vitest';
import { newestEventSequence, statusEvents, withEvents, withMoreEvents } from '../../src/events/status-events.ts';
import type { LifecycleStatus, OutboxEntry } from '../../src/kube/lifecycle-resource.ts';

const status: Omit<LifecycleStatus, 'outbox' | 'emitted'> = {
  state: 'Running',
  graphRevision: 'rev-1',
  observedGeneration: 3,
  transition: 4,
  sequence: 9,
  path: ['Start', 'Running'],
  pathSummary: '>Start>Running',
  conditions: [],
};
const base = { graph: 'database', graphRevision: 'rev-1', transition: 4, from: 'Running', to: 'Running', desired: 'Running', events: [], path: '>Start>Running', generation: 3 };
const entry = (sequence: number, type: string, data: Record<string, unknown>, subject = 'Running', time = '2026-11-24T00:00:00.000Z'): OutboxEntry => ({ sequence, type, time, subject, data });

describe('status events', () => {
  const transition = entry(8, 'dev.okt.lifecycle.transition.v1', { ...base, from: 'Start', events: ['DefaultState'] });
  const started = entry(9, 'dev.okt.lifecycle.action.started.v1', { ...base, from: 'Start', events: ['DefaultState'], operation: { id: 'u-4', node: 'Running', phase: 'Pending' } });

  test("a write's events are kept as what they add to its status, and read back exactly", () => {
    const written = withEvents(status, [], [transition, started], 'database', 'Running');
    expect(written.outbox).toBeUndefined();
    expect(written.emitted).toEqual({
      time: '2026-11-24T00:00:00.000Z',
      desired: 'Running',
      events: [
        { type: 'transition.v1', data: { from: 'Start', events: ['DefaultState'] } },
        { type: 'action.started.v1', data: { from: 'Start', events: ['DefaultState'], operation: { id: 'u-4', node: 'Running', phase: 'Pending' } } },
      ],
    });
    expect(JSON.stringify(statusEvents(JSON.parse(JSON.stringify(written)), 'database'))).toBe(JSON.stringify([transition, started]));
  });

  test('earlier undelivered events stay in full, before the write’s own', () => {
    const earlier = entry(7, 'dev.okt.lifecycle.converged.v1', { ...base, transition: 3, path: '>Start', reason: 'DesiredStateReached' }, 'Start');
    const written = withEvents(status, [earlier], [transition, started], 'database', 'Running');
    expect(written.outbox).toEqual([earlier]);
    expect(statusEvents(written, 'database').map((e) => e.sequence)).toEqual([7, 8, 9]);
  });

  test('what the status cannot say keeps the events of the write in full: a foreign type, another time, a missing field', () => {
    const foreign = entry(9, 'com.example.other', { ...base });
    expect(withEvents(status, [], [transition, foreign], 'database', 'Running')).toMatchObject({ outbox: [transition, foreign] });
    const later = { ...started, time: '2026-11-24T00:00:01.000Z' };
    expect(withEvents(status, [], [transition, later], 'database', 'Running')).toMatchObject({ outbox: [transition, later] });
    const { graphRevision: _none, ...noRevision } = base;
    const bare = entry(9, 'dev.okt.lifecycle.stalled.v1', noRevision);
    const written = withEvents(status, [], [bare], 'database', 'Running');
    expect(written.emitted).toBeUndefined();
    expect(written.outbox).toEqual([bare]);
  });

  test("an action's event takes its operation from the status, unless it names another (a transition replaced it in the same write)", () => {
    const operation = { id: 'u-4', node: 'Running', phase: 'Succeeded' as const, startedAt: '2026-11-24T00:00:00.000Z' };
    const succeeded = entry(8, 'dev.okt.lifecycle.action.succeeded.v1', { ...base, operation: { id: 'u-4', node: 'Running', phase: 'Succeeded' } });
    const converged = entry(9, 'dev.okt.lifecycle.converged.v1', { ...base, reason: 'DesiredStateReached' });
    const written = withEvents({ ...status, operation }, [], [succeeded, converged], 'database', 'Running');
    expect(written.emitted?.events).toEqual([{ type: 'action.succeeded.v1' }, { type: 'converged.v1', data: { reason: 'DesiredStateReached' } }]);
    expect(statusEvents(written, 'database')).toEqual([succeeded, converged]);
    const next = { ...operation, id: 'u-5', phase: 'Pending' as const };
    const replaced = withEvents({ ...status, operation: next }, [], [succeeded, converged], 'database', 'Running');
    expect(replaced.emitted?.events[0]).toEqual({ type: 'action.succeeded.v1', data: { operation: { id: 'u-4', node: 'Running', phase: 'Succeeded' } } });
    expect(JSON.stringify(statusEvents(replaced, 'database'))).toBe(JSON.stringify([succeeded, converged]));
  });

  test('newestEventSequence: the highest sequence statusEvents reads, without reading them', () => {
    const earlier = entry(7, 'dev.okt.lifecycle.converged.v1', { ...base, transition: 3, path: '>Start', reason: 'DesiredStateReached' }, 'Start');
    const foreign = entry(9, 'example.other', { any: 1 });
    for (const written of [
      withEvents(status, [earlier], [transition, started], 'database', 'Running'),
      withEvents(status, [earlier], [transition, foreign], 'database', 'Running'),
      withEvents(status, [earlier], [], 'database', 'Running'),
      withEvents(status, [], [], 'database', 'Running'),
    ]) {
      expect(newestEventSequence(written)).toBe(Math.max(0, ...statusEvents(written, 'database').map((e) => e.sequence)));
    }
  });

  test('a write without events holds none of its own', () => {
    expect(withEvents(status, [], [], 'database', 'Running')).toEqual(status);
  });
});

describe('withMoreEvents (a write outside the step: the objects\' apply)', () => {
  const transition = entry(8, 'dev.okt.lifecycle.transition.v1', { ...base, from: 'Start', events: ['DefaultState'] });
  const started = entry(9, 'dev.okt.lifecycle.action.started.v1', { ...base, from: 'Start', events: ['DefaultState'], operation: { id: 'u-4', node: 'Running', phase: 'Pending' } });
  const stepWrote = withEvents(status, [], [transition, started], 'database', 'Running');
  const applied = { type: 'dev.okt.lifecycle.objects.applied.v1', time: '2026-11-24T00:00:01.000Z', subject: 'Running', data: { ...base, objects: [{ id: 'config', kind: 'ConfigMap', name: 'db-config' }] } };

  test('numbers its events after the status\'s sequence, and keeps the undelivered events of the write before it', () => {
    const written = withMoreEvents(stepWrote, 8, 'database', 'Running', [applied]);
    expect(written.sequence).toBe(10);
    expect(JSON.stringify(statusEvents(JSON.parse(JSON.stringify(written)), 'database'))).toBe(JSON.stringify([started, { ...applied, sequence: 10 }]));
  });

  test('those delivered leave it; with nothing to add, the status stays as it is', () => {
    expect(statusEvents(withMoreEvents(stepWrote, 9, 'database', 'Running', [applied]), 'database').map((e) => e.sequence)).toEqual([10]);
    expect(withMoreEvents(stepWrote, 0, 'database', 'Running', [])).toBe(stepWrote);
  });
});
