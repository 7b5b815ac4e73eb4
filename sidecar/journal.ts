// The append-only journal of the sidecar: JSON lines, each made durable (written with O_DSYNC) before
// the sidecar acts on it. Appends that arrive while a write is in flight are committed together with
// one durable write (group commit), so durability costs about one sync per batch, not per operation.
// The first write that fails ends the journal (and the sidecar, which restarts and replays);
// a line that cannot be read (torn by such a failure or a crash) is skipped. It is rewritten with
// only what it must keep (JournalState) at start and whenever it has doubled since the last rewrite.
//
// Records: first the sidecar's epoch ({"type":"epoch"}), then operations as they are accepted and
// finished ({"type":"accepted"|"finished","operation"}) and the probe's events ({"type":"observed"}).
// The epoch is the identity of this memory: a sidecar that starts without its journal gets a new one.
import { constants, mkdirSync, readFileSync } from 'node:fs';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { KEPT_OBSERVED_EVENTS, type JournalState } from './journal-state.ts';
import { JournalRecordSchema, type EpochRecord, type JournalRecord, type ObservedRecord, type OperationRecord } from './journal-records.ts';

export { KEPT_OBSERVED_EVENTS } from './journal-state.ts';
export type { EpochRecord, JournalRecord, ObservedRecord, OperationRecord } from './journal-records.ts';

/** The journal could not be read or written: the sidecar cannot go on without it (see docs/sidecar.md, Durability). */
export class JournalIOError extends Error {
  override name = 'JournalIOError';
  readonly file: string;
  constructor(file: string, doing: string, cause: unknown) {
    const code = (cause as NodeJS.ErrnoException).code;
    const message = (cause as Error).message ?? String(cause);
    super(`journal ${file}: cannot ${doing}: ${code !== undefined && !message.startsWith(code) ? `${code}: ` : ''}${message}`, { cause });
    this.file = file;
  }
}

export interface JournalContents {
  records: JournalRecord[];
  /** Lines that are not a valid record (torn by a crash or a full disk mid-write, or damaged): skipped. */
  skippedLines: number;
}

/** Reads every valid record; a line that is not one, wherever it is, is skipped and counted, never fatal. */
export function readJournalFile(file: string): JournalContents {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { records: [], skippedLines: 0 };
    throw new JournalIOError(file, 'read it', error);
  }
  const records: JournalRecord[] = [];
  let skippedLines = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const record = parseRecord(line);
    if (record === undefined) skippedLines++;
    else records.push(record);
  }
  return { records, skippedLines };
}

