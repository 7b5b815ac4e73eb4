import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { encodeCompact, expandStatus, isCompactStatus, parsePath } from '../../src/controller/lifecycle/status/compact-format.ts';
import { lifecycleStatusSchema, type LifecycleStatus } from '../../src/kube/lifecycle-resource.ts';
import { renderPath } from '../../src/machine/index.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { walkedDatabase } from '../fixtures/walked-database.ts';
import { renderStatusText, type LifecycleResource } from '../../src/cli/status-view.ts';
import { NO_COLORS } from '../../src/cli/output.ts';
import { crView } from '../../src/ui/model.ts';
import { parseStatus } from '../../src/controller/lifecycle/parse-status.ts';
import * as okt from '../../src/index.ts';

describe('the compact status format', () => {
  test('a walked CR at rest: compact leaves out what the rest of its status says, and the reader rebuilds the lean status exactly', () => {
    const lean = walkedDatabase('lean');
    const compact = walkedDatabase('compact');
    const stored = JSON.parse(compact.stored!) as Record<string, any>;
    expect(isCompactStatus(stored)).toBe(true);
    expect(stored).not.toHaveProperty('path');
    expect(stored.pathSummary).toBe('>Start>(Running<<>>Servicing)x1>Running');
    expect(stored.operation).not.toHaveProperty('id');
    expect(stored.operation).not.toHaveProperty('node');
    // `from` is the node before the state in the path: left out, read back from the path summary.
    expect(stored.lastTransition).toEqual({ events: lean.status!.lastTransition!.events, time: lean.status!.lastTransition!.time });
    expect((expandStatus(stored, 'uid-1') as LifecycleStatus).lastTransition!.from).toBe('Servicing');
    for (const c of stored.conditions) {
      expect(c.observedGeneration).toBe(stored.observedGeneration);
      expect(c).not.toHaveProperty('message');
    }
    expect(stored.conditions.find((c: { type: string }) => c.type === 'Running')).not.toHaveProperty('lastTransitionTime');
    // Ready became True when Running's action ended, after the transition: its time is its own.
    expect(stored.conditions.find((c: { type: string }) => c.type === 'Ready').lastTransitionTime).toBe(lean.status!.conditions.find((c) => c.type === 'Ready')!.lastTransitionTime);
    // The path's hops, and the sequence 0 of the epoch it records.
    expect(stored).not.toHaveProperty('transition');
    expect(stored).not.toHaveProperty('observedSequence');
    expect(stored.observedEpoch).toBe(lean.status!.observedEpoch);
    expect(stored.emitted).not.toHaveProperty('desired');
    expect(stored.emitted.events.map((e: { type: string }) => e.type)).toEqual(['ok', 'c']);
    expect(expandStatus(stored, 'uid-1')).toEqual(lean.status);
    expect(JSON.parse(lean.stored!)).toEqual(lean.status);
    console.log(`status at rest after Start > Running > Servicing > Running: lean ${lean.stored!.length} B, compact ${compact.stored!.length} B`);
    expect(compact.stored!.length).toBeLessThan(lean.stored!.length - 400);
  });

  /** A database CR walked as `walked`, then kept at End reached in one spec edit (through Servicing), with `message` okt's sidecar gives Servicing's action. */
  function atLeaf(message = 'exited with code 0'): LifecycleStatus {
    const sim = walkedDatabase('lean');
    sim.setSpec({ onLeaf: 'Keep' });
    sim.setDesired('End');
    sim.settle();
    const status = sim.status!;
    const [ok, ...rest] = status.emitted!.events;
    const operation = { ...(ok!.data!.operation as object), message };
    return { ...status, emitted: { ...status.emitted!, events: [{ ...ok!, data: { ...ok!.data, operation } }, ...rest] } };
  }

  test('a CR kept at a leaf it reached in one spec edit: the previous node\'s action succeeding and the transition\'s events are marks, read back exactly', () => {
    const lean = atLeaf();
    expect(lean.state).toBe('End');
    const stored = encodeCompact(lean, 'uid-1') as Record<string, any>;
    expect(isCompactStatus(stored)).toBe(true);
    // Servicing's action ended with the write that reached End: its event (its subject too) is all the previous node's.
    expect(stored.emitted.events).toEqual([{ type: 'ok', pa: 1 }, { type: 't', lt: 1 }, { type: 'c', lt: 1 }]);
    // Ready became True with the transition: its time is lastTransition's, as the node condition's.
    expect(stored.conditions).toEqual([
      { type: 'Ready', status: 'True', reason: 'DesiredStateReached', observedGeneration: lean.observedGeneration },
      { type: 'End', status: 'True', reason: 'Entered', observedGeneration: lean.observedGeneration },
    ]);
    expect(expandStatus(stored, 'uid-1')).toEqual(lean);
    const [leanBytes, compactBytes] = [JSON.stringify(lean).length, JSON.stringify(stored).length];
    console.log(`status kept at End: lean ${leanBytes} B, compact ${compactBytes} B`);
    expect(compactBytes).toBeLessThan(leanBytes - 500);
    // A module function's action (what the bench's no-op sidecar runs) says `the module returned`.
    const moduleAction = atLeaf('the module returned');
    const storedModule = encodeCompact(moduleAction, 'uid-1') as Record<string, any>;
    expect(storedModule.emitted.events[0]).toEqual({ type: 'ok', pa: 2 });
    expect(expandStatus(storedModule, 'uid-1')).toEqual(moduleAction);
  });

  test('an event the marks do not say exactly keeps its data (another message of the previous action), and reads back exactly', () => {
    const lean = atLeaf();
    const [ok, ...rest] = lean.emitted!.events;
    for (const message of ['exited with code 0 after a retry', undefined]) {
      const { message: _default, ...operation } = ok!.data!.operation as Record<string, unknown>;
      const other = { ...lean, emitted: { ...lean.emitted!, events: [{ ...ok!, data: { ...ok!.data, operation: message === undefined ? operation : { ...operation, message } } }, ...rest] } };
      const stored = encodeCompact(other, 'uid-1') as Record<string, any>;
      expect(isCompactStatus(stored)).toBe(true);
      expect(stored.emitted.events[0]).not.toHaveProperty('pa');
      expect(stored.emitted.events[0].data.operation.message).toBe(message);
      expect(expandStatus(stored, 'uid-1')).toEqual(other);
    }
  });

  test('a status the compact format cannot say exactly is written lean (a path summary that does not read back as the path), and a lean status is read as it is', () => {
    const status = walkedDatabase('lean').status!;
    const odd: LifecycleStatus = { ...status, pathSummary: '>Start>Running' };
    expect(encodeCompact(odd, 'uid-1')).toBe(odd);
    expect(expandStatus(status, 'uid-1')).toBe(status);
    expect(expandStatus(undefined, 'uid-1')).toBeUndefined();
  });

  test('another writer\'s condition is kept as it was written (its generation, message and time)', () => {
    const status = walkedDatabase('lean').status!;
    const theirs = { type: 'Backup', status: 'True', reason: 'Done', message: 'nightly', lastTransitionTime: '2026-01-01T00:00:00.000Z' } as const;
    const withTheirs: LifecycleStatus = { ...status, conditions: [...status.conditions, theirs] };
    const stored = encodeCompact(withTheirs, 'uid-1');
    expect(isCompactStatus(stored)).toBe(true);
    expect((stored.conditions as object[]).at(-1)).toEqual(theirs);
    expect(expandStatus(stored, 'uid-1')).toEqual(withTheirs);
  });

  test('a Succeeded operation leaves out the message okt\'s sidecar gives a command that exited 0, and keeps any other', () => {
    const status = walkedDatabase('lean').status!;
    for (const [message, kept] of [['exited with code 0', false], ['200 OK', true], ['', true]] as const) {
      const operation = { ...status.operation!, phase: 'Succeeded' as const, reason: 'Completed', message };
      const stored = encodeCompact({ ...status, operation }, 'uid-1');
      expect(isCompactStatus(stored)).toBe(true);
      expect('message' in (stored.operation as object)).toBe(kept);
      expect(expandStatus(stored, 'uid-1')).toEqual({ ...status, operation });
    }
  });

  test('the path\'s hops, a sequence 0 and a condition\'s time are left out only where they read back: a path cut at its limit, no epoch, another time', () => {
    const lean = walkedDatabase('lean').status!;
    const cases: [string, LifecycleStatus, (stored: Record<string, unknown>) => void][] = [
      ['transition past the path kept', { ...lean, transition: lean.transition + 40 }, (stored) => expect(stored.transition).toBe(lean.transition + 40)],
      ['observedSequence of another event kept', { ...lean, observedSequence: 7 }, (stored) => expect(stored.observedSequence).toBe(7)],
      ['observedSequence 0 without an epoch (an older okt\'s) kept', { ...withoutEpoch(lean), observedSequence: 0 }, (stored) => expect(stored.observedSequence).toBe(0)],
      ['no observedSequence with an epoch: not compact, written lean', withoutSequence(lean), (stored) => expect(stored).toHaveProperty('path')],
    ];
    for (const [what, status, check] of cases) {
      const stored = encodeCompact(status, 'uid-1');
      check(stored);
      expect(expandStatus(stored, 'uid-1'), what).toEqual(status);
    }
    const ready = lean.conditions.find((c) => c.type === 'Ready')!;
    const readyAtTransition = { ...lean, conditions: lean.conditions.map((c) => (c === ready ? { ...c, lastTransitionTime: lean.lastTransition!.time } : c)) };
    const stored = encodeCompact(readyAtTransition, 'uid-1');
    expect((stored.conditions as Record<string, unknown>[]).find((c) => c.type === 'Ready')).not.toHaveProperty('lastTransitionTime');
    expect(expandStatus(stored, 'uid-1')).toEqual(readyAtTransition);
  });

  test('a status stored in the compact form okt released (10f790d) reads back unchanged', () => {
    // As that okt's encodeCompact wrote these three (test/fixtures/released-status/2026-11-27-10f790d-compact.json has more).
    const released = [
      [RELEASED_AT_LEAF_COMMAND, atLeaf()],
      [RELEASED_AT_LEAF_COMMAND.replace('"pa":1', '"pa":2'), atLeaf('the module returned')],
      [RELEASED_AT_REST, walkedDatabase('lean').status!],
    ] as const;
    for (const [stored, lean] of released) {
      expect(isCompactStatus(JSON.parse(stored))).toBe(true);
      expect(expandStatus(JSON.parse(stored), 'uid-1')).toEqual(lean);
      expect(JSON.stringify(encodeCompact(lean, 'uid-1')).length).toBeLessThan(stored.length);
    }
    // The three CRs of the released fixtures: the compact ones read back as the lean ones that okt wrote.
    const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/released-status/${name}`, import.meta.url), 'utf8')) as { resources: Record<string, { status: unknown }> };
    const [compact, lean] = [fixture('2026-11-27-10f790d-compact.json'), fixture('2026-11-27-8e4e709-lean.json')];
    for (const [name, { status }] of Object.entries(compact.resources)) expect(expandStatus(status, 'uid-1'), name).toEqual(lean.resources[name]!.status);
  });

  test('a `pa` event without a subject where the previous node is the state stands for the state, as an earlier okt wrote it', () => {
    const stored = JSON.parse(RELEASED_AT_LEAF_COMMAND) as Record<string, any>;
    stored.lastTransition.from = 'End';
    stored.emitted.events[0] = { type: 'ok', pa: 1 };
    expect(expandStatus(stored, 'uid-1')).toMatchObject({ emitted: { events: [{ type: 'action.succeeded.v1', data: { from: 'End' } }, {}, {}] } });
    expect((expandStatus(stored, 'uid-1') as LifecycleStatus).emitted!.events[0]).not.toHaveProperty('subject');
  });

  test("lastTransition.from stays when it is not the path's node before the state (a migration's, say)", () => {
    const lean = walkedDatabase('lean').status!;
    const migrated = { ...lean, lastTransition: { ...lean.lastTransition!, from: 'Gone' } };
    const stored = encodeCompact(migrated, 'uid-1');
    expect((stored.lastTransition as Record<string, unknown>).from).toBe('Gone');
    expect(expandStatus(stored, 'uid-1')).toEqual(migrated);
  });

  test('a path summary reads back as the path it renders', () => {
    for (const path of [[], ['A'], ['A', 'B', 'A'], ['A', 'B', 'A', 'B', 'C'], ['S', 'R', 'V', 'R', 'V', 'R', 'E'], ['ex.io/S_2', 'n-1.x', 'ex.io/S_2']]) {
      expect(parsePath(renderPath(path))).toEqual(path);
    }
    expect(parsePath('Start')).toBeUndefined();
  });
});

describe('readers of a compact CR see its lean status', () => {
  test('okt status, okt ui and okt graph check\'s parse read a compact CR as its lean one', () => {
    const status = walkedDatabase('lean').status!;
    const cr = (stored: unknown): LifecycleResource => ({ kind: 'Database', metadata: { name: 'pg', namespace: 'demo', uid: 'uid-1', generation: 4, creationTimestamp: status.lastTransition!.time }, spec: { desiredState: 'Running' }, status: stored });
    const lean = cr(JSON.parse(JSON.stringify(status)));
    const compact = cr(JSON.parse(JSON.stringify(encodeCompact(status, 'uid-1'))));
    expect(isCompactStatus(compact.status)).toBe(true);
    const now = new Date(Date.parse(status.lastTransition!.time) + 60_000);
    const text = renderStatusText({ graph: databaseGraph, resource: compact, now }, NO_COLORS);
    expect(text).toBe(renderStatusText({ graph: databaseGraph, resource: lean, now }, NO_COLORS));
    expect(text).toMatch(/ path +>Start>\(Running<<>>Servicing\)x1>Running\n/);
    expect(crView(compact)).toEqual(crView(lean));
    expect(parseStatus(compact.status, 'uid-1')).toEqual(status);
    // A reader of the package: the exported schema takes the status once expanded, not before.
    expect(lifecycleStatusSchema.safeParse(compact.status).success).toBe(false);
    expect(lifecycleStatusSchema.parse(okt.expandStatus(compact.status, 'uid-1'))).toEqual(status);
  });
});

describe('switching formats', () => {
  test('a CR at rest in the lean format is rewritten once in the compact one, with the same status and no event, then left alone; and back', () => {
    const sim = walkedDatabase('lean');
    const lean = sim.status!;
    const writes = sim.writes;
    sim.statusFormat = 'compact';
    sim.reconcile();
    expect(sim.writes).toBe(writes + 1);
    expect(isCompactStatus(JSON.parse(sim.stored!))).toBe(true);
    // The same status, but for the events it holds: delivered, they leave with the rewrite (as with any write).
    const { emitted: _emitted, outbox: _outbox, ...rest } = lean;
    expect(sim.status).toEqual(rest);
    sim.reconcile();
    expect(sim.writes).toBe(writes + 1);
    sim.statusFormat = 'lean';
    sim.reconcile();
    expect(sim.writes).toBe(writes + 2);
    expect(JSON.parse(sim.stored!)).toEqual(rest);
    sim.reconcile();
    expect(sim.writes).toBe(writes + 2);
  });

  test('a CR at rest in the full format is rewritten once in the compact one and read as lean', () => {
    const sim = walkedDatabase('lean');
    const lean = sim.status!;
    const full = new LifecycleSim(databaseGraph, 'Running');
    for (const desired of ['Running', 'Servicing', 'Running']) {
      full.setDesired(desired);
      full.settle();
    }
    full.statusFormat = 'compact';
    const writes = full.writes;
    full.reconcile();
    expect(full.writes).toBe(writes + 1);
    expect(isCompactStatus(JSON.parse(full.stored!))).toBe(true);
    // The lean status, but for the times of the rewrite and what full kept of the operation.
    expect(full.status!.conditions.map((c) => `${c.type}=${c.status}`).sort()).toEqual(lean.conditions.map((c) => `${c.type}=${c.status}`).sort());
    full.reconcile();
    expect(full.writes).toBe(writes + 1);
  });
});

function withoutEpoch(status: LifecycleStatus): LifecycleStatus {
  const { observedEpoch: _epoch, ...rest } = status;
  return rest;
}

function withoutSequence(status: LifecycleStatus): LifecycleStatus {
  const { observedSequence: _sequence, ...rest } = status;
  return rest;
}

/** What okt's encodeCompact wrote at 10f790d for the CR of `atLeaf()` (uid-1). */
const RELEASED_AT_LEAF_COMMAND = '{"state":"End","graphRevision":"cb0b55743d723c69","observedGeneration":6,"transition":5,"sequence":17,"pathSummary":">Start>(Running<<>>Servicing)x2>End","conditions":[{"type":"Ready","status":"True","reason":"DesiredStateReached","observedGeneration":6,"lastTransitionTime":"2026-01-01T00:00:07.000Z"},{"type":"End","status":"True","reason":"Entered","observedGeneration":6}],"observedEpoch":"epoch-1","observedSequence":0,"lastTransition":{"from":"Servicing","events":["End"],"time":"2026-01-01T00:00:07.000Z"},"cycleBrake":{"at":"2026-01-01T00:00:06.000Z"},"outbox":[{"sequence":13,"type":"dev.okt.lifecycle.transition.v1","time":"2026-01-01T00:00:06.000Z","subject":"Servicing","data":{"graph":"database","graphRevision":"cb0b55743d723c69","transition":4,"from":"Running","to":"Servicing","desired":"End","events":["Servicing"],"path":">Start>(Running<<>>Servicing)x2","generation":6}},{"sequence":14,"type":"dev.okt.lifecycle.action.started.v1","time":"2026-01-01T00:00:06.000Z","subject":"Servicing","data":{"graph":"database","graphRevision":"cb0b55743d723c69","transition":4,"from":"Running","to":"Servicing","desired":"End","events":["Servicing"],"path":">Start>(Running<<>>Servicing)x2","generation":6,"operation":{"id":"uid-1-4","node":"Servicing","phase":"Pending"}}}],"emitted":{"events":[{"type":"ok","subject":"Servicing","pa":1},{"type":"t","lt":1},{"type":"c","lt":1}]}}';
/** What okt's encodeCompact wrote at 10f790d for the CR of `walkedDatabase('lean')` (uid-1). */
const RELEASED_AT_REST = '{"state":"Running","graphRevision":"cb0b55743d723c69","observedGeneration":4,"transition":3,"sequence":12,"pathSummary":">Start>(Running<<>>Servicing)x1>Running","conditions":[{"type":"Ready","status":"True","reason":"DesiredStateReached","observedGeneration":4,"lastTransitionTime":"2026-01-01T00:00:05.000Z"},{"type":"Running","status":"True","reason":"Entered","observedGeneration":4}],"observedEpoch":"epoch-1","observedSequence":0,"lastTransition":{"from":"Servicing","events":["Running"],"time":"2026-01-01T00:00:04.000Z"},"operation":{"phase":"Succeeded"},"cycleBrake":{},"outbox":[{"sequence":9,"type":"dev.okt.lifecycle.transition.v1","time":"2026-01-01T00:00:04.000Z","subject":"Running","data":{"graph":"database","graphRevision":"cb0b55743d723c69","transition":3,"from":"Servicing","to":"Running","desired":"Running","events":["Running"],"path":">Start>(Running<<>>Servicing)x1>Running","generation":4}},{"sequence":10,"type":"dev.okt.lifecycle.action.started.v1","time":"2026-01-01T00:00:04.000Z","subject":"Running","data":{"graph":"database","graphRevision":"cb0b55743d723c69","transition":3,"from":"Servicing","to":"Running","desired":"Running","events":["Running"],"path":">Start>(Running<<>>Servicing)x1>Running","generation":4,"operation":{"id":"uid-1-3","node":"Running","phase":"Pending"}}}],"emitted":{"events":[{"type":"ok"},{"type":"c"}]}}';
