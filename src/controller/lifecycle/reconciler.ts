import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Span, type Tracer } from '@opentelemetry/api';
import { CYCLE_BRAKE_CONDITION, type Graph } from '../../graph/index.ts';
import { contextOf, traceparentOf } from '../../events/index.ts';
import {
  describeIssues,
  lifecycleSpecSchema,
  type LifecycleSpec,
  type LifecycleStatus,
  type OutboxEntry,
} from '../../kube/lifecycle-resource.ts';
import { statusToWrite } from '../../kube/unknown-status-fields.ts';
import { DEFAULT_STATUS_FORMAT, type StatusFormat } from '../../kube/status-format.ts';
import { statusEvents } from '../../events/status-events.ts';
import { objectKey, resourcePath, splitKey, type KubeObject, type KubeTransport, type ResourceRef } from '../../kube/transport/index.ts';
import { isTerminal, SidecarProblemError, type Observation, type Operation, type SidecarClient } from '../../sidecar-client/index.ts';
import { Controller, type ReconcileContext, type ReconcileResult } from '../controller.ts';
import { dropManagedFields, Informer } from '../informer.ts';
import type { ControllerMetrics } from '../metrics.ts';
import type { Logger } from '../logger.ts';
import { bothSelectors, SHARD_KEY_LABEL, shardKeyOf, shardOf, shardSelector, UNKEYED_SELECTOR, type Shard } from './shard.ts';
import { SidecarClients, type SidecarDefaults, type SidecarResolution } from './sidecar-clients.ts';
import { classifyAnswerFailure, classifyStartFailure, sidecarVerdict } from './error-policy.ts';
import { EpochMemory } from './epoch-news.ts';
import type { DeliveryMark } from './delivery-mark.ts';
import { parseConditions, parseStatus } from './parse-status.ts';
import { DEFAULT_TEARDOWN_GRACE_MS, deletionView, finalizersReleased, finalizersToAdd, logReleased, released } from './cleanup.ts';
import { MIGRATE_ANNOTATION } from './model.ts';
import {
  createLifecycleModel,
  REASONS,
  STALLED,
  step,
  unreadable,
  type LifecycleModel,
  type ResourceView,
  type SeenOperation,
  type SidecarView,
  type StartRefusal,
  type StepEffects,
} from './step.ts';

/** The resource a lifecycle event is about, as the event emitter needs it. */
export interface EventResource {
  key: string;
  uid: string;
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  /** The CR's API path: the CloudEvent `source`. */
  apiPath: string;
  /** spec.eventSink: this CR's own sink. */
  sink?: string;
  /** The trace of the reconcile that committed the events offered (W3C traceparent), when tracing. */
  traceparent?: string;
}

/** What the reconciler needs of the CloudEvents emitter (src/events). */
export interface LifecycleEvents {
  /** Idempotent by sequence; sends in sequence order per resource. */
  offer(resource: EventResource, entries: readonly OutboxEntry[]): void;
  /** The highest sequence delivered for this uid (0: none). */
  delivered(uid: string): number;
  /** The event the sink refuses for this uid, if it does: later events wait behind it. */
  blocked(uid: string): { sequence: number; reason: string } | undefined;
  /** Events up to `sequence` count as delivered without being sent (an earlier leader delivered them). */
  acknowledge(resource: EventResource, sequence: number): void;
  forget(uid: string): void;
}

export interface LifecycleResourceRef extends ResourceRef {
  kind: string;
}

export interface LifecycleControllerOptions {
  graph: Graph;
  resource: LifecycleResourceRef;
  transport: KubeTransport;
  /**
   * Where CRs without spec.sidecar find theirs (`url`), the operator-wide token (`token`, or `tokenFile`
   * read again after a 401 and at most a minute later), and the URL
   * patterns besides `url` that token may go to (`allow`, see sidecar-policy.ts). A CR naming any other
   * URL must name a sidecar-token Secret of its own namespace (spec.sidecar.tokenSecretRef), else nothing is sent.
   */
  sidecar?: SidecarDefaults;
  /** Absent: events are not sent anywhere and count as delivered once committed. */
  events?: LifecycleEvents;
  /** Default: all namespaces. */
  namespace?: string;
  /** Only CRs with these labels (a Kubernetes label selector), e.g. to split CRs between operators. */
  labelSelector?: string;
  /** Only this shard of the CRs (by a stable hash of their uid), to split them between operators. */
  shard?: Shard;
  workers?: number;
  /** Undelivered events a CR may hold in status before its transitions wait. Default 64. */
  outboxLimit?: number;
  /** A safety look while an action runs (completion is noticed at once by a long-poll). Default 10 s. */
  pollIntervalMs?: number;
  /** Every CR is looked at again this often even when nothing changed (level-triggered safety net). Default 10 min; 0: never. */
  resyncPeriodMs?: number;
  /**
   * A watch of the CRs on which nothing arrives (no event, no bookmark, not a byte) for this long is
   * taken for dead and opened again from its last resourceVersion. Default 180 s; 0: never.
   */
  watchIdleTimeoutMs?: number;
  /** How long a deleted CR whose namespace is terminating waits for its vanished sidecar before its finalizer is released. Default 60 s. */
  teardownGraceMs?: number;
  /** The shape status is written in: its CRD version's (docs/operator.md). Default: full. */
  statusFormat?: StatusFormat;
  metrics?: ControllerMetrics;
  logger?: Logger;
  /** Traces each reconcile that commits events, its sidecar start, the action's run and the events' delivery. */
  tracer?: Tracer;
  /** With leader election: what the Lease says was delivered, and what this process writes back into it. */
  deliveryMark?: DeliveryMark;
}

