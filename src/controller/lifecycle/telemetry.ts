// What a reconcile tells besides the CR: its traces (a reconcile that commits events, the sidecar
// start, the action's run as the sidecar timed it), the metrics of a status write (transitions, time on
// a node, action durations) and of stalled CRs, and the log lines of a transition and a cycle brake.
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { CYCLE_BRAKE_CONDITION } from '../../graph/index.ts';
import { contextOf, traceparentOf } from '../../events/index.ts';
import { statusEvents } from '../../events/status-events.ts';
import type { LifecycleStatus } from '../../kube/lifecycle-resource.ts';
import { isTerminal } from '../../sidecar-client/index.ts';
import type { ControllerMetrics } from '../metrics.ts';
import type { Logger } from '../logger.ts';
import { STALLED } from './reasons.ts';
import type { SeenOperation, StepEffects } from './step-types.ts';

export class ReconcileTelemetry {
  readonly #graph: string;
  readonly #tracer: Tracer | undefined;
  readonly #metrics: ControllerMetrics | undefined;
  /** The traceparent of the reconcile that started each running operation (the parent of its action's span). */
  readonly #operationTraces = new Map<string, string>();
  /** The reason of each cached CR whose Stalled condition is True. */
  readonly #stalledReasons = new Map<string, string>();

