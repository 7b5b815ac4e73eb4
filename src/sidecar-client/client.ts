// The typed client of the sidecar, for the operator. Every call is idempotent (a start is keyed by its
// operation id), so every call is retried with capped exponential backoff and full jitter on network
// errors, timeouts and 5xx/429. Answers are size-limited and validated with the protocol's zod schemas:
// a malformed or hostile answer becomes a SidecarProtocolError, never a crash.
import { Agent, type Dispatcher } from 'undici';
import type { z } from 'zod';
import {
  API_PREFIX,
  HealthSchema,
  MAX_WAIT_MS,
  ObservationSchema,
  OperationSchema,
  ProblemSchema,
  isTerminal,
  type Observation,
  type Operation,
  type Problem,
  type StartOperationRequest,
} from './protocol.ts';

export interface SidecarClientOptions {
  /** e.g. http://127.0.0.1:8479 */
  baseUrl: string;
  token: string;
  /** Per attempt, in ms (a long-poll adds its wait). Default 5000. */
  timeoutMs?: number;
  /** Retries after the first attempt. Default 3. */
  retries?: number;
  /** First backoff in ms, doubled each retry, capped at 2000, with full jitter. Default 50. */
  backoffMs?: number;
  /** Larger answers are a protocol error. Default 1 MiB. */
  maxAnswerBytes?: number;
  /** Default: a keep-alive undici Agent owned (and closed) by the client. */
  dispatcher?: Dispatcher;
}

export type SidecarErrorKind = 'unavailable' | 'problem' | 'protocol';

export class SidecarError extends Error {
  override name = 'SidecarError';
  readonly kind: SidecarErrorKind;
  constructor(kind: SidecarErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.kind = kind;
  }
}
/** The sidecar could not be reached or kept failing (network, timeout, 5xx, 429) after the retries. */
export class SidecarUnavailableError extends SidecarError {
  override name = 'SidecarUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super('unavailable', message, options);
  }
}
/** The sidecar refused the request with a 4xx problem (RFC 9457); `.problem.epoch` is the sidecar's epoch. */
export class SidecarProblemError extends SidecarError {
  override name = 'SidecarProblemError';
  readonly status: number;
  readonly problem: Problem;
  constructor(problem: Problem) {
    super('problem', `sidecar answered ${problem.status} ${problem.title}: ${problem.detail}`);
    this.status = problem.status;
    this.problem = problem;
  }
}
/** The answer did not follow the protocol (wrong status, type, size, JSON or shape). */
export class SidecarProtocolError extends SidecarError {
  override name = 'SidecarProtocolError';
  constructor(message: string) {
    super('protocol', message);
  }
}

export function isSidecarError(error: unknown): error is SidecarError {
  return error instanceof SidecarError;
}

interface Call<T> {
  method: 'GET' | 'PUT' | 'POST';
  path: string;
  body?: unknown;
  ok: readonly number[];
  schema: z.ZodType<T>;
  extraTimeoutMs?: number;
}

class RetryableFailure extends Error {}

export class SidecarClient {
  private readonly baseUrl: string;
  private readonly authorization: string;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly maxAnswerBytes: number;
  private readonly dispatcher: Dispatcher;
  private readonly ownsDispatcher: boolean;
  /** The base URL's origin and path, parsed on the first request (undici's request(url) parses the whole URL of each). */
  private base: { origin: string; path: string } | undefined;

  constructor(options: SidecarClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.authorization = `Bearer ${options.token}`;
    this.timeoutMs = options.timeoutMs ?? 5_000;
    this.retries = options.retries ?? 3;
    this.backoffMs = options.backoffMs ?? 50;
    this.maxAnswerBytes = options.maxAnswerBytes ?? 1024 * 1024;
    this.ownsDispatcher = options.dispatcher === undefined;
    this.dispatcher = options.dispatcher ?? new Agent({ keepAliveTimeout: 30_000, connections: 16 });
  }

  /**
   * Starts the action of a node as operation `id`; a retry with the same id and body (graph, node,
   * params) returns the same operation. `epoch`: start only on the sidecar of that epoch (else a 409
   * problem of kind epoch-mismatch); `rerun`: the operation may have run on a sidecar that forgot it
   * (a 409 not-idempotent unless the action is declared idempotent); `attempt`: its attempts count from it.
   */
  startOperation(id: string, body: StartOperationRequest): Promise<Operation> {
    return this.checked(id, {
      method: 'PUT',
      path: `${API_PREFIX}/operations/${encodeURIComponent(id)}`,
      body,
      ok: [200, 202],
      schema: OperationSchema,
    });
  }

  /** Reads an operation; with waitMs, the sidecar answers as soon as it has finished (long-poll). */
  getOperation(id: string, options: { waitMs?: number } = {}): Promise<Operation> {
    const waitMs = Math.min(Math.max(0, Math.floor(options.waitMs ?? 0)), MAX_WAIT_MS);
    return this.checked(id, {
      method: 'GET',
      path: `${API_PREFIX}/operations/${encodeURIComponent(id)}${waitMs > 0 ? `?wait=${waitMs}` : ''}`,
      ok: [200],
      schema: OperationSchema,
      extraTimeoutMs: waitMs,
    });
  }