type LifecycleObject = KubeObject & { spec?: unknown; status?: unknown };

/**
 * The lifecycle controller of one graph: an informer on its CRs and a controller whose reconcile
 * runs `step` between what the API server and the sidecar say and the effects it asks for.
 */
export class LifecycleController {
  /** The cache of this controller's CRs (with a shard, only those labelled with its shard keys). */
  readonly informer: Informer<LifecycleObject>;
  /** With a shard: the CRs no operator has labelled yet, of which this shard takes its own and labels them. */
  readonly newcomers: Informer<LifecycleObject> | undefined;
  readonly controller: Controller;
  readonly #options: LifecycleControllerOptions;
  readonly #model: LifecycleModel;
  readonly #apiVersion: string;
  readonly #sidecars: SidecarClients;
  /** Objects this controller wrote, newer than the cache until the watch brings them (client-go's mutation cache). */
  readonly #written = new Map<string, LifecycleObject>();
  /**
   * Keys with a write of this controller in flight, and the newest update the watch brought meanwhile:
   * the watch often brings a write's echo before its answer, and only the answer tells the echo.
   */
  readonly #writing = new Map<string, LifecycleObject | undefined>();
  /** Operations long-polled on the sidecar, so a finished action is noticed at once. */
  readonly #watched = new Set<string>();
  /** Resources whose next move waits for their events to be delivered. */
  readonly #awaitingDelivery = new Set<string>();
  /** Per resource, why the sidecar refused the last start of its operation (said on the CR by the next step). */
  readonly #refusals = new Map<string, StartRefusal>();
  /** Operations whose cancellation was asked (a deletion or a change of spec.desiredState at a cancellable node), so it is asked once. */
  readonly #cancelled = new Set<string>();
  /** The traceparent of the reconcile that started each running operation (the parent of its action's span). */
  readonly #operationTraces = new Map<string, string>();
  /** The reason of each cached CR whose Stalled condition is True. */
  readonly #stalledReasons = new Map<string, string>();
  /** Resources this controller deleted (a leaf reached through the spec), until the watch shows the deletion. */
  readonly #deleted = new Set<string>();
  /** Per resource, the sidecar epochs heard: which of another epoch's events are its news. */
  readonly #epochs = new EpochMemory();
  #closed = false;

