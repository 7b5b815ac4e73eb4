// Delivers the outbox of every lifecycle CR to its sink: per CR strictly in sequence order (the next
// event only after the sink took the previous one), CRs in parallel up to a bound, retried with
// backoff until taken. Nothing is dropped: an event the sink refuses blocks its CR's stream (see blocked()).
import { SpanKind, SpanStatusCode, type Tracer } from '@opentelemetry/api';
import { HTTP, type CloudEvent } from 'cloudevents';
import { pino, type Logger } from 'pino';
import { Agent, request } from 'undici';
import type { OutboxEntry } from '../kube/lifecycle-resource.ts';
import { parseCeOverrides, toCloudEvent, type CeOverrides, type EmittedResource } from './cloud-event.ts';
import { backoffDelay, classifyStatus, type Backoff, type SendOutcome } from './delivery.ts';
import type { LifecycleEventData } from './types.ts';
import { contextOf } from './trace-context.ts';

export type EmitMode = 'binary' | 'structured';

export interface LifecycleEventEmitterOptions {
  /** The default sink; `K_SINK` when absent. Without any sink, offered events count as delivered at once. */
  sink?: string;
  /** HTTP binary mode (default) or structured mode. */
  mode?: EmitMode;
  /** One try's limit: connecting, then waiting for the answer (default 10 s). */
  timeoutMs?: number;
  /** Exponential backoff between tries (default 200 ms doubling up to 30 s). */
  backoff?: Backoff;
  /** Extensions set on every event; `K_CE_OVERRIDES` when absent. */
  overrides?: CeOverrides;
  /** How many CRs send at once (default 32). */
  concurrency?: number;
  logger?: Logger;
  /**
   * After each delivered event: the reconciler re-enqueues the CR (pruning, backpressure, deletion wait
   * on delivery). `resource` tells the CRs of several kinds apart, whose keys may be the same.
   */
  onDelivered?: (key: string, resource: EmittedResource) => void;
  /** When a CR's stream becomes blocked by a refused event: the reconciler re-enqueues the CR to show it. */
  onBlocked?: (key: string, resource: EmittedResource) => void;
  /** Records each try to deliver an event that carries a `traceparent` as a span under it. */
  tracer?: Tracer;
}

export interface OfferedResource extends EmittedResource {
  /** The reconciler's work-queue key (`namespace/name`), handed back to onDelivered/onBlocked. */
  key: string;
  /** spec.eventSink: overrides the emitter's sink for this CR. */
  sink?: string;
  /** The trace of the reconcile offering these entries, set on the events first queued by this offer. */
  traceparent?: string;
}

export interface BlockedStream {
  /** The event the sink refuses; later events of the CR wait behind it. */
  sequence: number;
  reason: string;
}

interface Queued {
  entry: OutboxEntry;
  traceparent: string | undefined;
  message?: { headers: Record<string, string>; body: string };
}

interface Lane {
  readonly uid: string;
  key: string;
  resource: EmittedResource;
  sink: string | undefined;
  /** Undelivered entries in sequence order; the head is the one being sent. */
  queue: Queued[];
  delivered: number;
  state: 'idle' | 'ready' | 'sending' | 'waiting';
  failures: number;
  timer: NodeJS.Timeout | undefined;
  blocked: BlockedStream | undefined;
}

const DEFAULTS = { timeoutMs: 10_000, backoff: { initialMs: 200, maxMs: 30_000 }, concurrency: 32 } as const;
const DETAIL_LIMIT = 300;

export class LifecycleEventEmitter {
  readonly #sink: string | undefined;
  readonly #mode: EmitMode;
  readonly #timeoutMs: number;
  readonly #backoff: Backoff;
  readonly #overrides: CeOverrides | undefined;
  readonly #tracer: Tracer | undefined;
  readonly #concurrency: number;
  readonly #log: Logger;
  readonly #onDelivered: NonNullable<LifecycleEventEmitterOptions['onDelivered']>;
  readonly #onBlocked: NonNullable<LifecycleEventEmitterOptions['onBlocked']>;
  readonly #agent: Agent;
  readonly #lanes = new Map<string, Lane>();
  /** CRs with every offered event delivered, and nothing queued: their newest delivered sequence. */
  readonly #settled = new Map<string, number>();
  readonly #ready: Lane[] = [];
  readonly #inFlight = new Set<Promise<void>>();
  #closed = false;