  constructor(graph: string, tracer: Tracer | undefined, metrics: ControllerMetrics | undefined) {
    this.#graph = graph;
    this.#tracer = tracer;
    this.#metrics = metrics;
    metrics?.addStalledSource(() => this.#stalled());
  }

  /** The reconcile traced by `span` started operation `id`: its action's span goes under it. */
  started(id: string, span: Span | undefined): void {
    if (span !== undefined) this.#operationTraces.set(id, traceparentOf(span));
  }

  /** A CR is gone: what was kept of it goes. */
  forget(key: string, uid: string | undefined): void {
    this.#stalledReasons.delete(key);
    for (const id of this.#operationTraces.keys()) if (id.startsWith(`${uid}-`)) this.#operationTraces.delete(id);
  }

  /** Runs `call` as a child span of `parent` (when tracing), its failure recorded on it. */
  async traced<T>(parent: Span | undefined, name: string, attributes: Record<string, string>, call: () => Promise<T>): Promise<T> {
    const tracer = this.#tracer;
    if (tracer === undefined || parent === undefined) return call();
    const span = tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, trace.setSpan(ROOT_CONTEXT, parent));
    try {
      return await call();
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      throw error;
    } finally {
      span.end();
    }
  }

  /** The span of a reconcile whose status write commits events (a transition, an action's start or end, a stall...). */
  commitSpan(key: string, stored: LifecycleStatus | undefined, effects: StepEffects, startedAt: number): Span | undefined {
    const tracer = this.#tracer;
    const next = effects.status;
    if (tracer === undefined || next === undefined || !('state' in next) || next.sequence <= (stored?.sequence ?? 0)) return undefined;
    const graph = this.#graph;
    const added = statusEvents(next, graph).filter((e) => e.sequence > (stored?.sequence ?? 0)).map((e) => e.type);
    const attributes: Record<string, string | number | string[]> = { 'okt.graph': graph, 'okt.resource': key, 'okt.state': next.state, 'okt.transition': next.transition, 'okt.events': added };
    const moved = next.transition !== (stored?.transition ?? 0) ? next.lastTransition : undefined;
    if (moved !== undefined) Object.assign(attributes, { 'okt.from': moved.from, 'okt.to': moved.to });
    const name = moved === undefined ? `okt.reconcile ${graph} ${next.state}` : `okt.transition ${graph} ${moved.from} -> ${moved.to}`;
    return tracer.startSpan(name, { startTime: startedAt, attributes }, ROOT_CONTEXT);
  }

  /**
   * The metrics and log line of a status write: a transition (and the time on the node it left), and
   * the end of the action that ran, as its sidecar told this reconcile (the write that records the end
   * may also start the next node's action, so the status no longer holds it).
   */
  recordWrite(stored: LifecycleStatus | undefined, next: LifecycleStatus, seen: SeenOperation | undefined, span: Span | undefined, log: Logger): void {
    const metrics = this.#metrics;
    const graph = this.#graph;
    const running = stored?.operation;
    if (running !== undefined && !isTerminal(running.phase) && seen !== undefined && isTerminal(seen.phase)) {
      const seconds = secondsBetween(seen.startedAt, seen.finishedAt);
      const node = next.operation?.id === running.id ? next.operation.node : running.node;
      if (seconds !== undefined) metrics?.actionDuration.labels(graph, node, seen.phase, seen.reason ?? '').observe(seconds);
      this.#actionSpan(running.id, node, seen, span);
    }
    const last = next.lastTransition;
    if (last === undefined || next.transition === (stored?.transition ?? 0)) return;
    metrics?.transitionsTotal.labels(graph, last.from, last.to).inc();
    // The entry node was entered by no transition: its time is not counted.
    const entered = stored?.lastTransition?.time;
    const stayed = secondsBetween(entered, last.time);
    if (stayed !== undefined) metrics?.nodeSeconds.labels(graph, last.from).observe(stayed);
    log.info({ from: last.from, to: last.to, events: last.events, transition: next.transition }, 'transition');
    const brake = next.conditions.find((c) => c.type === CYCLE_BRAKE_CONDITION);
    const wasBraked = stored?.conditions.some((c) => c.type === CYCLE_BRAKE_CONDITION) === true;
    if (brake !== undefined && !wasBraked) log.warn({ reason: brake.reason }, `cycle brake engaged: ${brake.message}`);
  }

  /**
   * An action's run as its sidecar timed it, under the reconcile that started it (or, after an operator
   * restart forgot that one, under the reconcile recording its end).
   */
  #actionSpan(id: string, node: string, seen: SeenOperation, current: Span | undefined): void {
    const tracer = this.#tracer;
    const parent = this.#operationTraces.get(id) ?? (current === undefined ? undefined : traceparentOf(current));
    this.#operationTraces.delete(id);
    if (tracer === undefined || parent === undefined || seen.startedAt === undefined || seen.finishedAt === undefined) return;
    const attributes = { 'okt.graph': this.#graph, 'okt.operation.id': id, 'okt.node': node, 'okt.phase': seen.phase, 'okt.reason': seen.reason ?? '' };
    const span = tracer.startSpan(`okt.action ${node}`, { startTime: Date.parse(seen.startedAt), attributes }, contextOf(parent));
    if (seen.phase !== 'Succeeded') span.setStatus({ code: SpanStatusCode.ERROR, message: seen.message ?? seen.phase });
    span.end(Date.parse(seen.finishedAt));
  }

  /** The CRs of this controller whose Stalled condition is True, with its reason. */
  *#stalled(): Iterable<{ graph: string; reason: string }> {
    const graph = this.#graph;
    for (const reason of this.#stalledReasons.values()) yield { graph, reason };
  }

  /** Keeps the reason of a cached CR's Stalled condition while it is True (the metric reads these, not the cache). */
  noteStalled(key: string, obj: { status?: unknown }): void {
    const stalled = (obj.status as { conditions?: { type: string; status: string; reason: string }[] } | undefined)?.conditions?.find((c) => c.type === STALLED);
    if (stalled?.status === 'True') this.#stalledReasons.set(key, stalled.reason);
    else this.#stalledReasons.delete(key);
  }
}

/** Seconds from one ISO time to another, when both are known and in order. */
function secondsBetween(from: string | undefined, to: string | undefined): number | undefined {
  if (from === undefined || to === undefined) return undefined;
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) && ms >= 0 ? ms / 1000 : undefined;
}