  constructor(options: LifecycleControllerOptions) {
    this.#options = options;
    // The planner's tables and the decision table are built on first use, then cached.
    this.#model = createLifecycleModel(options.graph);
    const { group, version } = options.resource;
    this.#apiVersion = group === '' ? version : `${group}/${version}`;
    this.#sidecars = new SidecarClients(options.transport, options.sidecar ?? {}, options.logger === undefined ? {} : { logger: options.logger });
    // Status writes send the object as cached back (PUT): the cache must hold every field the server
    // has but managedFields, or the server would take a field left out for one its owner removed.
    const informerOptions: ConstructorParameters<typeof Informer<LifecycleObject>>[0] = { transport: options.transport, resource: options.resource, transform: dropManagedFields };
    if (options.namespace !== undefined) informerOptions.namespace = options.namespace;
    if (options.labelSelector !== undefined) informerOptions.labelSelector = options.labelSelector;
    informerOptions.resyncPeriodMs = options.resyncPeriodMs ?? 600_000;
    if (options.watchIdleTimeoutMs !== undefined) informerOptions.watchIdleTimeoutMs = options.watchIdleTimeoutMs;
    if (options.logger !== undefined) informerOptions.logger = options.logger;
    const shard = options.shard;
    // A shard lists and watches its own keys only: the API server filters, and the cache holds its share.
    this.informer = new Informer<LifecycleObject>(shard === undefined ? informerOptions : { ...informerOptions, labelSelector: bothSelectors(options.labelSelector, shardSelector(shard)) });
    this.newcomers = shard === undefined ? undefined : new Informer<LifecycleObject>({ ...informerOptions, labelSelector: bothSelectors(options.labelSelector, UNKEYED_SELECTOR) });
    const controllerOptions: ConstructorParameters<typeof Controller>[0] = {
      name: `${options.resource.plural}.${options.resource.group}`,
      reconcile: (key, ctx) => this.reconcile(key, ctx),
    };
    if (options.workers !== undefined) controllerOptions.workers = options.workers;
    if (options.metrics !== undefined) controllerOptions.metrics = options.metrics;
    if (options.logger !== undefined) controllerOptions.logger = options.logger;
    this.controller = new Controller(controllerOptions);
    options.deliveryMark?.track(controllerOptions.name, () => this.informer.store.keys());
    // The shard's own cache holds its CRs only (by their label); a newcomer is taken by the shard of its uid.
    const enqueue = (obj: LifecycleObject) => this.controller.enqueue(objectKey(obj));
    const enqueueOwn = (obj: LifecycleObject) => {
      if (shard === undefined || shardOf(obj.metadata.uid ?? '', shard.count) === shard.index) enqueue(obj);
    };
    this.informer.addHandler({
      onAdd: (obj) => {
        this.#noteStalled(obj);
        enqueue(obj);
      },
      onChange: (obj) => {
        this.#noteStalled(obj);
        // The echo of this controller's own write brings nothing new: the reconcile that wrote it has
        // already asked for what comes next (an operation's long-poll, `again`, a requeue).
        const key = objectKey(obj);
        if (this.#writing.has(key)) this.#writing.set(key, obj);
        else if (!this.#isOwnEcho(obj)) enqueue(obj);
      },
      onDelete: (obj) => {
        const key = objectKey(obj);
        this.#options.deliveryMark?.settled(this.#markKey(key));
        this.#stalledReasons.delete(key);
        this.#written.delete(key);
        this.#awaitingDelivery.delete(key);
        this.#refusals.delete(key);
        this.#epochs.forget(key);
        this.#deleted.delete(obj.metadata.uid ?? '');
        if (obj.metadata.uid) this.#options.events?.forget(obj.metadata.uid);
        for (const id of this.#operationTraces.keys()) if (id.startsWith(`${obj.metadata.uid}-`)) this.#operationTraces.delete(id);
      },
    });
    options.metrics?.addStalledSource(() => this.#stalled());
    // A newcomer leaves this view when it is labelled (and shows up in the shard's own): its deletion
    // here is no deletion, so only adds and updates count.
    this.newcomers?.addHandler({ onAdd: enqueueOwn, onChange: enqueueOwn });
  }

  /** Runs `call` as a child span of `parent` (when tracing), its failure recorded on it. */
  async #traced<T>(parent: Span | undefined, name: string, attributes: Record<string, string>, call: () => Promise<T>): Promise<T> {
    const tracer = this.#options.tracer;
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

  /**
   * An action's run as its sidecar timed it, under the reconcile that started it (or, after an operator
   * restart forgot that one, under the reconcile recording its end).
   */
  #actionSpan(id: string, node: string, seen: SeenOperation, current: Span | undefined): void {
    const tracer = this.#options.tracer;
    const parent = this.#operationTraces.get(id) ?? (current === undefined ? undefined : traceparentOf(current));
    this.#operationTraces.delete(id);
    if (tracer === undefined || parent === undefined || seen.startedAt === undefined || seen.finishedAt === undefined) return;
    const attributes = { 'okt.graph': this.#model.graph.name, 'okt.operation.id': id, 'okt.node': node, 'okt.phase': seen.phase, 'okt.reason': seen.reason ?? '' };
    const span = tracer.startSpan(`okt.action ${node}`, { startTime: Date.parse(seen.startedAt), attributes }, contextOf(parent));
    if (seen.phase !== 'Succeeded') span.setStatus({ code: SpanStatusCode.ERROR, message: seen.message ?? seen.phase });
    span.end(Date.parse(seen.finishedAt));
  }

  /** The CRs of this controller whose Stalled condition is True, with its reason. */
  *#stalled(): Iterable<{ graph: string; reason: string }> {
    const graph = this.#model.graph.name;
    for (const reason of this.#stalledReasons.values()) yield { graph, reason };
  }

  /** Keeps the reason of a cached CR's Stalled condition while it is True (the metric reads these, not the cache). */
  #noteStalled(obj: LifecycleObject): void {
    const stalled = (obj.status as { conditions?: { type: string; status: string; reason: string }[] } | undefined)?.conditions?.find((c) => c.type === STALLED);
    if (stalled?.status === 'True') this.#stalledReasons.set(objectKey(obj), stalled.reason);
    else this.#stalledReasons.delete(objectKey(obj));
  }

  /** The caches the manager starts and waits for. */
  get informers(): Informer<LifecycleObject>[] {
    return this.newcomers === undefined ? [this.informer] : [this.informer, this.newcomers];
  }

  /** The emitter delivered an event of `key`: look again if the resource was waiting for that. */
  eventDelivered(key: string): void {
    if (this.#awaitingDelivery.has(key)) this.controller.enqueue(key);
  }

  /** Stops the long-polls and closes the sidecar connections (the manager stops informer and controller). */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#sidecars.close();
  }

  async reconcile(key: string, ctx: ReconcileContext): Promise<ReconcileResult> {
    const startedAt = Date.now();
    let obj = this.#current(key);
    if (obj === undefined) return;
    const { metadata } = obj;
    const uid = metadata.uid ?? '';
    const deleting = metadata.deletionTimestamp !== undefined;
    if (released(metadata)) return;
    // Deleted by this controller: nothing to do until the watch brings the deletion.
    if (!deleting && this.#deleted.has(uid)) return;

    const spec = lifecycleSpecSchema.safeParse(obj.spec ?? {});
    if (!spec.success) {
      await this.#writeUnreadableSpec(obj, describeIssues('spec', spec.error));
      return;
    }
    const resolved = await this.#sidecars.forSpec(spec.data, metadata.namespace ?? '');
    const finalizers = finalizersToAdd(metadata, resolved.kind === 'refused');
    // The shard key goes on with the finalizer (no write of its own), or alone when a shard must take a newcomer.
    const addKey = metadata.labels?.[SHARD_KEY_LABEL] === undefined && !deleting && (finalizers !== undefined || this.#options.shard !== undefined);
    if (finalizers !== undefined || addKey) {
      obj = await this.#patchMetadata(obj, {
        ...(finalizers !== undefined ? { finalizers } : {}),
        ...(addKey ? { labels: { [SHARD_KEY_LABEL]: String(shardKeyOf(uid)) } } : {}),
      });
    }
    const status = parseStatus(obj.status);
    const resource = this.#eventResource(key, obj, spec.data);
    const events = this.#options.events;
    const stored = status !== undefined && !('invalid' in status) ? status : undefined;
    this.#offer(key, resource, stored);

    const sidecar = await this.#sidecarView(key, resolved, stored, ctx);
    const view: ResourceView = { uid, generation: metadata.generation ?? 1, deleting, spec: spec.data, status, ...(await deletionView(metadata, sidecar, this.#options.transport, ctx.log)) };
    if (metadata.annotations?.[MIGRATE_ANNOTATION] === 'true') view.migrateRequested = true;
    const refusal = this.#refusals.get(key);
    const now = new Date().toISOString();
    // Events this reconcile may commit carry `now`: the Lease's mark stays below it until they are offered.
    const mark = this.#options.deliveryMark;
    mark?.hold(this.#markKey(key), now);
    const effects = step({
      model: this.#model,
      resource: view,
      sidecar,
      delivered: events ? events.delivered(uid) : Number.MAX_SAFE_INTEGER,
      now,
      outboxLimit: this.#options.outboxLimit ?? 64,
      teardownGraceMs: this.#options.teardownGraceMs ?? DEFAULT_TEARDOWN_GRACE_MS,
      statusFormat: this.#options.statusFormat ?? DEFAULT_STATUS_FORMAT,
      ...(refusal === undefined ? {} : { startRefused: refusal }),
      ...deliveryProblem(events, uid),
    });
    if (effects.awaitingDelivery) this.#awaitingDelivery.add(key);
    else this.#awaitingDelivery.delete(key);
    const seen = sidecar.kind === 'answered' && typeof sidecar.operation === 'object' ? sidecar.operation : undefined;
    // A write that commits events is a trace of its own: its span starts when this reconcile did.
    const span = this.#commitSpan(key, stored, effects, startedAt);
    if (span !== undefined) resource.traceparent = traceparentOf(span);
    try {
      const result = await this.#carryOut(key, obj, stored, effects, resolved, resource, seen, span, ctx);
      mark?.settled(this.#markKey(key));
      return result;
    } finally {
      span?.end();
    }
  }

  /** The CR's name in the delivery mark, which every kind of the process shares (two kinds may have one `namespace/name`). */
  #markKey(key: string): string {
    return `${this.controller.name} ${key}`;
  }

  /** Hands the events a status holds to the emitter (which ignores those it delivered or queued already). */
  #offer(key: string, resource: EventResource, status: LifecycleStatus | undefined): void {
    const { events, deliveryMark } = this.#options;
    deliveryMark?.lookedAt(this.controller.name, key);
    // Most looks find every event delivered already: nothing to read back.
    if (events === undefined || status === undefined || status.sequence <= events.delivered(resource.uid)) return;
    const stored = statusEvents(status, this.#model.graph.name);
    // Those an earlier leader delivered (committed before the mark it left), in order up to the first that may not be.
    const before = deliveryMark?.deliveredBefore;
    const known = before === undefined ? 0 : stored.findIndex((entry) => !(Date.parse(entry.time) < before));
    const skipped = known === -1 ? stored.length : known;
    if (skipped > 0) events.acknowledge(resource, stored[skipped - 1]!.sequence);
    events.offer(resource, skipped > 0 ? stored.slice(skipped) : stored);
  }

  /** The span of a reconcile whose status write commits events (a transition, an action's start or end, a stall...). */
  #commitSpan(key: string, stored: LifecycleStatus | undefined, effects: StepEffects, startedAt: number): Span | undefined {
    const tracer = this.#options.tracer;
    const next = effects.status;
    if (tracer === undefined || next === undefined || !('state' in next) || next.sequence <= (stored?.sequence ?? 0)) return undefined;
    const graph = this.#model.graph.name;
    const added = statusEvents(next, graph).filter((e) => e.sequence > (stored?.sequence ?? 0)).map((e) => e.type);
    const attributes: Record<string, string | number | string[]> = { 'okt.graph': graph, 'okt.resource': key, 'okt.state': next.state, 'okt.transition': next.transition, 'okt.events': added };
    const moved = next.transition !== (stored?.transition ?? 0) ? next.lastTransition : undefined;
    if (moved !== undefined) Object.assign(attributes, { 'okt.from': moved.from, 'okt.to': moved.to });
    const name = moved === undefined ? `okt.reconcile ${graph} ${next.state}` : `okt.transition ${graph} ${moved.from} -> ${moved.to}`;
    return tracer.startSpan(name, { startTime: startedAt, attributes }, ROOT_CONTEXT);
  }

  async #carryOut(
    key: string, obj: LifecycleObject, stored: LifecycleStatus | undefined, effects: StepEffects,
    resolved: SidecarResolution, resource: EventResource, seen: SeenOperation | undefined, span: Span | undefined, ctx: ReconcileContext,
  ): Promise<ReconcileResult> {
    const client = resolved.kind === 'client' ? resolved.client : undefined;
    if (effects.status !== undefined) {
      obj = await this.#writeStatus(obj, effects.status);
      if ('state' in effects.status) this.#recordWrite(stored, effects.status, seen, span, ctx);
      if ('state' in effects.status) this.#offer(key, resource, effects.status);
    }
    const start = effects.startOperation;
    if (start !== undefined && resolved.kind === 'client') {
      // Only after the write that committed it: a crash before this line restarts it with the same id.
      try {
        const params: Parameters<SidecarClient['startOperation']>[1] = { node: start.node, graph: this.#model.graph.name };
        if (start.epoch !== undefined && start.epoch !== '') params.epoch = start.epoch;
        if (start.params !== undefined) params.params = start.params;
        await this.#traced(span, `okt.sidecar.start ${start.node}`, { 'okt.operation.id': start.id, 'server.address': resolved.url }, () => resolved.client.startOperation(start.id, params));
        if (span !== undefined) this.#operationTraces.set(start.id, traceparentOf(span));
        this.#refusals.delete(key);
        ctx.log.info({ operation: start.id, node: start.node }, 'action started');
      } catch (error) {
        this.#sidecars.forgetRefusedToken(resolved, error);
        const policy = classifyStartFailure(error, start, resolved.url, resolved.tokenSource !== undefined);
        if (policy.kind === 'retry') throw error;
        // Said on the CR by the next step, which tries the start again after the refusal's delay.
        const known = this.#refusals.get(key);
        this.#refusals.set(key, policy.refusal);
        ctx.log.warn({ operation: start.id, reason: policy.refusal.reason }, policy.refusal.message);
        if (known?.operation !== start.id || known.reason !== policy.refusal.reason) this.controller.enqueue(key);
        return { requeueAfter: policy.refusal.retryAfterMs };
      }
    }
    if (effects.cancelOperation !== undefined && client !== undefined) this.#cancel(key, client, effects.cancelOperation, ctx);
    // A poll long-polls the operation the CR now holds only while it runs: that of one which ended
    // answers at once, and would wake the CR again at once (a CR waiting for its events, say).
    const held = effects.status !== undefined && 'state' in effects.status ? effects.status.operation : stored?.operation;
    const running = start?.id ?? (effects.poll && held !== undefined && !isTerminal(held.phase) ? held.id : undefined);
    if (running !== undefined && client !== undefined) this.#watchOperation(key, client, running);
    if (effects.finish === 'removeFinalizer') {
      await this.#patchMetadata(obj, { finalizers: finalizersReleased(obj.metadata) });
      logReleased(obj.status as LifecycleStatus | undefined, ctx.log);
    } else if (effects.finish === 'delete') {
      const { namespace, name } = splitKey(key);
      await this.#options.transport.delete(this.#options.resource, namespace, name, { preconditions: { uid: obj.metadata.uid ?? '' } });
      this.#deleted.add(obj.metadata.uid ?? '');
      ctx.log.info('a leaf reached through the spec: resource deleted (spec.onLeaf: Keep keeps it)');
    }
    if (effects.again) this.controller.enqueue(key);
    // A requeue (a deadline's, say) never postpones the safety look a poll promises.
    const waits = [effects.requeueAfterMs, effects.poll ? this.#options.pollIntervalMs ?? 10_000 : undefined].filter((ms) => ms !== undefined);
    return waits.length === 0 ? undefined : { requeueAfter: Math.min(...waits) };
  }

  /** Asks the sidecar to cancel a running operation, once; its end is noticed by the operation's long-poll. */
  #cancel(key: string, client: SidecarClient, id: string, ctx: ReconcileContext): void {
    if (this.#cancelled.has(id)) return;
    this.#cancelled.add(id);
    ctx.log.info({ operation: id }, 'cancelling the running action (a deletion or a change of spec.desiredState its node is cancellable on, or its node\'s deadline)');
    void client.cancelOperation(id).then(
      () => this.controller.enqueue(key),
      (error: unknown) => {
        this.#cancelled.delete(id);
        ctx.log.warn({ operation: id, err: error }, 'cancelling the running action failed; asked again at the next look');
      },
    );
  }

  /** The cached object, or the one this controller wrote last when the watch has not brought it yet. */
  #current(key: string): LifecycleObject | undefined {
    const cached = this.informer.store.get(key) ?? this.newcomers?.store.get(key);
    const written = this.#written.get(key);
    if (cached === undefined || written === undefined) return cached;
    return isNewer(written, cached) ? written : cached;
  }

  /** Whether `obj` is exactly what this controller wrote last; the cache now has it, so the copy goes. */
  #isOwnEcho(obj: LifecycleObject): boolean {
    const key = objectKey(obj);
    const written = this.#written.get(key);
    if (written === undefined || isNewer(written, obj)) return false;
    this.#written.delete(key);
    return written.metadata.resourceVersion === obj.metadata.resourceVersion;
  }

  /**
   * What the sidecar says of the current operation, or of what it observed. An operation the sidecar
   * does not know is 'unknown', run again right here (the sidecar decides whether its action is
   * idempotent; attempts + 1) or 'lost', as error-policy.ts's SIDECAR_ANSWERS says. Of what it
   * observed, only the CR's news (epoch-news.ts).
   */
  async #sidecarView(key: string, resolved: SidecarResolution, stored: LifecycleStatus | undefined, ctx: ReconcileContext): Promise<SidecarView> {
    if (resolved.kind === 'refused') return { kind: 'refused', ...resolved.refusal };
    if (resolved.kind === 'none') return { kind: 'unavailable', message: 'no sidecar configured (spec.sidecar.url or --sidecar-url)' };
    try {
      const view = await this.#askSidecar(key, resolved, stored, ctx);
      if (view.kind === 'answered') {
        // The epoch the CR reads events from: an observation's (the step records it), else the recorded one.
        const reading = view.observedSequence !== undefined ? view.epoch : stored?.observedEpoch;
        this.#epochs.heard(key, reading, { epoch: view.epoch, url: resolved.url, atMs: performance.now() });
      }
      return view;
    } catch (error) {
      this.#sidecars.forgetRefusedToken(resolved, error);
      const refusal = classifyAnswerFailure(error, resolved.url, resolved.tokenSource !== undefined);
      if (refusal !== undefined) return { kind: 'refused', ...refusal };
      return { kind: 'unavailable', message: error instanceof Error ? error.message : String(error) };
    }
  }

  /** The sidecar's answers (throws what the client throws). */
  async #askSidecar(key: string, { client, url }: Extract<SidecarResolution, { kind: 'client' }>, stored: LifecycleStatus | undefined, ctx: ReconcileContext): Promise<SidecarView> {
    const operation = stored?.operation;
    if (operation !== undefined && !isTerminal(operation.phase)) {
      try {
        const seen = await client.getOperation(operation.id);
        return { kind: 'answered', epoch: seen.epoch, operation: seenOperation(seen), observedEvents: [] };
      } catch (error) {
        const verdict = sidecarVerdict('read', error, operation.epoch);
        if (verdict !== 'unknown' && verdict !== 'rerun') throw error;
        const epoch = (error as SidecarProblemError).problem.epoch ?? '';
        if (verdict === 'unknown') return { kind: 'answered', epoch, operation: 'unknown', observedEvents: [] };
        return await this.#rerun(client, operation, epoch, ctx);
      }
    }
    const graph = this.#model.graph.name;
    const since = stored?.observedSequence ?? 0;
    const observation = await client.observe({ graph, since });
    const answered = (seen: Observation, from: number): SidecarView => ({
      kind: 'answered', epoch: seen.epoch, observedEvents: seen.events.map((e) => e.event), observedSequence: seen.lastSeq, observedFrom: from,
    });
    const recorded = stored?.observedEpoch;
    if (recorded === undefined || observation.epoch === recorded) return answered(observation, since);
    // Another epoch counts its events from 1 again, and only some of them are this CR's news.
    const answer = { epoch: observation.epoch, url, atMs: performance.now(), epochAgeMs: observation.epochAgeMs, lastSeq: observation.lastSeq };
    const from = this.#epochs.newsAfter(key, { epoch: recorded, seq: since }, answer);
    // The first answer holds every event after `since`, up to lastSeq: enough unless the news begins before.
    if (from >= Math.min(since, observation.lastSeq)) return answered({ ...observation, events: observation.events.filter((e) => e.seq > from) }, from);
    const again = await client.observe({ graph, since: from });
    // Yet another epoch answered the second look (replicas behind a Service): nothing is offered this time.
    return answered(again.epoch === observation.epoch ? again : { ...observation, events: [], lastSeq: from }, from);
  }

  /** A sidecar of another epoch than the operation's forgot it: run it again there if its action is idempotent. */
  async #rerun(client: SidecarClient, operation: NonNullable<LifecycleStatus['operation']>, epoch: string, ctx: ReconcileContext): Promise<SidecarView> {
    const attempt = (operation.attempts ?? 1) + 1;
    try {
      const params = operation.params === undefined ? {} : { params: operation.params };
      const seen = await client.startOperation(operation.id, { node: operation.node, graph: this.#model.graph.name, epoch, rerun: true, attempt, ...params });
      ctx.log.warn({ operation: operation.id, node: operation.node, from: operation.epoch, epoch, attempt }, 'the sidecar that held the operation lost it: its idempotent action runs again');
      return { kind: 'answered', epoch: seen.epoch, operation: seenOperation(seen), observedEvents: [] };
    } catch (error) {
      if (sidecarVerdict('rerun', error) === 'lost') {
        ctx.log.warn({ operation: operation.id, node: operation.node, from: operation.epoch, epoch }, 'the sidecar that held the operation lost it, and its action is not idempotent: not run again');
        return { kind: 'answered', epoch, operation: 'lost', observedEvents: [] };
      }
      throw error;
    }
  }

  /** Long-polls an operation until it ends, then looks at the resource again. */
  #watchOperation(key: string, client: SidecarClient, id: string): void {
    if (this.#watched.has(id) || this.#closed) return;
    this.#watched.add(id);
    void (async () => {
      try {
        for (;;) {
          const op = await client.getOperation(id, { waitMs: 30_000 });
          if (isTerminal(op.phase) || this.#closed) break;
        }
      } catch {
        // The periodic safety look (pollIntervalMs) takes over.
        return;
      } finally {
        this.#watched.delete(id);
      }
      if (!this.#closed) this.controller.enqueue(key);
    })();
  }

  /**
   * Replaces `/status` (PUT, the resourceVersion read as precondition) with the status the step
   * computed and the stored fields okt does not know (the step never saw them). A PUT rather than a
   * merge patch: the API server has no patch to apply, ~20% less of its CPU per write of okt's status.
   */
  async #writeStatus(obj: LifecycleObject, next: object): Promise<LifecycleObject> {
    const { namespace, name } = splitKey(objectKey(obj));
    const body = { ...obj, apiVersion: this.#apiVersion, kind: this.#options.resource.kind, status: statusToWrite(obj.status, next) };
    return this.#write(obj, () => this.#options.transport.replace<LifecycleObject>(this.#options.resource, namespace, name, body, {
      resourceVersion: obj.metadata.resourceVersion ?? '',
      subresource: 'status',
    }));
  }

  async #patchMetadata(obj: LifecycleObject, metadata: Record<string, unknown>): Promise<LifecycleObject> {
    const { namespace, name } = splitKey(objectKey(obj));
    return this.#write(obj, () => this.#options.transport.patchMetadata<LifecycleObject>(this.#options.resource, namespace, name, metadata, {
      resourceVersion: obj.metadata.resourceVersion ?? '',
    }));
  }

  /**
   * Sends one write of `obj` and keeps what the server answered (the next reconcile starts from it);
   * an update the watch brought meanwhile is looked at once the answer says whether it is the echo.
   */
  async #write(obj: LifecycleObject, send: () => Promise<LifecycleObject>): Promise<LifecycleObject> {
    const key = objectKey(obj);
    this.#writing.set(key, undefined);
    try {
      const kept = dropManagedFields(await send());
      this.#written.set(key, kept);
      return kept;
    } finally {
      const arrived = this.#writing.get(key);
      this.#writing.delete(key);
      // A failed write, or another writer's change: looked at again (the watch has it in the cache).
      if (arrived !== undefined && !this.#isOwnEcho(arrived)) this.controller.enqueue(key);
    }
  }

  /** A spec the operator cannot read (the CRD schema normally prevents it): conditions say why, nothing moves. */
  async #writeUnreadableSpec(obj: LifecycleObject, problem: string): Promise<void> {
    const before = parseConditions(obj.status);
    const effects = unreadable(before, REASONS.invalidSpec, problem, obj.metadata.generation ?? 1, new Date().toISOString(), this.#options.statusFormat);
    if (effects.status !== undefined) await this.#writeStatus(obj, effects.status);
  }

  /**
   * The metrics and log line of a status write: a transition (and the time on the node it left), and
   * the end of the action that ran, as its sidecar told this reconcile (the write that records the end
   * may also start the next node's action, so the status no longer holds it).
   */
  #recordWrite(stored: LifecycleStatus | undefined, next: LifecycleStatus, seen: SeenOperation | undefined, span: Span | undefined, ctx: ReconcileContext): void {
    const metrics = this.#options.metrics;
    const graph = this.#model.graph.name;
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
    ctx.log.info({ from: last.from, to: last.to, events: last.events, transition: next.transition }, 'transition');
    const brake = next.conditions.find((c) => c.type === CYCLE_BRAKE_CONDITION);
    const wasBraked = stored?.conditions.some((c) => c.type === CYCLE_BRAKE_CONDITION) === true;
    if (brake !== undefined && !wasBraked) ctx.log.warn({ reason: brake.reason }, `cycle brake engaged: ${brake.message}`);
  }

  #eventResource(key: string, obj: LifecycleObject, spec: LifecycleSpec): EventResource {
    const { namespace, name } = splitKey(key);
    const resource: EventResource = {
      key,
      uid: obj.metadata.uid ?? '',
      apiVersion: this.#apiVersion,
      kind: this.#options.resource.kind,
      namespace,
      name,
      apiPath: resourcePath(this.#options.resource, namespace, name),
    };
    if (spec.eventSink !== undefined) resource.sink = spec.eventSink;
    return resource;
  }
}

