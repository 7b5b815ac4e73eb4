import { invalidStoredObjectProblem, isConflict, objectKey, permissionProblem, type KubeObject } from '../kube/transport/index.ts';
import type { Informer } from './informer.ts';
import { WorkQueue } from './workqueue.ts';
import type { ControllerMetrics, ReconcileOutcome } from './metrics.ts';
import { createLogger, type Logger } from './logger.ts';

/** What a reconcile asks for: nothing (done until something changes) or another look after a delay. */
export type ReconcileResult = { requeueAfter?: number } | void | undefined;

export interface ReconcileContext {
  /** A child logger whose every line carries `key`. */
  log: Logger;
  /** Failures of this key since its last success (0 on a first attempt). */
  retries: number;
}

export type Reconcile = (key: string, ctx: ReconcileContext) => Promise<ReconcileResult>;

/**
 * A failure the reconcile has said on the object already (a condition naming what failed and why):
 * retried with the queue's backoff, and logged as its message in one line. Its cause is the error of
 * another object than the one reconciled (an owned object's refused apply), which must not be read as
 * the reconciled object's own (a 422 as its CRD refusing it, a 403 as RBAC's).
 */
export class SaidOnObjectError extends Error {
  override name = 'SaidOnObjectError';
}

export interface ControllerOptions {
  /** Names the controller in logs and metrics. */
  name: string;
  reconcile: Reconcile;
  /** Parallel reconciles (different keys only). Default 4. */
  workers?: number;
  queue?: WorkQueue;
  metrics?: ControllerMetrics;
  logger?: Logger;
}

/**
 * Runs `reconcile` for queued keys on N workers: an error re-queues the key with its exponential
 * backoff; success forgets the backoff; `requeueAfter` schedules another look.
 */
export class Controller {
  readonly name: string;
  readonly queue: WorkQueue;
  readonly #reconcile: Reconcile;
  readonly #workers: number;
  readonly #metrics: ControllerMetrics | undefined;
  readonly #duration: ReturnType<ControllerMetrics['reconcileDuration']['labels']> | undefined;
  readonly #log: Logger;
  #running: Promise<void>[] = [];
  /** Set by a stop without drain: a key handed out before it is not reconciled after it. */
  #dropping = false;

  constructor(options: ControllerOptions) {
    const workers = options.workers ?? 4;
    if (!Number.isInteger(workers) || workers < 1) throw new Error(`controller ${options.name}: workers must be a positive integer, got ${workers}`);
    this.name = options.name;
    this.#reconcile = options.reconcile;
    this.#workers = workers;
    this.#metrics = options.metrics;
    this.#log = (options.logger ?? createLogger()).child({ controller: options.name });
    const metrics = options.metrics;
    // This controller's series, looked up once: the queue moves them on every key.
    const depth = metrics?.queueDepth.labels(options.name);
    const latency = metrics?.queueLatency.labels(options.name);
    this.#duration = metrics?.reconcileDuration.labels(options.name);
    this.queue = options.queue ?? new WorkQueue({
      observer: depth && latency && {
        depth: (n) => depth.set(n),
        latency: (seconds) => latency.observe(seconds),
      },
    });
  }

  get started(): boolean {
    return this.#running.length > 0;
  }

  enqueue(key: string): void {
    this.queue.add(key);
  }

  /** Enqueues the key of every object the informer adds, updates (resyncs included) or deletes. */
  watch<T extends KubeObject>(informer: Informer<T>): void {
    const enqueue = (obj: T) => this.queue.add(objectKey(obj));
    informer.addHandler({ onAdd: enqueue, onChange: enqueue, onDelete: enqueue });
  }

  /** Starts the workers; once stopped, a controller does not start again (its queue is shut down). */
  start(): void {
    if (this.started || this.queue.shuttingDown) return;
    this.#log.info({ workers: this.#workers }, 'starting workers');
    for (let i = 0; i < this.#workers; i += 1) this.#running.push(this.#work());
  }

  /**
   * Stops taking new keys and resolves once the running reconciles have finished. With `drain`
   * (the default) the queued keys are reconciled first; without, they are dropped and no
   * reconcile starts after this call (a replica that lost its leadership must not act on any).
   */
  async stop(options: { drain?: boolean } = {}): Promise<void> {
    const drain = options.drain ?? true;
    if (!this.started) {
      // No worker would ever take the queued keys (a standby replica): drop them.
      await this.queue.shutDownAndDrop();
      return;
    }
    if (drain) {
      await this.queue.shutDownWithDrain();
    } else {
      this.#dropping = true;
      const dropped = this.queue.length;
      const idle = this.queue.shutDownAndDrop();
      this.#log.info({ dropped, running: this.queue.processing }, 'stopping without drain: queued keys dropped');
      await idle;
    }
    await Promise.all(this.#running);
    this.#log.info('workers stopped');
  }

  async #work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      // Handed out just before a stop without drain, taken up just after it.
      if (this.#dropping) {
        this.queue.done(key);
        continue;
      }
      await this.#process(key);
    }
  }

  async #process(key: string): Promise<void> {
    const log = this.#log.child({ key });
    const started = performance.now();
    let outcome: ReconcileOutcome = 'success';
    try {
      const result = await this.#reconcile(key, { log, retries: this.queue.numRequeues(key) });
      this.queue.forget(key);
      const after = result?.requeueAfter;
      if (after !== undefined && after > 0) outcome = 'requeue_after';
      // The looks earlier reconciles asked for (a poll while an action ran, an error's backoff) are
      // obsolete: this one read the key's whole state and says when it is due again.
      this.queue.replaceAfter(key, after);
      log.debug({ result: outcome, requeueAfterMs: after, durationMs: round(performance.now() - started) }, 'reconciled');
    } catch (err) {
      outcome = 'error';
      this.queue.addRateLimited(key);
      const retries = this.queue.numRequeues(key);
      const durationMs = round(performance.now() - started);
      const invalid = invalidStoredObjectProblem(err);
      // Another writer (or this controller's own earlier write) changed the object since it was read:
      // an expected retry under optimistic concurrency, worth one line, not an error with its stack.
      if (isConflict(err)) log.info({ retries, durationMs }, `write conflict, looked at again: ${err.message}`);
      else if (err instanceof SaidOnObjectError) log.warn({ retries, durationMs }, err.message);
      // Bad input stored before its CRD refused it: one line naming the fields, no stack trace.
      else if (invalid !== undefined) log.error({ retries, durationMs }, invalid);
      else log.error({ err, retries, durationMs }, permissionProblem(err) ?? 'reconcile failed');
    } finally {
      this.#metrics?.reconcileTotal.labels(this.name, outcome).inc();
      this.#duration?.observe((performance.now() - started) / 1000);
      this.queue.done(key);
    }
  }
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
