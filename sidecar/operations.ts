// Operations: accepted (journaled) before they run, idempotent by id, at most maxActiveOperations at
// once, finished (journaled) before anyone sees them finished. On restart the journal tells which
// operations were interrupted: they end Failed/Interrupted, or run again when declared idempotent.
// The journal also holds the sidecar's epoch (kept as long as the journal is) and the probe's events.
import { randomUUID } from 'node:crypto';
import {
  isTerminal,
  type ObservedEvent,
  type Operation,
  type StartOperationRequest,
} from '../src/sidecar-client/protocol.ts';
import { canonicalJson } from '../src/graph/index.ts';
import { runAction, type ActionOutcome } from './actions.ts';
import type { ActionConfig, SidecarConfig } from './config.ts';
import {
  Journal,
  journalEpoch,
  readJournalFile,
  replayJournal,
  replayObserved,
  type EpochRecord,
  type JournalIOError,
  type OperationRecord,
} from './journal.ts';
import { JournalState } from './journal-state.ts';
import { lockJournal, type JournalLock } from './journal-lock.ts';

/** A refusal the server turns into a problem answer. */
export class OperationRefused extends Error {
  override name = 'OperationRefused';
  readonly status: number;
  readonly kind:
    | 'id-conflict'
    | 'busy'
    | 'unknown-graph'
    | 'unknown-node'
    | 'not-found'
    | 'shutting-down'
    | 'epoch-mismatch'
    | 'not-idempotent';
  readonly field: string | undefined;
  readonly activeOperations: string[] | undefined;
  constructor(
    status: number,
    kind: OperationRefused['kind'],
    message: string,
    extra: { field?: string; activeOperations?: string[] } = {},
  ) {
    super(message);
    this.status = status;
    this.kind = kind;
    this.field = extra.field;
    this.activeOperations = extra.activeOperations;
  }
}

export interface OperationHooks {
  onStarted?(op: Operation): void;
  onFinished?(op: Operation, durationMs: number): void;
  /** The journal cannot be written: nothing more is accepted or finished (the sidecar exits on it). */
  onJournalFailure?(error: JournalIOError): void;
  onJournalCompacted?(stats: { bytesBefore: number; bytesAfter: number; ms: number }): void;
}

interface Entry {
  op: Operation;
  /** The canonical request, to tell a retry (same body) from a conflict (another body). */
  requestKey: string;
  /** Resolves once the acceptance is on disk. */
  accepted: Promise<void>;
  /** Resolves once the operation is finished and journaled. */
  done: Promise<void>;
  markDone: () => void;
  abort: AbortController | undefined;
}

const now = () => new Date().toISOString();

function requestKey(graph: string, node: string, params: Record<string, unknown>): string {
  return canonicalJson([graph, node, params]);
}

export class OperationManager {
  /** The identity of this sidecar's memory: new when it started without a journal, else the journal's. */
  readonly epoch: string;
  /** When the epoch began (its journal record's time): how old this memory is. */
  readonly epochCreatedAt: string;
  /** True when this start created the epoch (no journal, or one of an okt without epochs). */
  readonly epochIsNew: boolean;
  /** Lines of the journal that could not be read at open (torn or damaged), skipped. */
  readonly journalSkippedLines: number;
  private readonly entries = new Map<string, Entry>();
  /** Ids of the operations not finished, in start order: every start and observation asks, so no scan of all entries. */
  private readonly activeIds = new Set<string>();
  private readonly finishedOrder: string[] = [];
  private readonly config: SidecarConfig;
  private readonly journal: Journal;
  private readonly lock: JournalLock;
  private readonly hooks: OperationHooks;
  private readonly observed: Map<string, { events: ObservedEvent[]; lastSeq: number }>;
  private closing = false;

