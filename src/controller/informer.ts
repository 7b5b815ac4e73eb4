import { setTimeout as sleep } from 'node:timers/promises';
import {
  isGone, permissionProblem, isWatchIdle, objectKey, type KubeObject, type KubeTransport, type ResourceRef, type WatchEvent,
} from '../kube/transport/index.ts';
import { exponentialBackoffMs } from './rate-limiter.ts';
import { createLogger, type Logger } from './logger.ts';
import { CompactMap, DEFAULT_COMPACT_AFTER_MS } from './compact-map.ts';

/** Read access to an informer's cache, by `namespace/name`. */
export interface Store<T> {
  get(key: string): T | undefined;
  has(key: string): boolean;
  keys(): IterableIterator<string>;
  /** All objects, or those of one namespace. */
  list(namespace?: string): T[];
  readonly size: number;
}

export interface InformerHandler<T> {
  onAdd?(obj: T): void;
  /** Also called with old === obj on a periodic resync. */
  onUpdate?(old: T, obj: T): void;
  /** As onUpdate, given the new object only: the cached old one is then not read (each read decodes it). */
  onChange?(obj: T): void;
  onDelete?(obj: T): void;
}

export interface InformerOptions<T extends KubeObject> {
  transport: KubeTransport;
  resource: ResourceRef;
  /** Default: all namespaces. */
  namespace?: string;
  labelSelector?: string;
  /** Shrinks each object before it is cached (compacted: CompactMap). Default: `stripManagedFields`. */
  transform?: (obj: KubeObject) => T;
  /** Calls onUpdate(obj, obj) for every cached object this often; 0 (default) = never. */
  resyncPeriodMs?: number;
  /**
   * The server ends each watch after this long (client-go: 5-10 min at random). Default: at random
   * between 0.45 and 0.9 x watchIdleTimeoutMs (300-600 s without an idle timeout). Must be shorter
   * than watchIdleTimeoutMs.
   */
  watchTimeoutSeconds?: number;
  /**
   * A watch on which nothing arrives (no event, no bookmark, not a byte) for this long is taken for
   * dead (a connection dropped without a reset), abandoned and opened again from the last
   * resourceVersion. Default 180 s; 0: never.
   */
  watchIdleTimeoutMs?: number;
  /** Backoff between failed list/watch attempts (client-go: 800 ms up to 30 s). */
  backoff?: { initialMs: number; maxMs: number };
  /** List page size. Default 500. */
  pageSize?: number;
  /** A cached object unchanged this long is kept deflated (CompactMap). Default 10 s. */
  compactAfterMs?: number;
  logger?: Logger;
}

export interface InformerStats {
  /** Full lists done (the first included). */
  lists: number;
  /** Relists caused by 410 Gone. */
  relists: number;
  /** Watch streams opened. */
  watches: number;
  /** Failed list or watch attempts. */
  failures: number;
  /** Watches abandoned after watchIdleTimeoutMs without a byte. */
  idleTimeouts: number;
}

export const DEFAULT_WATCH_IDLE_TIMEOUT_MS = 180_000;

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';

/** The default transform: drops managedFields and kubectl's last-applied annotation (often most of an object's size). */
export function stripManagedFields<T extends KubeObject>(obj: T): T {
  const { annotations, ...metadata } = dropManagedFields(obj).metadata;
  const kept: KubeObject['metadata'] = metadata;
  if (annotations) {
    const { [LAST_APPLIED]: _lastApplied, ...rest } = annotations;
    if (Object.keys(rest).length > 0) kept.annotations = rest;
  }
  return { ...obj, metadata: kept };
}

