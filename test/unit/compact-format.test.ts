import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { encodeCompact, expandStatus, isCompactStatus, parsePath } from '../../src/controller/lifecycle/status/compact-format.ts';
import { lifecycleStatusSchema, type LifecycleStatus } from '../../src/kube/lifecycle-resource.ts';
import { renderPath } from '../../src/machine/index.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { renderStatusText, type LifecycleResource } from '../../src/cli/status-view.ts';
import { NO_COLORS } from '../../src/cli/output.ts';
import { crView } from '../../src/ui/model.ts';
import { parseStatus } from '../../src/controller/lifecycle/parse-status.ts';
import * as okt from '../../src/index.ts';

/** A database CR walked Start > Running > Servicing > Running, at rest, in `format`. */
function walked(format: 'lean' | 'compact'): LifecycleSim {
  const sim = new LifecycleSim(databaseGraph, 'Running');
  sim.statusFormat = format;
  for (const desired of ['Running', 'Servicing', 'Running']) {
    sim.setDesired(desired);
    sim.settle();
    // The emitter keeps up: each write's events are out before the next.
    sim.deliverAll();
  }
  return sim;
}

describe('the compact status format', () => {
  test('a walked CR at rest: compact leaves out what the rest of its status says, and the reader rebuilds the lean status exactly', () => {
    const lean = walked('lean');
    const compact = walked('compact');
    const stored = JSON.parse(compact.stored!) as Record<string, any>;
    expect(isCompactStatus(stored)).toBe(true);
    expect(stored).not.toHaveProperty('path');
    expect(stored.pathSummary).toBe('>Start>(Running<<>>Servicing)x1>Running');
    expect(stored.operation).not.toHaveProperty('id');
    expect(stored.operation).not.toHaveProperty('node');
    expect(stored.lastTransition).toEqual({ from: 'Servicing', events: lean.status!.lastTransition!.events, time: lean.status!.lastTransition!.time });
    for (const c of stored.conditions) {
      expect(c.observedGeneration).toBe(stored.observedGeneration);
      expect(c).not.toHaveProperty('message');
    }
    expect(stored.conditions.find((c: { type: string }) => c.type === 'Running')).not.toHaveProperty('lastTransitionTime');
    expect(stored.emitted).not.toHaveProperty('desired');
    expect(stored.emitted.events.map((e: { type: string }) => e.type)).toEqual(['ok', 'c']);
    expect(expandStatus(stored, 'uid-1')).toEqual(lean.status);
    expect(JSON.parse(lean.stored!)).toEqual(lean.status);
    console.log(`status at rest after Start > Running > Servicing > Running: lean ${lean.stored!.length} B, compact ${compact.stored!.length} B`);
    expect(compact.stored!.length).toBeLessThan(lean.stored!.length - 400);
  });

  /** A database CR walked as `walked`, then kept at End reached in one spec edit (through Servicing), with `message` okt's sidecar gives Servicing's action. */
  function atLeaf(message = 'exited with code 0'): LifecycleStatus {
    const sim = walked('lean');
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
    // Servicing's action ended with the write that reached End: its event is all the previous node's.
    expect(stored.emitted.events).toEqual([{ type: 'ok', subject: 'Servicing', pa: 1 }, { type: 't', lt: 1 }, { type: 'c', lt: 1 }]);
    expect(expandStatus(stored, 'uid-1')).toEqual(lean);
    const [leanBytes, compactBytes] = [JSON.stringify(lean).length, JSON.stringify(stored).length];
    console.log(`status kept at End: lean ${leanBytes} B, compact ${compactBytes} B`);
    expect(compactBytes).toBeLessThan(leanBytes - 500);
    // A module function's action (what the bench's no-op sidecar runs) says `the module returned`.
    const moduleAction = atLeaf('the module returned');
    const storedModule = encodeCompact(moduleAction, 'uid-1') as Record<string, any>;
    expect(storedModule.emitted.events[0]).toEqual({ type: 'ok', subject: 'Servicing', pa: 2 });
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
    const status = walked('lean').status!;
    const odd: LifecycleStatus = { ...status, pathSummary: '>Start>Running' };
    expect(encodeCompact(odd, 'uid-1')).toBe(odd);
    expect(expandStatus(status, 'uid-1')).toBe(status);
    expect(expandStatus(undefined, 'uid-1')).toBeUndefined();
  });

  test('another writer\'s condition is kept as it was written (its generation, message and time)', () => {
    const status = walked('lean').status!;
    const theirs = { type: 'Backup', status: 'True', reason: 'Done', message: 'nightly', lastTransitionTime: '2026-01-01T00:00:00.000Z' } as const;
    const withTheirs: LifecycleStatus = { ...status, conditions: [...status.conditions, theirs] };
    const stored = encodeCompact(withTheirs, 'uid-1');
    expect(isCompactStatus(stored)).toBe(true);
    expect((stored.conditions as object[]).at(-1)).toEqual(theirs);
    expect(expandStatus(stored, 'uid-1')).toEqual(withTheirs);
  });

  test('a Succeeded operation leaves out the message okt\'s sidecar gives a command that exited 0, and keeps any other', () => {
    const status = walked('lean').status!;
    for (const [message, kept] of [['exited with code 0', false], ['200 OK', true], ['', true]] as const) {
      const operation = { ...status.operation!, phase: 'Succeeded' as const, reason: 'Completed', message };
      const stored = encodeCompact({ ...status, operation }, 'uid-1');
      expect(isCompactStatus(stored)).toBe(true);
      expect('message' in (stored.operation as object)).toBe(kept);
      expect(expandStatus(stored, 'uid-1')).toEqual({ ...status, operation });
    }
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
    const status = walked('lean').status!;
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
    const sim = walked('lean');
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
    const sim = walked('lean');
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