  private constructor(
    config: SidecarConfig,
    journal: Journal,
    lock: JournalLock,
    hooks: OperationHooks,
    epoch: { epoch: string; createdAt: string; isNew: boolean },
    observed: Map<string, { events: ObservedEvent[]; lastSeq: number }>,
    journalSkippedLines: number,
  ) {
    this.journalSkippedLines = journalSkippedLines;
    this.config = config;
    this.journal = journal;
    this.lock = lock;
    this.hooks = hooks;
    this.epoch = epoch.epoch;
    this.epochCreatedAt = epoch.createdAt;
    this.epochIsNew = epoch.isNew;
    this.observed = observed;
  }

  /**
   * Opens the journal (a new epoch when it has no epoch record: missing, empty, or of an older okt),
   * settles what a previous run left unfinished, re-runs idempotent ones, and compacts it. Its lock is
   * taken first (JournalLockedError when another sidecar holds it) and given back by close().
   */
  static async open(config: SidecarConfig, hooks: OperationHooks = {}): Promise<OperationManager> {
    const lock = lockJournal(config.journal);
    try {
      return await OperationManager.openLocked(config, hooks, lock);
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  private static async openLocked(config: SidecarConfig, hooks: OperationHooks, lock: JournalLock): Promise<OperationManager> {
    const { records: journaled, skippedLines } = readJournalFile(config.journal);
    const kept = journalEpoch(journaled);
    const epochRecord: EpochRecord = kept ?? { type: 'epoch', epoch: randomUUID(), createdAt: now() };
    const latest = replayJournal(journaled, epochRecord.epoch);
    const observed = replayObserved(journaled);
    const rerun: Operation[] = [];
    const records: OperationRecord[] = [];
    for (const record of latest.values()) {
      let op = record.operation;
      if (record.type === 'accepted') {
        // Accepted but never finished: its action was started (or about to be) when the sidecar stopped.
        op = { ...op, attempts: op.attempts + 1, startedAt: op.startedAt ?? op.createdAt };
        const action = config.graphs[op.graph]?.nodes[op.node];
        if (action?.idempotent === true) {
          op = { ...op, phase: 'Pending', message: 'accepted again after a restart (idempotent action)' };
          rerun.push(op);
          records.push({ type: 'accepted', operation: op });
          continue;
        }
        op = {
          ...op,
          phase: 'Failed',
          reason: 'Interrupted',
          message: 'the sidecar stopped while the action ran; it was not run again (not declared idempotent)',
          finishedAt: now(),
        };
      }
      records.push({ type: 'finished', operation: op });
    }
    const state = new JournalState(config.retainOperations);
    state.apply(epochRecord);
    for (const record of records) state.apply(record);
    for (const [graph, { events }] of observed) for (const event of events) state.apply({ type: 'observed', graph, event });
    const journal = await Journal.openCompacted(config.journal, state, {
      compactionBytes: config.journalCompactionBytes,
      onFailure: (error) => hooks.onJournalFailure?.(error),
      onCompacted: (stats) => hooks.onJournalCompacted?.(stats),
    });
    const manager = new OperationManager(
      config,
      journal,
      lock,
      hooks,
      { epoch: epochRecord.epoch, createdAt: epochRecord.createdAt, isNew: kept === undefined },
      observed,
      skippedLines,
    );
    for (const record of records) {
      const op = record.operation;
      const entry = manager.addEntry(op, requestKey(op.graph, op.node, op.params), Promise.resolve());
      if (isTerminal(op.phase)) manager.markFinished(entry);
    }
    for (const op of rerun) {
      const entry = manager.entries.get(op.id);
      if (entry !== undefined) void manager.run(entry);
    }
    return manager;
  }

  /** The journal's size now and its rewrites since the start. */
  journalStats(): { bytes: number; compactions: number } {
    return this.journal.stats();
  }

  get(id: string): Operation | undefined {
    return this.entries.get(id)?.op;
  }

  active(graph?: string): string[] {
    const ids = [...this.activeIds];
    return graph === undefined ? ids : ids.filter((id) => this.entries.get(id)?.op.graph === graph);
  }

  defaultGraph(): string | undefined {
    const names = Object.keys(this.config.graphs);
    return names.length === 1 ? names[0] : undefined;
  }

  /** Starts an operation, or returns the one with this id. `created` is false for a retry. */
  async start(id: string, request: StartOperationRequest): Promise<{ operation: Operation; created: boolean }> {
    if (request.epoch !== undefined && request.epoch !== this.epoch) {
      throw new OperationRefused(
        409,
        'epoch-mismatch',
        `the request expects the sidecar of epoch ${request.epoch}; this sidecar is epoch ${this.epoch} ` +
          '(it started without the journal of that one, and does not remember its operations)',
        { field: 'body.epoch' },
      );
    }
    const graph = request.graph ?? this.defaultGraph();
    if (graph === undefined) {
      throw new OperationRefused(422, 'unknown-graph', 'this sidecar serves several graphs: name one', {
        field: 'body.graph',
      });
    }
    const graphConfig = this.config.graphs[graph];
    if (graphConfig === undefined) {
      throw new OperationRefused(422, 'unknown-graph', `no graph "${graph}" is configured`, { field: 'body.graph' });
    }
    const params = request.params ?? {};
    const key = requestKey(graph, request.node, params);
    const existing = this.entries.get(id);
    if (existing !== undefined) {
      if (existing.requestKey !== key) {
        throw new OperationRefused(
          409,
          'id-conflict',
          `operation ${id} exists with another request (graph ${existing.op.graph}, node ${existing.op.node})`,
          { field: 'body' },
        );
      }
      await existing.accepted;
      return { operation: existing.op, created: false };
    }
    const action = graphConfig.nodes[request.node];
    if (action === undefined) {
      throw new OperationRefused(
        422,
        'unknown-node',
        `graph "${graph}" has no action for node "${request.node}" (configured: ${Object.keys(graphConfig.nodes).join(', ') || 'none'})`,
        { field: 'body.node' },
      );
    }
    if (request.rerun === true && !action.idempotent) {
      throw new OperationRefused(
        409,
        'not-idempotent',
        `the action of node "${request.node}" of graph "${graph}" is not declared idempotent: operation ${id} may ` +
          'already have run on a sidecar that forgot it, so it is not run again',
        { field: 'body.rerun' },
      );
    }
    if (this.closing) throw new OperationRefused(503, 'shutting-down', 'the sidecar is shutting down');
    const active = this.active();
    if (active.length >= this.config.maxActiveOperations) {
      throw new OperationRefused(
        409,
        'busy',
        `another operation is active (${active.join(', ')}); at most ${this.config.maxActiveOperations} at once`,
        { activeOperations: active },
      );
    }
    const op: Operation = {
      id,
      epoch: this.epoch,
      graph,
      node: request.node,
      params,
      phase: 'Pending',
      events: [],
      message:
        request.rerun === true
          ? 'accepted again (it may have run on a sidecar that forgot it; the action is declared idempotent)'
          : 'accepted',
      createdAt: now(),
      // run() counts the run it starts: a start with attempt n reports n once it runs.
      attempts: (request.attempt ?? 1) - 1,
      outputTail: [],
    };
    const accepted = this.journal.append({ type: 'accepted', operation: op });
    const entry = this.addEntry(op, key, accepted);
    try {
      await accepted;
    } catch (error) {
      this.entries.delete(id);
      this.activeIds.delete(id);
      entry.markDone();
      throw error;
    }
    // Durable: the action starts now (the spawner starts its program while the 202 is written); the
    // 202 answers the operation as accepted.
    const asAccepted = entry.op;
    void this.run(entry);
    return { operation: asAccepted, created: true };
  }

  /** The probe events of a graph the journal held at open, oldest first, and the last seq it gave. */
  observedEvents(graph: string): { events: ObservedEvent[]; lastSeq: number } {
    const observed = this.observed.get(graph);
    return { events: [...(observed?.events ?? [])], lastSeq: observed?.lastSeq ?? 0 };
  }

  /** Journals a probe event; resolves once it is on disk, before anyone may see it. */
  recordObserved(graph: string, event: ObservedEvent): Promise<void> {
    return this.journal.append({ type: 'observed', graph, event });
  }

  /** Waits until the operation is finished or waitMs passed; returns it as it is then. */
  async wait(id: string, waitMs: number): Promise<Operation | undefined> {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    if (waitMs > 0 && !isTerminal(entry.op.phase)) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([entry.done, new Promise((r) => (timer = setTimeout(r, waitMs)))]);
      clearTimeout(timer);
    }
    return entry.op;
  }

  /** Cancels a pending or running operation and waits until it has stopped; a finished one is left as is. */
  async cancel(id: string): Promise<Operation> {
    const entry = this.entries.get(id);
    if (entry === undefined) throw new OperationRefused(404, 'not-found', `no operation ${id}`);
    if (!isTerminal(entry.op.phase)) {
      entry.abort ??= new AbortController();
      entry.abort.abort(new Error('cancelled'));
      await entry.done;
    }
    return entry.op;
  }

  /** Stops the running actions without journaling an end: the next start treats them as interrupted. */
  async close(): Promise<void> {
    this.closing = true;
    const running = [...this.activeIds].map((id) => this.entries.get(id) as Entry);
    for (const entry of running) {
      entry.abort ??= new AbortController();
      entry.abort.abort(new Error('sidecar shutting down'));
    }
    await Promise.all(running.map((e) => e.done));
    await this.journal.close();
    this.lock.release();
  }

  private addEntry(op: Operation, key: string, accepted: Promise<void>): Entry {
    let markDone!: () => void;
    const done = new Promise<void>((resolve) => (markDone = resolve));
    const entry: Entry = { op, requestKey: key, accepted, done, markDone, abort: undefined };
    this.entries.set(op.id, entry);
    if (!isTerminal(op.phase)) this.activeIds.add(op.id);
    return entry;
  }

  private async run(entry: Entry): Promise<void> {
    const action = this.config.graphs[entry.op.graph]?.nodes[entry.op.node] as ActionConfig;
    entry.abort ??= new AbortController();
    const started = performance.now();
    entry.op = { ...entry.op, phase: 'Running', startedAt: now(), attempts: entry.op.attempts + 1, message: 'running' };
    this.hooks.onStarted?.(entry.op);
    const outcome: ActionOutcome = await runAction(
      action,
      { operationId: entry.op.id, graph: entry.op.graph, node: entry.op.node, params: entry.op.params, signal: entry.abort.signal },
      { baseDir: this.config.baseDir, killGraceMs: this.config.killGraceMs, tailLines: this.config.outputTailLines },
    );
    if (this.closing && outcome.phase === 'Cancelled') {
      entry.markDone(); // shutting down: left unfinished in the journal on purpose
      return;
    }
    const finished: Operation = { ...entry.op, ...outcome, finishedAt: now() };
    try {
      await this.journal.append({ type: 'finished', operation: finished });
    } catch {
      // Not durable: never shown finished. The journal has failed (the sidecar exits on it); after the
      // restart the operation is reported Interrupted, or run again when idempotent.
      entry.markDone();
      return;
    }
    entry.op = finished;
    this.markFinished(entry);
    this.hooks.onFinished?.(finished, performance.now() - started);
  }

  private markFinished(entry: Entry): void {
    entry.abort = undefined;
    this.activeIds.delete(entry.op.id);
    entry.markDone();
    this.finishedOrder.push(entry.op.id);
    // Old operations stay known (never run twice) but lose their output tail, to bound memory.
    while (this.finishedOrder.length > this.config.retainOperations) {
      const old = this.entries.get(this.finishedOrder.shift() as string);
      if (old !== undefined && old.op.outputTail.length > 0) old.op = { ...old.op, outputTail: [] };
    }
  }
}