  /** Long-polls until the operation has finished or timeoutMs passed; returns it as last seen. */
  async waitForOperation(id: string, options: { timeoutMs?: number } = {}): Promise<Operation> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      const left = deadline - Date.now();
      const op = await this.getOperation(id, { waitMs: Math.max(0, Math.min(left, 20_000)) });
      if (isTerminal(op.phase) || left <= 0) return op;
    }
  }

  /** Cancels an operation; answers once it has stopped (a finished one is returned unchanged). */
  cancelOperation(id: string): Promise<Operation> {
    return this.checked(id, {
      method: 'POST',
      path: `${API_PREFIX}/operations/${encodeURIComponent(id)}/cancel`,
      ok: [200],
      schema: OperationSchema,
    });
  }

  /** What the probe observes; pass the previous lastSeq as `since` to get only newer events. */
  observe(options: { graph?: string; since?: number } = {}): Promise<Observation> {
    const query = new URLSearchParams();
    if (options.graph !== undefined) query.set('graph', options.graph);
    if (options.since !== undefined) query.set('since', String(options.since));
    const qs = query.size > 0 ? `?${query}` : '';
    return this.call({ method: 'GET', path: `${API_PREFIX}/observation${qs}`, ok: [200], schema: ObservationSchema });
  }

  /** True when /readyz answers 200. */
  async ready(): Promise<boolean> {
    try {
      await this.call({ method: 'GET', path: '/readyz', ok: [200], schema: HealthSchema });
      return true;
    } catch (error) {
      if (isSidecarError(error)) return false;
      throw error;
    }
  }

  /** Closes the connections at once: a request in flight (a long-poll may wait 30 s) is aborted, not waited for. */
  async close(): Promise<void> {
    if (this.ownsDispatcher) await this.dispatcher.destroy();
  }

  /** An operation call whose answer must be about the operation asked for. */
  private async checked(id: string, call: Call<Operation>): Promise<Operation> {
    const op = await this.call(call);
    if (op.id !== id) throw new SidecarProtocolError(`asked for operation ${id}, the sidecar answered about ${op.id}`);
    return op;
  }

  private async call<T>(call: Call<T>): Promise<T> {
    let lastError: unknown;
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt > 0) {
        const cap = Math.min(2_000, this.backoffMs * 2 ** (attempt - 1));
        await new Promise((r) => setTimeout(r, Math.random() * cap));
      }
      try {
        return await this.attempt(call);
      } catch (error) {
        if (!(error instanceof RetryableFailure)) throw error;
        lastError = error;
      }
    }
    throw new SidecarUnavailableError(
      `${call.method} ${call.path}: ${(lastError as Error).message} (after ${this.retries + 1} attempts)`,
      { cause: (lastError as Error).cause },
    );
  }

  private async attempt<T>(call: Call<T>): Promise<T> {
    let response: Dispatcher.ResponseData;
    let text: string;
    // The attempt's deadline, cleared once its answer is read: AbortSignal.timeout's timer would fire
    // long after every call (a long-poll's too) and cost more to make.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), this.timeoutMs + (call.extraTimeoutMs ?? 0));
    timer.unref();
    try {
      const signal = deadline.signal;
      this.base ??= baseOf(this.baseUrl);
      response = await this.dispatcher.request({
        origin: this.base.origin,
        path: this.base.path + call.path,
        method: call.method,
        signal,
        headers: {
          authorization: this.authorization,
          accept: 'application/json, application/problem+json',
          ...(call.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: call.body === undefined ? null : JSON.stringify(call.body),
      });
      text = await this.readLimited(response);
    } catch (error) {
      if (error instanceof SidecarProtocolError) throw error;
      throw new RetryableFailure((error as Error).message, { cause: error });
    } finally {
      clearTimeout(timer);
    }
    const status = response.statusCode;
    if (status >= 500 || status === 429) throw new RetryableFailure(`HTTP ${status}`);
    const contentType = String(response.headers['content-type'] ?? '').split(';')[0]?.trim();
    if (status >= 400) {
      const problem = ProblemSchema.safeParse(parseJson(text, contentType, 'application/problem+json', status));
      if (!problem.success || problem.data.status !== status) {
        throw new SidecarProtocolError(`HTTP ${status} without a valid problem body`);
      }
      throw new SidecarProblemError(problem.data);
    }
    if (!call.ok.includes(status)) throw new SidecarProtocolError(`unexpected HTTP ${status} for ${call.method} ${call.path}`);
    const parsed = call.schema.safeParse(parseJson(text, contentType, 'application/json', status));
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new SidecarProtocolError(
        `HTTP ${status} answer does not match the protocol: ${issue?.path.join('.') || '(root)'}: ${issue?.message}`,
      );
    }
    return parsed.data;
  }

  private async readLimited(response: Dispatcher.ResponseData): Promise<string> {
    const length = response.headers['content-length'];
    const declared = Number(length ?? 0);
    if (declared > this.maxAnswerBytes) {
      response.body.destroy();
      throw new SidecarProtocolError(`answer of ${declared} bytes exceeds the limit of ${this.maxAnswerBytes}`);
    }
    // A declared length within the limit bounds the body (HTTP/1.1 framing reads that many bytes, no
    // more): read at once, without the async iteration a chunked answer needs (counted as it arrives).
    if (this.ownsDispatcher && typeof length === 'string' && /^\d+$/.test(length)) return response.body.text();
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > this.maxAnswerBytes) {
        response.body.destroy();
        throw new SidecarProtocolError(`answer exceeds the limit of ${this.maxAnswerBytes} bytes`);
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks).toString('utf8');
  }
}

/** A base URL's origin, and its path without the trailing slash (the calls' paths follow it). */
function baseOf(baseUrl: string): { origin: string; path: string } {
  const url = new URL(baseUrl);
  return { origin: url.origin, path: url.pathname.replace(/\/+$/, '') };
}

function parseJson(text: string, contentType: string | undefined, expected: string, status: number): unknown {
  if (contentType !== expected) {
    throw new SidecarProtocolError(`HTTP ${status} answer has content-type ${contentType || '(none)'}, not ${expected}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new SidecarProtocolError(`HTTP ${status} answer is not JSON`);
  }
}