function parseRecord(line: string): JournalRecord | undefined {
  try {
    const parsed = JournalRecordSchema.safeParse(JSON.parse(line));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The valid records of a journal file (see readJournalFile). */
export function readJournal(file: string): JournalRecord[] {
  return readJournalFile(file).records;
}

/**
 * The journal's epoch record (the first one), if it has one: a journal of an older okt has none. When
 * its line was unreadable, the epoch its operations carry is the journal's (createdAt: the first one's).
 */
export function journalEpoch(records: readonly JournalRecord[]): EpochRecord | undefined {
  const kept = records.find((r): r is EpochRecord => r.type === 'epoch');
  if (kept !== undefined) return kept;
  const carried = records.find((r) => (r.type === 'accepted' || r.type === 'finished') && r.operation.epoch !== undefined);
  if (carried?.type !== 'accepted' && carried?.type !== 'finished') return undefined;
  return { type: 'epoch', epoch: carried.operation.epoch as string, createdAt: carried.operation.createdAt };
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

export interface JournalOptions {
  /** Rewrite the journal while running once it is larger than this and than twice its size after the last rewrite. */
  compactionBytes: number;
  /**
   * Called once, at the first write or rewrite that fails: nothing more is journaled after it
   * (every append is refused), since what reached the disk is not known. The sidecar exits on it.
   */
  onFailure?(error: JournalIOError): void;
  onCompacted?(stats: { bytesBefore: number; bytesAfter: number; ms: number }): void;
}

/**
 * Appends are made durable by the write itself (O_DSYNC: as a write then fdatasync, in one call), so
 * a batch costs one round trip to the thread pool, not two.
 */
const APPEND_DURABLY = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_DSYNC;

/** Writes all of `data` at the end of the file: a short write (a disk filling up) is continued, never left torn silently. */
async function writeAll(handle: FileHandle, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const { bytesWritten } = await handle.write(data, offset, data.length - offset);
    if (bytesWritten <= 0) throw Object.assign(new Error('the write made no progress'), { code: 'EIO' });
    offset += bytesWritten;
  }
}

/** Writes the records to a temporary file made durable, then renames it over `file` (atomic, made durable too). */
async function writeCompacted(file: string, records: readonly JournalRecord[]): Promise<number> {
  const temp = `${file}.compacting`; // one name: a rewrite cut short leaves one file, replaced by the next
  const data = Buffer.from(records.map((r) => `${JSON.stringify(r)}\n`).join(''));
  try {
    const out = await open(temp, 'w', 0o600);
    try {
      await writeAll(out, data);
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
  } catch (error) {
    await rm(temp, { force: true }).catch(() => undefined); // give the space back: the disk may be full
    throw new JournalIOError(file, 'rewrite it', error);
  }
  return data.length;
}

export class Journal {
  readonly file: string;
  private handle: FileHandle;
  private readonly state: JournalState;
  private readonly options: JournalOptions;
  private pending: { record: JournalRecord; line: string; resolve: () => void; reject: (e: Error) => void }[] = [];
  private writing = false;
  private failure: JournalIOError | undefined;
  private bytes: number;
  private bytesAfterCompaction: number;
  private compactions = 0;

  private constructor(file: string, handle: FileHandle, state: JournalState, bytes: number, options: JournalOptions) {
    this.file = file;
    this.handle = handle;
    this.state = state;
    this.bytes = bytes;
    this.bytesAfterCompaction = bytes;
    this.options = options;
  }

  /** Rewrites the journal atomically with what `state` holds, then opens it for appending (each append updates `state`). */
  static async openCompacted(file: string, state: JournalState, options: JournalOptions): Promise<Journal> {
    try {
      mkdirSync(path.dirname(file), { recursive: true });
    } catch (error) {
      throw new JournalIOError(file, 'create its directory', error);
    }
    const bytes = await writeCompacted(file, state.records());
    let handle: FileHandle;
    try {
      handle = await open(file, APPEND_DURABLY, 0o600);
    } catch (error) {
      throw new JournalIOError(file, 'open it', error);
    }
    return new Journal(file, handle, state, bytes, options);
  }

  /** Resolves once the record is on disk; rejects (JournalIOError) when it cannot be, and every append after that. */
  append(record: JournalRecord): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise((resolve, reject) => {
      this.pending.push({ record, line: `${JSON.stringify(record)}\n`, resolve, reject });
      if (!this.writing) void this.flush();
    });
  }

  /** Its size now, and the rewrites done since it was opened. */
  stats(): { bytes: number; compactions: number } {
    return { bytes: this.bytes, compactions: this.compactions };
  }

  private async flush(): Promise<void> {
    this.writing = true;
    while (this.pending.length > 0 && this.failure === undefined) {
      const batch = this.pending;
      this.pending = [];
      try {
        const data = Buffer.from(batch.map((p) => p.line).join(''));
        try {
          await writeAll(this.handle, data); // durable when it returns (O_DSYNC)
        } catch (error) {
          // After a failed write the kernel may have dropped the dirty pages: what is on disk is unknown.
          throw new JournalIOError(this.file, 'append to it', error);
        }
        this.bytes += data.length;
        for (const p of batch) this.state.apply(p.record); // before any rewrite, which must keep it
      } catch (error) {
        this.fail(error as JournalIOError, [...batch, ...this.pending.splice(0)]);
        break;
      }
      for (const p of batch) p.resolve(); // durable: acknowledged even if the rewrite below fails
      if (this.bytes > Math.max(this.options.compactionBytes, 2 * this.bytesAfterCompaction)) {
        try {
          await this.compact();
        } catch (error) {
          this.fail(error as JournalIOError, this.pending.splice(0));
        }
      }
    }
    this.writing = false;
  }

  /** Rewrites the journal with what it holds now; appends wait meanwhile (one write and two syncs of the live records). */
  private async compact(): Promise<void> {
    const started = performance.now();
    const bytesBefore = this.bytes;
    const bytesAfter = await writeCompacted(this.file, this.state.records());
    const previous = this.handle;
    try {
      this.handle = await open(this.file, APPEND_DURABLY, 0o600);
    } catch (error) {
      throw new JournalIOError(this.file, 'open it', error);
    }
    await previous.close().catch(() => undefined); // the old file is gone: nothing to lose
    this.bytes = bytesAfter;
    this.bytesAfterCompaction = bytesAfter;
    this.compactions++;
    this.options.onCompacted?.({ bytesBefore, bytesAfter, ms: performance.now() - started });
  }

  private fail(error: JournalIOError, waiting: { reject: (e: Error) => void }[]): void {
    this.failure = error;
    this.options.onFailure?.(error); // first: the sidecar may exit here, before any caller can answer
    for (const p of waiting) p.reject(error);
  }

  async close(): Promise<void> {
    while (this.writing || (this.pending.length > 0 && this.failure === undefined)) await new Promise((r) => setTimeout(r, 1));
    await this.handle.close();
  }
}
