import { errors, Pool, type Dispatcher } from 'undici';
import type { KubeConfig } from '@kubernetes/client-node';
import { connectionFromKubeConfig, type ConnectionSettings } from './connection.ts';
import { KubeApiError, WatchIdleError, parseStatus, type ApiStatus } from './errors.ts';
import { resourcePath, type KubeObject, type ObjectList, type ResourceRef, type WatchEvent } from './resource.ts';

export type ApiVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';
const READ_VERBS: ReadonlySet<ApiVerb> = new Set(['get', 'list']);
const WRITE_VERBS: ReadonlySet<ApiVerb> = new Set(['create', 'update', 'patch', 'delete']);

/** Requests sent, by verb; `reads` and `writes` are the operator's per-transition budget (watches are neither). */
export class ApiCounters {
  readonly byVerb: Record<ApiVerb, number> = { get: 0, list: 0, watch: 0, create: 0, update: 0, patch: 0, delete: 0 };
  get reads(): number {
    return sum(this.byVerb, READ_VERBS);
  }
  get writes(): number {
    return sum(this.byVerb, WRITE_VERBS);
  }
  get watches(): number {
    return this.byVerb.watch;
  }
  /** A plain copy, to subtract two snapshots around a piece of work. */
  snapshot(): { reads: number; writes: number; watches: number } {
    return { reads: this.reads, writes: this.writes, watches: this.watches };
  }
}
function sum(byVerb: Record<ApiVerb, number>, verbs: ReadonlySet<ApiVerb>): number {
  let total = 0;
  for (const verb of verbs) total += byVerb[verb];
  return total;
}

export interface KubeTransportOptions {
  /** Most keep-alive connections for ordinary requests (over HTTP/1.1 watches have their own, one each). Default 16. */
  connections?: number;
  /**
   * Negotiate HTTP/2 (ALPN) when the server offers it, as kube-apiserver does: requests and watches
   * then share multiplexed connections. Default true (undici's default); false: HTTP/1.1 only.
   */
  http2?: boolean;
  /** Time limit for one ordinary request's headers and for its body. Default DEFAULT_REQUEST_TIMEOUT_MS (30 s). */
  requestTimeoutMs?: number;
  /** Idle time after which a kept-alive connection closes. Default 30 s. */
  keepAliveTimeoutMs?: number;
  /** The field manager of every write that names none (its entry in managedFields). Default `okt`. */
  fieldManager?: string;
}

export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** Who okt's writes are from in an object's managedFields (the API server would say "unknown"). */
export const DEFAULT_FIELD_MANAGER = 'okt';

export interface ListOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** '' or absent: a consistent read from etcd; '0': any cached state. */
  resourceVersion?: string;
  limit?: number;
  continue?: string;
}

export interface WatchOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  resourceVersion?: string;
  /** Default true: the server sends BOOKMARK events carrying a fresh resourceVersion. */
  allowWatchBookmarks?: boolean;
  /** The server ends the stream after this long. */
  timeoutSeconds?: number;
  /**
   * The stream fails with a WatchIdleError once nothing at all (event, bookmark, byte) has arrived
   * for this long. Default 0: no limit, a stream whose connection silently died hangs for ever.
   */
  idleTimeoutMs?: number;
  signal?: AbortSignal;
}

export interface WriteOptions {
  /** Optimistic concurrency: written into the body's metadata.resourceVersion, so a stale write gets 409 Conflict. */
  resourceVersion?: string;
  fieldManager?: string;
}

export interface DeleteOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: 'Foreground' | 'Background' | 'Orphan';
}

interface RequestSpec {
  verb: ApiVerb;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
}

/**
 * A lean client of the Kubernetes API: one undici Pool of keep-alive connections for ordinary
 * requests, a separate one for long-lived watches, JSON in and out, typed errors, and counters.
 */