function seenOperation(seen: Operation): SeenOperation {
  const view: SeenOperation = { phase: seen.phase, events: seen.events, message: seen.message, attempts: seen.attempts };
  if (seen.reason !== undefined) view.reason = seen.reason;
  if (seen.startedAt !== undefined) view.startedAt = seen.startedAt;
  if (seen.finishedAt !== undefined) view.finishedAt = seen.finishedAt;
  return view;
}

/** Seconds from one ISO time to another, when both are known and in order. */
function secondsBetween(from: string | undefined, to: string | undefined): number | undefined {
  if (from === undefined || to === undefined) return undefined;
  const ms = Date.parse(to) - Date.parse(from);
  return Number.isFinite(ms) && ms >= 0 ? ms / 1000 : undefined;
}

function deliveryProblem(events: LifecycleEvents | undefined, uid: string): { deliveryProblem?: string } {
  const blocked = events?.blocked(uid);
  return blocked ? { deliveryProblem: `the sink refuses event ${blocked.sequence}: ${blocked.reason}` } : {};
}

/** resourceVersions are etcd revisions in every API server we know; where one is not a number, trust the cache. */
function isNewer(a: KubeObject, b: KubeObject): boolean {
  try {
    return BigInt(a.metadata.resourceVersion ?? '0') > BigInt(b.metadata.resourceVersion ?? '0');
  } catch {
    return false;
  }
}
