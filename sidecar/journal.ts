// The append-only journal of the sidecar: JSON lines, each made durable (fdatasync) before the
// sidecar acts on it. Appends that arrive while a write is in flight are committed together with
// one sync (group commit), so durability costs about one sync per batch, not per operation.
//
// Records: first the sidecar's epoch ({"type":"epoch"}), then operations as they are accepted and
// finished ({"type":"accepted"|"finished","operation"}) and the probe's events ({"type":"observed"}).
// The epoch is the identity of this memory: a sidecar that starts without its journal gets a new one.
import { mkdirSync, readFileSync } from 'node:fs';
import { open, rename, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import {
  EpochSchema,
  GraphNameSchema,
  ObservedEventSchema,
  OperationSchema,
  TimestampSchema,
  type Operation,
} from '../src/sidecar-client/protocol.ts';

/** Probe events kept per graph, in memory and by the compaction. */
export const KEPT_OBSERVED_EVENTS = 1000;

export const EpochRecordSchema = z.object({ type: z.literal('epoch'), epoch: EpochSchema, createdAt: TimestampSchema });
/** Operations journaled by okt before epochs existed carry none: the journal's epoch is theirs. */
export const OperationRecordSchema = z.object({
  type: z.enum(['accepted', 'finished']),
  operation: OperationSchema.extend({ epoch: EpochSchema.optional() }),
});
export const ObservedRecordSchema = z.object({
  type: z.literal('observed'),
  graph: GraphNameSchema,
  event: ObservedEventSchema,
});
export const JournalRecordSchema = z.discriminatedUnion('type', [EpochRecordSchema, OperationRecordSchema, ObservedRecordSchema]);
export type JournalRecord = z.infer<typeof JournalRecordSchema>;
export type EpochRecord = z.infer<typeof EpochRecordSchema>;
export type ObservedRecord = z.infer<typeof ObservedRecordSchema>;
/** An operation record as replayed: with its epoch. */
export interface OperationRecord {
  type: 'accepted' | 'finished';
  operation: Operation;
}

export class JournalError extends Error {
  override name = 'JournalError';
}

/** Reads every record; a torn last line (a crash mid-write) is dropped, any other bad line is an error. */
export function readJournal(file: string): JournalRecord[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const lines = text.split('\n');
  const records: JournalRecord[] = [];
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    const isLast = lines.slice(index + 1).every((rest) => rest.trim() === '');
    let parsed: ReturnType<typeof JournalRecordSchema.safeParse>;
    try {
      parsed = JournalRecordSchema.safeParse(JSON.parse(line));
    } catch {
      if (isLast && !text.endsWith('\n')) return; // torn write
      throw new JournalError(`journal ${file} line ${index + 1}: not JSON`);
    }
    if (!parsed.success) {
      if (isLast && !text.endsWith('\n')) return;
      throw new JournalError(`journal ${file} line ${index + 1}: ${parsed.error.issues[0]?.message ?? 'invalid record'}`);
    }
    records.push(parsed.data);
  });
  return records;
}

/** The journal's epoch record (the first one), if it has one: a journal of an older okt has none. */
export function journalEpoch(records: readonly JournalRecord[]): EpochRecord | undefined {
  return records.find((r): r is EpochRecord => r.type === 'epoch');
}

/**
 * The last known state of each operation, in first-seen order. An operation journaled without an
 * epoch gets the journal's, else `fallbackEpoch` (the new epoch of a journal of an older okt).
 */
export function replayJournal(records: readonly JournalRecord[], fallbackEpoch = ''): Map<string, OperationRecord> {
  const epoch = journalEpoch(records)?.epoch ?? fallbackEpoch;
  const latest = new Map<string, OperationRecord>();
  for (const record of records) {
    if (record.type !== 'accepted' && record.type !== 'finished') continue;
    latest.set(record.operation.id, { type: record.type, operation: { ...record.operation, epoch: record.operation.epoch ?? epoch } });
  }
  return latest;
}

/** The probe events of each graph, oldest first, at most the newest KEPT_OBSERVED_EVENTS, and the last seq. */
export function replayObserved(records: readonly JournalRecord[]): Map<string, { events: ObservedRecord['event'][]; lastSeq: number }> {
  const graphs = new Map<string, { events: ObservedRecord['event'][]; lastSeq: number }>();
  for (const record of records) {
    if (record.type !== 'observed') continue;
    let graph = graphs.get(record.graph);
    if (graph === undefined) graphs.set(record.graph, (graph = { events: [], lastSeq: 0 }));
    graph.events.push(record.event);
    graph.lastSeq = Math.max(graph.lastSeq, record.event.seq);
    if (graph.events.length > 2 * KEPT_OBSERVED_EVENTS) graph.events.splice(0, graph.events.length - KEPT_OBSERVED_EVENTS);
  }
  for (const graph of graphs.values()) {
    if (graph.events.length > KEPT_OBSERVED_EVENTS) graph.events.splice(0, graph.events.length - KEPT_OBSERVED_EVENTS);
  }
  return graphs;
}

export class Journal {
  readonly file: string;
  private readonly handle: FileHandle;
  private pending: { line: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  private writing = false;

  private constructor(file: string, handle: FileHandle) {
    this.file = file;
    this.handle = handle;
  }

  /** Rewrites the journal atomically with just these records, then opens it for appending. */
  static async openCompacted(file: string, records: readonly JournalRecord[]): Promise<Journal> {
    mkdirSync(path.dirname(file), { recursive: true });
    const temp = `${file}.compact-${process.pid}`;
    const out = await open(temp, 'w', 0o600);
    try {
      await out.writeFile(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
      await out.sync();
    } finally {
      await out.close();
    }
    await rename(temp, file);
    const dir = await open(path.dirname(file), 'r');
    try {
      await dir.sync(); // make the rename itself durable
    } finally {
      await dir.close();
    }
    return new Journal(file, await open(file, 'a', 0o600));
  }

  /** Resolves once the record is on disk. */
  append(record: JournalRecord): Promise<void> {
    const line = `${JSON.stringify(record)}\n`;
    return new Promise((resolve, reject) => {
      this.pending.push({ line, resolve, reject });
      if (!this.writing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.writing = true;
    while (this.pending.length > 0) {
      const batch = this.pending;
      this.pending = [];
      try {
        await this.handle.write(batch.map((p) => p.line).join(''));
        await this.handle.datasync();
        for (const p of batch) p.resolve();
      } catch (error) {
        for (const p of batch) p.reject(error as Error);
      }
    }
    this.writing = false;
  }

  async close(): Promise<void> {
    while (this.writing || this.pending.length > 0) await new Promise((r) => setTimeout(r, 1));
    await this.handle.close();
  }
}
