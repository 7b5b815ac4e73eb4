// What a compacted journal keeps (JournalState), and the reading of a journal with unreadable lines.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { JournalState, KEPT_OBSERVED_EVENTS } from '../../sidecar/journal-state.ts';
import { readJournalFile, type JournalRecord } from '../../sidecar/journal.ts';
import type { Operation } from '../../src/sidecar-client/protocol.ts';
import { acceptedOperation, FIXTURE_TIME } from '../fixtures/journal-records.ts';

const at = FIXTURE_TIME;
const op = acceptedOperation;
const finished = (id: string): JournalRecord => ({
  type: 'finished',
  operation: op(id, { phase: 'Succeeded', reason: 'Completed', events: ['Next'], outputTail: [`out of ${id}`], finishedAt: at }),
});
const ids = (records: JournalRecord[]) => records.map((r) => (r.type === 'epoch' ? 'epoch' : r.type === 'observed' ? `seq ${r.event.seq}` : `${r.type} ${r.operation.id}`));

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('JournalState', () => {
  it('keeps the epoch first, the latest record of every operation, and drops only the output tail beyond retainOperations', () => {
    const state = new JournalState(2);
    state.apply({ type: 'accepted', operation: op('a') });
    state.apply({ type: 'epoch', epoch: 'e', createdAt: at });
    state.apply({ type: 'epoch', epoch: 'other', createdAt: at }); // the first epoch stays
    for (const id of ['a', 'b', 'c']) state.apply(finished(id));
    state.apply({ type: 'accepted', operation: op('d') });
    const records = state.records();
    expect(ids(records)).toEqual(['epoch', 'finished a', 'finished b', 'finished c', 'accepted d']);
    expect(records[0]).toEqual({ type: 'epoch', epoch: 'e', createdAt: at });
    const byId = (id: string) => records.find((r) => r.type === 'finished' && r.operation.id === id) as { operation: Operation };
    expect(byId('a').operation).toMatchObject({ phase: 'Succeeded', events: ['Next'], outputTail: [] });
    expect(byId('b').operation.outputTail).toEqual(['out of b']);
    expect(byId('c').operation.outputTail).toEqual(['out of c']);
  });

  it('keeps the newest probe events of each graph', () => {
    const state = new JournalState(10);
    for (let seq = 1; seq <= 2 * KEPT_OBSERVED_EVENTS + 5; seq++) {
      state.apply({ type: 'observed', graph: 'demo', event: { seq, event: 'Crashed', at, message: '' } });
    }
    state.apply({ type: 'observed', graph: 'other', event: { seq: 1, event: 'Crashed', at, message: '' } });
    const demo = state.records().filter((r) => r.type === 'observed' && r.graph === 'demo');
    expect(demo).toHaveLength(KEPT_OBSERVED_EVENTS);
    expect(ids(demo).at(-1)).toBe(`seq ${2 * KEPT_OBSERVED_EVENTS + 5}`);
    expect(state.records().filter((r) => r.type === 'observed' && r.graph === 'other')).toHaveLength(1);
  });
});

describe('readJournalFile', () => {
  it('skips and counts every unreadable line, first, middle or last', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'okt-journal-unit-'));
    dirs.push(dir);
    const file = path.join(dir, 'journal.jsonl');
    const good = JSON.stringify({ type: 'accepted', operation: op('a') });
    writeFileSync(file, ['{"type":"epo', good, '{"type":"finished"}', 'not json', '', good, '{"type":"acc'].join('\n'));
    const { records, skippedLines } = readJournalFile(file);
    expect(skippedLines).toBe(4);
    expect(ids(records)).toEqual(['accepted a', 'accepted a']);
    expect(readJournalFile(path.join(dir, 'missing.jsonl'))).toEqual({ records: [], skippedLines: 0 });
  });
});