  constructor(options: LifecycleEventEmitterOptions = {}) {
    this.#sink = options.sink ?? nonEmpty(process.env.K_SINK);
    this.#mode = options.mode ?? 'binary';
    this.#timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs;
    this.#backoff = options.backoff ?? DEFAULTS.backoff;
    this.#overrides = options.overrides ?? parseCeOverrides(process.env.K_CE_OVERRIDES);
    this.#tracer = options.tracer;
    this.#concurrency = options.concurrency ?? DEFAULTS.concurrency;
    this.#log = options.logger ?? pino({ name: 'okt-events' }, pino.destination(2));
    this.#onDelivered = options.onDelivered ?? (() => {});
    this.#onBlocked = options.onBlocked ?? (() => {});
    checkOptions(this.#sink, this.#timeoutMs, this.#backoff, this.#concurrency);
    this.#agent = new Agent({
      connections: this.#concurrency,
      connect: { timeout: this.#timeoutMs },
      headersTimeout: this.#timeoutMs,
      bodyTimeout: this.#timeoutMs,
    });
  }

  /** Idempotent by sequence: entries already delivered or queued are ignored; sends in sequence order per resource. */
  offer(resource: OfferedResource, entries: readonly OutboxEntry[]): void {
    if (this.#closed) return;
    const lane = this.#lane(resource);
    if (lane.sink === undefined) {
      this.#deliveredAtOnce(lane, resource, Math.max(0, ...entries.map((e) => e.sequence)));
      return;
    }
    for (const entry of entries) {
      if (entry.sequence <= lane.delivered) continue;
      const queued: Queued = { entry, traceparent: resource.traceparent };
      const last = lane.queue.at(-1)?.entry.sequence ?? 0;
      if (entry.sequence > last) lane.queue.push(queued); // the usual case: the outbox grew at its end
      else if (!lane.queue.some((q) => q.entry.sequence === entry.sequence)) {
        lane.queue.splice(lane.queue.findIndex((q) => q.entry.sequence > entry.sequence), 0, queued);
      }
    }
    this.#schedule(lane);
  }

  /**
   * `offer` of a CR's events up to `newest`, when they go to no sink (neither the CR's own nor the
   * emitter's): they count as delivered, without being read. Returns false, doing nothing, when they
   * go to a sink: `offer` them.
   */
  offerWithoutSink(resource: OfferedResource, newest: number): boolean {
    if (this.#sinkOf(resource) !== undefined) return false;
    if (!this.#closed) this.#deliveredAtOnce(this.#lane(resource), resource, newest);
    return true;
  }

  /** No sink at all: nobody wants the events, so they count as delivered (and nothing waits behind them). */
  #deliveredAtOnce(lane: Lane, resource: OfferedResource, newest: number): void {
    if (newest > lane.delivered) {
      lane.delivered = newest;
      lane.queue = [];
      queueMicrotask(() => this.#onDelivered(resource.key, resource));
    }
    this.#settle(lane);
  }

  /** Highest sequence delivered for this uid (0 if none); with no sink at all, every offered entry counts as delivered at once. */
  delivered(uid: string): number {
    return this.#lanes.get(uid)?.delivered ?? this.#settled.get(uid) ?? 0;
  }

  /**
   * Events up to `sequence` of this CR count as delivered without being sent (an earlier leader
   * delivered them). Entries already queued up to there are dropped.
   */
  acknowledge(resource: OfferedResource, sequence: number): void {
    if (this.#closed || sequence <= this.delivered(resource.uid)) return;
    const lane = this.#lane(resource);
    lane.delivered = sequence;
    // The head of a lane sending stays until its answer (#send shifts it).
    const sending = lane.state === 'sending' ? lane.queue[0] : undefined;
    lane.queue = lane.queue.filter((q) => q === sending || q.entry.sequence > sequence);
    this.#settle(lane);
  }

  /** The commit time (ms) of the oldest event offered and not delivered yet, over every CR; undefined when none waits. */
  oldestUndeliveredTime(): number | undefined {
    let oldest: number | undefined;
    for (const lane of this.#lanes.values()) {
      for (const { entry } of lane.queue) {
        const time = Date.parse(entry.time);
        if (oldest === undefined || time < oldest) oldest = time;
      }
    }
    return oldest;
  }

  /** The event the sink refuses (400, 413, 415, 422, or an entry that is no valid event): the CR's later events wait. */
  blocked(uid: string): BlockedStream | undefined {
    return this.#lanes.get(uid)?.blocked;
  }

  /** The CR is gone: its retries stop and its memory is released (a send in flight ends by itself, its answer ignored). */
  forget(uid: string): void {
    this.#settled.delete(uid);
    const lane = this.#lanes.get(uid);
    if (lane === undefined) return;
    this.#lanes.delete(uid);
    clearTimeout(lane.timer);
  }

  /** Stops retries and waits for the sends in flight (each bounded by timeoutMs). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const lane of this.#lanes.values()) clearTimeout(lane.timer);
    this.#ready.length = 0;
    await Promise.all(this.#inFlight);
    await this.#agent.close();
  }

  /** Where a CR's events go: its own sink, else the emitter's; undefined: nowhere. */
  #sinkOf(resource: OfferedResource): string | undefined {
    return nonEmpty(resource.sink) ?? this.#sink;
  }

  #lane(resource: OfferedResource): Lane {
    let lane = this.#lanes.get(resource.uid);
    if (lane === undefined) {
      lane = {
        uid: resource.uid, key: resource.key, resource, sink: undefined, queue: [], delivered: this.#settled.get(resource.uid) ?? 0,
        state: 'idle', failures: 0, timer: undefined, blocked: undefined,
      };
      this.#settled.delete(resource.uid);
      this.#lanes.set(resource.uid, lane);
    }
    lane.key = resource.key;
    lane.resource = resource;
    const sink = this.#sinkOf(resource);
    if (sink !== lane.sink) {
      lane.sink = sink;
      // A new sink gets the waiting event at once: it may take what the old one refused.
      if (lane.state === 'waiting') {
        clearTimeout(lane.timer);
        lane.state = 'idle';
        lane.failures = 0;
      }
    }
    return lane;
  }

  /** A lane with nothing left to send keeps only its newest delivered sequence: most CRs rest so, and the operator holds one per CR. */
  #settle(lane: Lane): void {
    if (lane.state !== 'idle' || lane.queue.length > 0 || lane.blocked !== undefined || this.#lanes.get(lane.uid) !== lane) return;
    this.#lanes.delete(lane.uid);
    this.#settled.set(lane.uid, lane.delivered);
  }

  #schedule(lane: Lane): void {
    if (this.#closed || lane.state !== 'idle' || lane.queue.length === 0) return;
    lane.state = 'ready';
    this.#ready.push(lane);
    this.#pump();
  }

  #pump(): void {
    while (this.#inFlight.size < this.#concurrency && this.#ready.length > 0) {
      const lane = this.#ready.shift()!;
      if (this.#lanes.get(lane.uid) !== lane || lane.state !== 'ready') continue;
      const sending: Promise<void> = this.#send(lane).finally(() => {
        this.#inFlight.delete(sending);
        this.#pump();
      });
      this.#inFlight.add(sending);
    }
  }