/** Drops managedFields only: a cache whose objects are written back whole keeps every other field. */
export function dropManagedFields<T extends KubeObject>(obj: T): T {
  const { managedFields: _dropped, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/**
 * client-go's reflector + indexer in one: lists, then watches from the list's resourceVersion,
 * keeps a cache by `namespace/name`, relists on 410 Gone, re-watches from the last seen
 * resourceVersion (bookmarks included) when a stream ends, with backoff after failures.
 */
export class Informer<T extends KubeObject = KubeObject> {
  readonly stats: InformerStats = { lists: 0, relists: 0, watches: 0, failures: 0, idleTimeouts: 0 };
  /** The cache: each read is an object of its own (a handler or caller may change it freely). */
  readonly #items: CompactMap<T>;
  readonly #handlers: InformerHandler<T>[] = [];
  readonly #options: InformerOptions<T>;
  readonly #transform: (obj: KubeObject) => T;
  readonly #log: Logger;
  readonly #idleTimeoutMs: number;
  #resourceVersion = '';
  #synced = false;
  #syncWaiters: (() => void)[] = [];
  #abort: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #resync: NodeJS.Timeout | undefined;
  #compaction: NodeJS.Timeout | undefined;

  readonly store: Store<T>;

  constructor(options: InformerOptions<T>) {
    if (options.resyncPeriodMs !== undefined && !(options.resyncPeriodMs >= 0)) {
      throw new Error(`informer: resyncPeriodMs must be >= 0, got ${options.resyncPeriodMs}`);
    }
    const idleMs = options.watchIdleTimeoutMs ?? DEFAULT_WATCH_IDLE_TIMEOUT_MS;
    if (!(idleMs >= 0)) throw new Error(`informer: watchIdleTimeoutMs must be >= 0, got ${idleMs}`);
    // A watch of a quiet resource may hear nothing until the server ends it (kube-apiserver 1.20 sent
    // no bookmark before; a current one, one a minute): ending later than the idle bound, it could be
    // taken for a dead one.
    if (idleMs > 0 && options.watchTimeoutSeconds !== undefined && !(options.watchTimeoutSeconds * 1000 < idleMs)) {
      throw new Error(`informer: watchTimeoutSeconds (${options.watchTimeoutSeconds}) must be shorter than watchIdleTimeoutMs (${idleMs} ms)`);
    }
    this.#idleTimeoutMs = idleMs;
    this.#options = options;
    this.#items = new CompactMap<T>(options.compactAfterMs === undefined ? {} : { compactAfterMs: options.compactAfterMs });
    this.#transform = options.transform ?? ((obj: KubeObject) => stripManagedFields(obj) as T);
    // With its group: an operator of several kinds may watch one plural of two groups.
    const { plural, group } = options.resource;
    this.#log = (options.logger ?? createLogger()).child({ informer: group === '' ? plural : `${plural}.${group}` });
    const items = this.#items;
    this.store = {
      get: (key) => items.get(key),
      has: (key) => items.has(key),
      keys: () => items.keys(),
      list: (namespace) => {
        const all = [...items.values()];
        return namespace === undefined ? all : all.filter((obj) => obj.metadata.namespace === namespace);
      },
      get size() {
        return items.size;
      },
    };
  }

  get hasSynced(): boolean {
    return this.#synced;
  }
  /** The resourceVersion of the last list, event or bookmark seen. */
  get resourceVersion(): string {
    return this.#resourceVersion;
  }

  addHandler(handler: InformerHandler<T>): void {
    this.#handlers.push(handler);
  }

  /** Resolves once the first list is in the cache. */
  waitForSync(): Promise<void> {
    if (this.#synced) return Promise.resolve();
    return new Promise((resolve) => this.#syncWaiters.push(resolve));
  }

  start(): void {
    if (this.#loop) return;
    this.#abort = new AbortController();
    this.#loop = this.#run(this.#abort.signal);
    const period = this.#options.resyncPeriodMs ?? 0;
    if (period > 0) this.#resync = setInterval(() => this.#resyncAll(), period);
    const compactAfterMs = this.#options.compactAfterMs ?? DEFAULT_COMPACT_AFTER_MS;
    this.#compaction = setInterval(() => this.#items.compactIdle(), Math.max(compactAfterMs / 2, 10)).unref();
  }

  /** Cached objects not yet kept deflated (changed within compactAfterMs). */
  get uncompacted(): number {
    return this.#items.uncompacted;
  }

  async stop(): Promise<void> {
    clearInterval(this.#resync);
    clearInterval(this.#compaction);
    this.#abort?.abort();
    await this.#loop;
    this.#loop = undefined;
  }

  async #run(signal: AbortSignal): Promise<void> {
    const backoff = this.#options.backoff ?? { initialMs: 800, maxMs: 30_000 };
    let needList = true;
    let failures = 0;
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.#listAndReplace();
          needList = false;
        }
        const started = performance.now();
        const events = await this.#watch(signal);
        // A stream the server ends at once without a single event is a failure in disguise.
        failures = events > 0 || performance.now() - started >= 500 ? 0 : failures + 1;
      } catch (err) {
        if (signal.aborted) break;
        if (isWatchIdle(err)) {
          // A dead connection, not a refusal by the server: re-watch at once, from where the stream was.
          this.stats.idleTimeouts += 1;
          failures = 0;
          this.#log.warn({ resourceVersion: this.#resourceVersion, idleMs: err.idleMs }, 'watch silent for too long, watching again');
          continue;
        }
        if (isGone(err)) {
          this.stats.relists += 1;
          this.#log.info({ resourceVersion: this.#resourceVersion, reason: (err as Error).message }, 'resourceVersion expired, relisting');
          needList = true;
          continue;
        }
        failures += 1;
        this.stats.failures += 1;
        this.#log.warn({ err, failures }, permissionProblem(err) ?? (needList ? 'list failed' : 'watch failed'));
      }
      if (failures > 0) {
        const wait = exponentialBackoffMs(failures - 1, backoff.initialMs, backoff.maxMs);
        await sleep(wait * (1 + Math.random() * 0.2), undefined, { signal }).catch(() => undefined);
      }
    }
  }

  async #listAndReplace(): Promise<void> {
    const { transport, resource, namespace, labelSelector } = this.#options;
    const fresh = new Map<string, T>();
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      const page = await transport.list(resource, { namespace, labelSelector, limit: this.#options.pageSize ?? 500, continue: cont });
      for (const item of page.items) {
        const obj = this.#transform(item);
        fresh.set(objectKey(obj), obj);
      }
      cont = page.metadata.continue || undefined;
      resourceVersion = page.metadata.resourceVersion;
    } while (cont);
    this.stats.lists += 1;
    for (const key of [...this.#items.keys()]) {
      if (!fresh.has(key)) {
        const old = this.#items.get(key)!;
        this.#items.delete(key);
        this.#emit((h) => h.onDelete?.(old));
      }
    }
    for (const [key, obj] of fresh) {
      const old = this.#items.get(key);
      if (old?.metadata.resourceVersion === obj.metadata.resourceVersion) continue;
      this.#items.set(key, obj);
      if (!old) this.#emit((h) => h.onAdd?.(obj));
      else this.#emitUpdate(old, obj);
    }
    this.#resourceVersion = resourceVersion;
    this.#log.debug({ resourceVersion, objects: fresh.size }, 'listed');
    if (!this.#synced) {
      this.#synced = true;
      for (const resolve of this.#syncWaiters.splice(0)) resolve();
    }
  }

  /** Returns the number of events received once the stream ends normally. */
  async #watch(signal: AbortSignal): Promise<number> {
    const { transport, resource, namespace, labelSelector } = this.#options;
    const timeoutSeconds = this.#options.watchTimeoutSeconds ?? defaultWatchTimeoutSeconds(this.#idleTimeoutMs);
    this.stats.watches += 1;
    let events = 0;
    const stream = transport.watch(resource, {
      namespace, labelSelector, resourceVersion: this.#resourceVersion, timeoutSeconds, idleTimeoutMs: this.#idleTimeoutMs, signal,
    });
    this.#log.debug({ resourceVersion: this.#resourceVersion, timeoutSeconds }, 'watching');
    for await (const event of stream) {
      events += 1;
      this.#apply(event);
    }
    this.#log.debug({ resourceVersion: this.#resourceVersion, events }, 'watch ended');
    return events;
  }

  #apply(event: WatchEvent): void {
    const rv = event.object.metadata?.resourceVersion;
    if (event.type === 'BOOKMARK') {
      if (rv) this.#resourceVersion = rv;
      return;
    }
    const obj = this.#transform(event.object);
    const key = objectKey(obj);
    if (event.type === 'DELETED') {
      const old = this.#items.get(key);
      this.#items.delete(key);
      this.#emit((h) => h.onDelete?.(old ?? obj));
    } else {
      const known = this.#items.has(key);
      const old = known && this.#handlers.some((h) => h.onUpdate !== undefined) ? this.#items.get(key) : undefined;
      this.#items.set(key, obj);
      if (known) this.#emitUpdate(old, obj);
      else this.#emit((h) => h.onAdd?.(obj));
    }
    if (rv) this.#resourceVersion = rv;
  }

  #resyncAll(): void {
    if (!this.#synced) return;
    for (const obj of this.#items.values()) this.#emitUpdate(obj, obj);
  }

  /** onUpdate (`old` is read only when some handler has one) and onChange. */
  #emitUpdate(old: T | undefined, obj: T): void {
    this.#emit((h) => {
      if (old !== undefined) h.onUpdate?.(old, obj);
      h.onChange?.(obj);
    });
  }

  #emit(call: (handler: InformerHandler<T>) => void): void {
    for (const handler of this.#handlers) {
      try {
        call(handler);
      } catch (err) {
        this.#log.error({ err }, 'informer handler threw');
      }
    }
  }
}

/** client-go's 5-10 min at random, but ending well before the idle bound when there is one. */
function defaultWatchTimeoutSeconds(idleTimeoutMs: number): number {
  const max = idleTimeoutMs > 0 ? Math.min(600, (0.9 * idleTimeoutMs) / 1000) : 600;
  return Math.max(1, Math.floor(max / 2 + (Math.random() * max) / 2));
}