export class KubeTransport {
  readonly counters = new ApiCounters();
  readonly #settings: ConnectionSettings;
  readonly #pool: Pool;
  #watchPool: Pool;
  readonly #newWatchPool: () => Pool;
  /** Watch pools replaced after a silent watch, closing once their last stream ends. */
  readonly #retiredWatchPools = new Set<Pool>();
  readonly #timeoutMs: number;
  readonly #fieldManager: string;
  readonly #refresh: (() => Promise<ConnectionSettings>) | undefined;
  #headers: Record<string, string>;

  static async fromKubeConfig(kc: KubeConfig, options: KubeTransportOptions = {}): Promise<KubeTransport> {
    const settings = await connectionFromKubeConfig(kc);
    return new KubeTransport(settings, options, () => connectionFromKubeConfig(kc));
  }

  constructor(settings: ConnectionSettings, options: KubeTransportOptions = {}, refresh?: () => Promise<ConnectionSettings>) {
    const connections = options.connections ?? 16;
    if (!Number.isInteger(connections) || connections < 1) {
      throw new Error(`KubeTransport: connections must be a positive integer, got ${connections}`);
    }
    this.#settings = settings;
    this.#headers = settings.headers;
    this.#refresh = refresh;
    this.#timeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.#fieldManager = options.fieldManager ?? DEFAULT_FIELD_MANAGER;
    const keepAliveTimeout = options.keepAliveTimeoutMs ?? 30_000;
    const connect = { ...settings.tls, keepAlive: true, keepAliveInitialDelay: 30_000 };
    const allowH2 = options.http2 ?? true;
    this.#pool = new Pool(settings.origin, { connections, connect, keepAliveTimeout, keepAliveMaxTimeout: keepAliveTimeout, allowH2 });
    this.#newWatchPool = () => new Pool(settings.origin, { connect, keepAliveTimeout, keepAliveMaxTimeout: keepAliveTimeout, allowH2 });
    this.#watchPool = this.#newWatchPool();
  }

  get origin(): string {
    return this.#settings.origin;
  }

  get<T extends KubeObject = KubeObject>(res: ResourceRef, namespace: string | undefined, name: string): Promise<T> {
    return this.#json<T>({ verb: 'get', method: 'GET', path: resourcePath(res, namespace, name) });
  }

  list<T extends KubeObject = KubeObject>(res: ResourceRef, opts: ListOptions = {}): Promise<ObjectList<T>> {
    const { namespace, ...query } = opts;
    return this.#json<ObjectList<T>>({ verb: 'list', method: 'GET', path: resourcePath(res, namespace), query });
  }

  create<T extends KubeObject = KubeObject>(res: ResourceRef, namespace: string | undefined, body: KubeObject, opts: WriteOptions = {}): Promise<T> {
    return this.#json<T>({ verb: 'create', method: 'POST', path: resourcePath(res, namespace), body, query: { fieldManager: opts.fieldManager ?? this.#fieldManager } });
  }

  /**
   * PUT of the object, or of a subresource such as `status` (the server then takes only the status
   * from the body): the body's metadata.resourceVersion (or `opts.resourceVersion`) is the precondition.
   */
  replace<T extends KubeObject = KubeObject>(
    res: ResourceRef, namespace: string | undefined, name: string, body: KubeObject,
    opts: WriteOptions & { subresource?: string } = {},
  ): Promise<T> {
    const withVersion = opts.resourceVersion === undefined ? body : { ...body, metadata: { ...body.metadata, resourceVersion: opts.resourceVersion } };
    return this.#json<T>({ verb: 'update', method: 'PUT', path: resourcePath(res, namespace, name, opts.subresource), body: withVersion, query: { fieldManager: opts.fieldManager ?? this.#fieldManager } });
  }