  async #send(lane: Lane): Promise<void> {
    lane.state = 'sending';
    const head = lane.queue[0]!;
    const sink = lane.sink!;
    const outcome = await this.#traced(lane, head, sink);
    if (this.#lanes.get(lane.uid) !== lane) return; // forgotten meanwhile
    const sequence = head.entry.sequence;
    if (outcome.kind === 'delivered') {
      lane.queue.shift();
      lane.delivered = Math.max(lane.delivered, sequence);
      lane.failures = 0;
      if (lane.blocked !== undefined) this.#log.info({ key: lane.key, source: lane.resource.apiPath, sequence, sink }, 'lifecycle event stream unblocked: the sink took the refused event');
      lane.blocked = undefined;
      lane.state = 'idle';
      this.#onDelivered(lane.key, lane.resource);
      this.#schedule(lane);
      this.#settle(lane);
      return;
    }
    lane.failures += 1;
    let delay: number;
    if (outcome.kind === 'rejected') {
      const first = lane.blocked?.sequence !== sequence;
      lane.blocked = { sequence, reason: outcome.reason };
      this.#log.error(
        { key: lane.key, source: lane.resource.apiPath, uid: lane.uid, sequence, type: head.entry.type, sink, reason: outcome.reason, attempts: lane.failures },
        'lifecycle event REFUSED by the sink: this CR\'s later events wait behind it; retried every backoff.maxMs, and at once when the sink changes',
      );
      if (first) this.#onBlocked(lane.key, lane.resource);
      delay = backoffDelay(Number.POSITIVE_INFINITY, this.#backoff);
    } else {
      delay = Math.min(this.#backoff.maxMs, outcome.retryAfterMs ?? backoffDelay(lane.failures, this.#backoff));
      this.#log.warn({ key: lane.key, source: lane.resource.apiPath, sequence, sink, reason: outcome.reason, attempts: lane.failures, retryInMs: delay }, 'lifecycle event not delivered; retrying');
    }
    if (this.#closed) {
      lane.state = 'idle';
      return;
    }
    lane.state = 'waiting';
    lane.timer = setTimeout(() => {
      lane.timer = undefined;
      lane.state = 'idle';
      this.#schedule(lane);
    }, delay);
  }

  /** One try, as a span under the trace of the reconcile that committed the event, when it has one. */
  async #traced(lane: Lane, head: Queued, sink: string): Promise<SendOutcome> {
    if (this.#tracer === undefined || head.traceparent === undefined) return this.#attempt(lane, head, sink);
    const { entry } = head;
    const attributes = { 'cloudevents.event_type': entry.type, 'cloudevents.event_subject': entry.subject, 'okt.sequence': entry.sequence, 'okt.resource': lane.resource.apiPath, 'server.address': sink };
    const span = this.#tracer.startSpan(`okt.event.deliver ${entry.type}`, { kind: SpanKind.PRODUCER, attributes }, contextOf(head.traceparent));
    const outcome = await this.#attempt(lane, head, sink);
    span.setAttribute('okt.outcome', outcome.kind);
    if (outcome.kind !== 'delivered') span.setStatus({ code: SpanStatusCode.ERROR, message: outcome.reason });
    span.end();
    return outcome;
  }

  async #attempt(lane: Lane, head: Queued, sink: string): Promise<SendOutcome> {
    let message: NonNullable<Queued['message']>;
    try {
      message = head.message ??= this.#message(toCloudEvent(lane.resource, head.entry, this.#traceOptions(head)));
    } catch (error) {
      return { kind: 'rejected', reason: `not a valid lifecycle event: ${(error as Error).message}` };
    }
    if (!URL.canParse(sink)) return { kind: 'rejected', reason: `the sink ${JSON.stringify(sink)} is no URL` };
    try {
      const response = await request(sink, { method: 'POST', headers: message.headers, body: message.body, dispatcher: this.#agent });
      const detail = response.statusCode >= 300 ? (await response.body.text()).slice(0, DETAIL_LIMIT).trim() : '';
      if (response.statusCode < 300) await response.body.dump();
      const retryAfter = response.headers['retry-after'];
      return classifyStatus(response.statusCode, Array.isArray(retryAfter) ? retryAfter[0] : retryAfter, detail);
    } catch (error) {
      const err = error as Error & { code?: string };
      return { kind: 'retry', reason: `${err.code ?? err.name}: ${err.message}` };
    }
  }

  #traceOptions(head: Queued): { overrides?: CeOverrides; traceparent?: string } {
    return {
      ...(this.#overrides === undefined ? {} : { overrides: this.#overrides }),
      ...(head.traceparent === undefined ? {} : { traceparent: head.traceparent }),
    };
  }

  #message(event: CloudEvent<LifecycleEventData>): NonNullable<Queued['message']> {
    const { headers, body } = this.#mode === 'binary' ? HTTP.binary(event) : HTTP.structured(event);
    const flat: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) if (value !== undefined) flat[name] = String(value);
    return { headers: flat, body: String(body) };
  }
}

/** Bad settings fail at start, each naming the option, not at the first event. */
function checkOptions(sink: string | undefined, timeoutMs: number, backoff: Backoff, concurrency: number): void {
  if (sink !== undefined && !URL.canParse(sink)) throw new Error(`sink (or K_SINK): ${JSON.stringify(sink)} is no URL`);
  if (!(timeoutMs > 0)) throw new Error(`timeoutMs: ${timeoutMs} must be above 0`);
  if (!(backoff.initialMs > 0)) throw new Error(`backoff.initialMs: ${backoff.initialMs} must be above 0`);
  if (!(backoff.maxMs >= backoff.initialMs)) throw new Error(`backoff.maxMs: ${backoff.maxMs} must be at least backoff.initialMs`);
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new Error(`concurrency: ${concurrency} must be a positive integer`);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}