  /** JSON merge patch (RFC 7386) of the object, or of a subresource such as `status`. */
  patch<T extends KubeObject = KubeObject>(
    res: ResourceRef, namespace: string | undefined, name: string, patch: Record<string, unknown>,
    opts: WriteOptions & { subresource?: string } = {},
  ): Promise<T> {
    let body = patch;
    if (opts.resourceVersion !== undefined) {
      const metadata = (patch.metadata ?? {}) as Record<string, unknown>;
      body = { ...patch, metadata: { ...metadata, resourceVersion: opts.resourceVersion } };
    }
    return this.#json<T>({
      verb: 'patch', method: 'PATCH', path: resourcePath(res, namespace, name, opts.subresource), body,
      contentType: 'application/merge-patch+json', query: { fieldManager: opts.fieldManager ?? this.#fieldManager },
    });
  }

  /**
   * Server-side apply of an object okt owns (a PATCH of `application/apply-patch+yaml`, JSON being YAML):
   * created if absent, else the fields it names set under the field manager (default `okt`), which then
   * owns them (managedFields operation `Apply`); a field it no longer names and alone owned is removed.
   * `force`: take fields another manager owns instead of failing with 409 Conflict.
   */
  apply<T extends KubeObject = KubeObject>(
    res: ResourceRef, namespace: string | undefined, body: KubeObject, opts: { fieldManager?: string; force?: boolean } = {},
  ): Promise<T> {
    const name = body.metadata.name;
    if (!name) throw new Error(`KubeTransport.apply: the ${res.plural} object has no metadata.name`);
    return this.#json<T>({
      verb: 'patch', method: 'PATCH', path: resourcePath(res, namespace, name), body,
      contentType: 'application/apply-patch+yaml', query: { fieldManager: opts.fieldManager ?? this.#fieldManager, force: opts.force },
    });
  }

  /** Merge patch of `/status`: `status` is merged into the object's status. */
  patchStatus<T extends KubeObject = KubeObject>(res: ResourceRef, namespace: string | undefined, name: string, status: Record<string, unknown>, opts: WriteOptions = {}): Promise<T> {
    return this.patch<T>(res, namespace, name, { status }, { ...opts, subresource: 'status' });
  }

  /** Merge patch of metadata (finalizers, labels, annotations); a list such as `finalizers` is replaced whole. */
  patchMetadata<T extends KubeObject = KubeObject>(res: ResourceRef, namespace: string | undefined, name: string, metadata: Record<string, unknown>, opts: WriteOptions = {}): Promise<T> {
    return this.patch<T>(res, namespace, name, { metadata }, opts);
  }

  /** Returns the object as the server left it (with a deletionTimestamp while finalizers remain) or a Status. */
  delete(res: ResourceRef, namespace: string | undefined, name: string, opts: DeleteOptions = {}): Promise<KubeObject | ApiStatus> {
    const body = opts.preconditions || opts.propagationPolicy
      ? { kind: 'DeleteOptions', apiVersion: 'v1', preconditions: opts.preconditions, propagationPolicy: opts.propagationPolicy }
      : undefined;
    return this.#json<KubeObject | ApiStatus>({ verb: 'delete', method: 'DELETE', path: resourcePath(res, namespace, name), body });
  }

  /**
   * Streams watch events (one JSON object per line). An ERROR event ends the stream with a
   * KubeApiError carrying its Status (410 Gone when the resourceVersion is too old).
   * Breaking out of the loop or aborting `signal` closes the connection.
   */
  async *watch<T extends KubeObject = KubeObject>(res: ResourceRef, opts: WatchOptions = {}): AsyncGenerator<WatchEvent<T>> {
    const { namespace, signal, allowWatchBookmarks = true, idleTimeoutMs = 0, ...rest } = opts;
    const spec: RequestSpec = { verb: 'watch', method: 'GET', path: resourcePath(res, namespace), query: { watch: 1, allowWatchBookmarks, ...rest } };
    const pool = this.#watchPool;
    // kube-apiserver answers a watch's headers at once, and undici's body timeout restarts with every
    // chunk received: together, a limit on silence from the request on.
    const timeouts = { headersMs: idleTimeoutMs > 0 ? Math.min(idleTimeoutMs, this.#timeoutMs) : this.#timeoutMs, bodyMs: idleTimeoutMs };
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#send(spec, pool, signal, timeouts);
    } catch (err) {
      if (!(idleTimeoutMs > 0 && err instanceof errors.HeadersTimeoutError)) throw err;
      this.#retireWatchPool(pool);
      throw new WatchIdleError(spec.path, idleTimeoutMs);
    }
    const decoder = new TextDecoder();
    let pending = '';
    try {
      for await (const chunk of response.body) {
        pending += decoder.decode(chunk as Uint8Array, { stream: true });
        let newline: number;
        while ((newline = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, newline);
          pending = pending.slice(newline + 1);
          if (line.trim() === '') continue;
          const event = JSON.parse(line) as { type: string; object: unknown };
          if (event.type === 'ERROR') {
            const status = event.object as ApiStatus;
            throw new KubeApiError({ statusCode: status.code ?? 500, method: 'WATCH', path: spec.path, status });
          }
          yield event as WatchEvent<T>;
        }
      }
    } catch (err) {
      if (!(err instanceof errors.BodyTimeoutError)) throw err;
      this.#retireWatchPool(pool);
      throw new WatchIdleError(spec.path, idleTimeoutMs);
    } finally {
      if (!response.body.destroyed) response.body.destroy();
    }
  }

  /**
   * Over HTTP/2 every watch shares the pool's connection, which a silent stream suggests is dead:
   * undici would first PING it, holding the next watch back for as long again. New watches go to a
   * fresh pool at once; the old one closes when its streams end (those on a dead connection fail
   * when undici's PING goes unanswered).
   */
  #retireWatchPool(pool: Pool): void {
    if (pool !== this.#watchPool) return; // another silent watch retired it already
    this.#watchPool = this.#newWatchPool();
    this.#retiredWatchPools.add(pool);
    void pool.close().catch(() => undefined).finally(() => this.#retiredWatchPools.delete(pool));
  }

  /** Closes every connection; pending requests fail. */
  async close(): Promise<void> {
    await Promise.all([this.#pool, this.#watchPool, ...this.#retiredWatchPools].map((pool) => pool.destroy()));
  }

  async #json<T>(spec: RequestSpec): Promise<T> {
    const response = await this.#send(spec, this.#pool, undefined, { headersMs: this.#timeoutMs, bodyMs: this.#timeoutMs });
    return (await response.body.json()) as T;
  }

  async #send(
    spec: RequestSpec, pool: Pool, signal: AbortSignal | undefined, timeouts: { headersMs: number; bodyMs: number }, retried = false,
  ): Promise<Dispatcher.ResponseData> {
    this.counters.byVerb[spec.verb] += 1;
    const path = this.#settings.pathPrefix + spec.path + queryString(spec.query);
    const headers: Record<string, string> = { ...this.#headers, accept: 'application/json' };
    let body: string | undefined;
    if (spec.body !== undefined) {
      body = JSON.stringify(spec.body);
      headers['content-type'] = spec.contentType ?? 'application/json';
    }
    const response = await pool.request({
      path, method: spec.method, headers, body, signal: signal ?? null,
      headersTimeout: timeouts.headersMs, bodyTimeout: timeouts.bodyMs,
    });
    if (response.statusCode < 400) return response;
    const text = await response.body.text();
    // Expired exec/OIDC credentials: resolve them again once.
    if (response.statusCode === 401 && this.#refresh && !retried) {
      this.#headers = (await this.#refresh()).headers;
      return this.#send(spec, pool, signal, timeouts, true);
    }
    throw new KubeApiError({ statusCode: response.statusCode, method: spec.method, path: spec.path, status: parseStatus(text), body: text });
  }
}

function queryString(query: RequestSpec['query']): string {
  if (!query) return '';
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) {
    if (value !== undefined && value !== '') params.set(name, String(value));
  }
  const text = params.toString();
  return text ? `?${text}` : '';
}
