import type { Span, Tracer } from '@opentelemetry/api';
import { sidecarServiceUrl, type Graph } from '../../graph/index.ts';
import { traceparentOf } from '../../events/index.ts';
import {
  describeIssues,
  LIFECYCLE_FINALIZER,
  lifecycleSpecSchema,
  type LifecycleSpec,
  type LifecycleStatus,
  type OutboxEntry,
} from '../../kube/lifecycle-resource.ts';
import { statusToWrite } from '../../kube/unknown-status-fields.ts';
import { DEFAULT_STATUS_FORMAT, type StatusFormat } from '../../kube/status-format.ts';
import { newestEventSequence, statusEvents } from '../../events/status-events.ts';
import { objectKey, resourcePath, splitKey, type KubeObject, type KubeTransport, type ResourceRef } from '../../kube/transport/index.ts';
import { isTerminal, type SidecarClient } from '../../sidecar-client/index.ts';
import { Controller, type ReconcileContext, type ReconcileResult } from '../controller.ts';
import { dropManagedFields, Informer } from '../informer.ts';
import type { ControllerMetrics } from '../metrics.ts';
import type { Logger } from '../logger.ts';
import { bothSelectors, SHARD_KEY_LABEL, shardKeyOf, shardOf, shardSelector, UNKEYED_SELECTOR, type Shard } from './shard.ts';
import { SidecarClients, type SidecarDefaults, type SidecarResolution } from './sidecar-clients.ts';
import { OwnWrites } from './own-writes.ts';
import { SidecarLook } from './sidecar-look.ts';
import { ReconcileTelemetry } from './telemetry.ts';
import { classifyStartFailure } from './error-policy.ts';
import type { DeliveryMark } from './delivery-mark.ts';
import { parseConditions, parseReadBackStatus } from './parse-status.ts';
import { expandStatus } from './status/compact-format.ts';
import { encodeStatus, storedEncodingOf } from './status/encoding.ts';
import { DEFAULT_TEARDOWN_GRACE_MS, deletionView, finalizersReleased, finalizersWanted, logReleased, released } from './cleanup.ts';
import { MIGRATE_ANNOTATION, modelOfRevision } from './model.ts';
import { NodeObjects, type LifecycleObject, type LookRender } from './objects/node-objects.ts';
import type { OwnedObjects } from './objects/owned.ts';
import { unreadable } from './status/conditions.ts';
import {
  createLifecycleModel,
  REASONS,
  step,
  type LifecycleModel,
  type ResourceView,
  type SeenOperation,
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
  /** `offer` of the events up to `newest` when this resource's go to no sink (they count as delivered); false, doing nothing, when they go to one. */
  offerWithoutSink(resource: EventResource, newest: number): boolean;
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

/** How soon the end of a deletion path looks again at an object it deleted that a finalizer still holds. */
const OBJECTS_GONE_POLL_MS = 1_000;

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
  /** The objects its CRs' graph makes, watched (one informer per kind): undefined when it makes none. */
  readonly owned: OwnedObjects | undefined;
  readonly #options: LifecycleControllerOptions;
  readonly #model: LifecycleModel;
  readonly #apiVersion: string;
  readonly #sidecars: SidecarClients;
  readonly #ownWrites: OwnWrites<LifecycleObject>;
  /** Each stored status's reading back, while the object lives (#readBack). */
  readonly #readBacks = new WeakMap<object, unknown>();
  readonly #look: SidecarLook;
  readonly #telemetry: ReconcileTelemetry;
  /** Operations long-polled on the sidecar, so a finished action is noticed at once. */
  readonly #watched = new Set<string>();
  /** Per resource, the start of its committed operation while the sidecar has not answered it (no worker waits for it). */
  readonly #starting = new Map<string, Promise<void>>();
  /** Per resource, a start that failed in a way the work queue's backoff retries: its next look throws it. */
  readonly #startFailures = new Map<string, unknown>();
  /** Resources whose next move waits for their events to be delivered. */
  readonly #awaitingDelivery = new Set<string>();
  /** Per resource, why the sidecar refused the last start of its operation (said on the CR by the next step). */
  readonly #refusals = new Map<string, StartRefusal>();
  /** Operations whose cancellation was asked (a deletion or a change of spec.desiredState at a cancellable node), so it is asked once. */
  readonly #cancelled = new Set<string>();
  /** Resources this controller deleted (a leaf reached through the spec), until the watch shows the deletion. */
  readonly #deleted = new Set<string>();
  /** The objects the nodes make for the CRs (objects/node-objects.ts). */
  readonly #objects: NodeObjects;
  #closed = false;

  constructor(options: LifecycleControllerOptions) {
    this.#options = options;
    // The planner's tables and the decision table are built on first use, then cached.
    this.#model = createLifecycleModel(options.graph);
    const { group, version } = options.resource;
    this.#apiVersion = group === '' ? version : `${group}/${version}`;
    this.#sidecars = new SidecarClients(options.transport, options.sidecar ?? {}, options.logger === undefined ? {} : { logger: options.logger });
    this.#look = new SidecarLook(this.#sidecars, options.graph.name);
    this.#telemetry = new ReconcileTelemetry(options.graph.name, options.tracer, options.metrics);
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
    this.#ownWrites = new OwnWrites((key) => this.controller.enqueue(key));
    options.deliveryMark?.track(controllerOptions.name, () => this.informer.store.keys());
    // The shard's own cache holds its CRs only (by their label); a newcomer is taken by the shard of its uid.
    const enqueue = (obj: LifecycleObject) => this.controller.enqueue(objectKey(obj));
    const enqueueOwn = (obj: LifecycleObject) => {
      if (shard === undefined || shardOf(obj.metadata.uid ?? '', shard.count) === shard.index) enqueue(obj);
    };
    this.informer.addHandler({
      onAdd: (obj) => {
        this.#telemetry.noteStalled(objectKey(obj), obj);
        enqueue(obj);
      },
      onChange: (obj) => {
        this.#telemetry.noteStalled(objectKey(obj), obj);
        if (this.#ownWrites.isNews(obj)) enqueue(obj);
      },
      onDelete: (obj) => {
        const key = objectKey(obj);
        this.#options.deliveryMark?.settled(this.#markKey(key));
        this.#telemetry.forget(key, obj.metadata.uid);
        this.#ownWrites.forget(key);
        this.#awaitingDelivery.delete(key);
        this.#refusals.delete(key);
        this.#startFailures.delete(key);
        this.#objects.forget(key);
        this.#look.forget(key);
        this.#deleted.delete(obj.metadata.uid ?? '');
        if (obj.metadata.uid) this.#options.events?.forget(obj.metadata.uid);
      },
    });
    this.#objects = new NodeObjects({
      model: this.#model,
      owner: { apiVersion: this.#apiVersion, kind: options.resource.kind },
      transport: options.transport,
      enqueue: (key) => this.controller.enqueue(key),
      delivered: (uid) => this.#delivered(uid),
      writeStatus: (obj, next) => this.#writeStatus(obj, next),
      ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
      ...(shard === undefined ? {} : { shard }),
      ...(options.watchIdleTimeoutMs === undefined ? {} : { watchIdleTimeoutMs: options.watchIdleTimeoutMs }),
      ...(options.metrics === undefined ? {} : { metrics: options.metrics }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    });
    this.owned = this.#objects.owned;
    // A newcomer leaves this view when it is labelled (and shows up in the shard's own): its deletion
    // here is no deletion, so only adds and updates count.
    this.newcomers?.addHandler({ onAdd: enqueueOwn, onChange: enqueueOwn });
  }

  /** The caches the manager starts and waits for. */
  get informers(): Informer<KubeObject>[] {
    return [this.informer, ...(this.newcomers === undefined ? [] : [this.newcomers]), ...(this.owned?.informers ?? [])];
  }

  /** The emitter delivered an event of `key`: look again if the resource was waiting for that. */
  eventDelivered(key: string): void {
    if (this.#awaitingDelivery.has(key)) this.controller.enqueue(key);
  }

  /** Stops the long-polls and closes the sidecar connections (the manager stops informer and controller). */
  async close(): Promise<void> {
    this.#closed = true;
    this.owned?.close();
    // Starts in flight get their answer (each within the sidecar client's deadline) before the connections close.
    await Promise.all(this.#starting.values());
    await this.#sidecars.close();
  }

  async reconcile(key: string, ctx: ReconcileContext): Promise<ReconcileResult> {
    // A look waits for its CR's start in flight: what the sidecar says of the operation follows it.
    await this.#starting.get(key);
    const startFailure = this.#startFailures.get(key);
    if (startFailure !== undefined) {
      this.#startFailures.delete(key);
      throw startFailure;
    }
    const startedAt = Date.now();
    let obj = this.#ownWrites.current(key, this.informer.store.get(key) ?? this.newcomers?.store.get(key));
    if (obj === undefined) return;
    const { metadata } = obj;
    const uid = metadata.uid ?? '';
    const deleting = metadata.deletionTimestamp !== undefined;
    if (released(metadata)) return;
    // Deleted by this controller: nothing to do until the watch brings the deletion.
    if (!deleting && this.#deleted.has(uid)) return;

    // Parsed once per look: the metadata patch below leaves the status as it is (its resourceVersion precondition says so).
    const written = parseReadBackStatus(this.#readBack(obj));
    const spec = lifecycleSpecSchema.safeParse(obj.spec ?? {});
    if (!spec.success) {
      obj = await this.#keepFinalizer(obj, finalizersWanted(metadata, false, written), false, ctx.log);
      if (!released(obj.metadata)) await this.#writeUnreadableSpec(obj, describeIssues('spec', spec.error));
      return;
    }
    const renderedAs = this.#objects.renderedAs(obj);
    const resolved = await this.#sidecars.forSpec(spec.data, metadata.namespace ?? '', renderedAs && sidecarServiceUrl(this.#revisionGraph(written), renderedAs));
    // A shard labels the CRs it takes with their key (with the finalizer when that goes on too); an
    // unsharded operator leaves them unkeyed (the label and its managed field cost every write), and a
    // shard started later takes them from its view of unkeyed CRs.
    const addKey = this.#options.shard !== undefined && metadata.labels?.[SHARD_KEY_LABEL] === undefined && !deleting;
    obj = await this.#keepFinalizer(obj, finalizersWanted(metadata, resolved.kind !== 'refused', written), addKey, ctx.log);
    if (released(obj.metadata)) return;
    const resource = this.#eventResource(key, obj, spec.data);
    const events = this.#options.events;
    // Only what is written: a held record's event goes out once its write succeeded.
    this.#offer(key, resource, written !== undefined && !('invalid' in written) ? written : undefined);
    const held = this.#objects.heldRecord(key, obj);
    const status = held ?? written;
    const stored = status !== undefined && !('invalid' in status) ? status : undefined;

    const sidecar = await this.#look.view(key, resolved, stored, ctx.log);
    const view: ResourceView = { uid, generation: metadata.generation ?? 1, deleting, spec: spec.data, status, ...(await deletionView(metadata, sidecar, this.#options.transport, ctx.log)) };
    if (metadata.annotations?.[MIGRATE_ANNOTATION] === 'true') view.migrateRequested = true;
    const refusal = this.#refusals.get(key);
    const now = new Date().toISOString();
    // Events this reconcile may commit carry `now`: the Lease's mark stays below it until they are offered.
    const mark = this.#options.deliveryMark;
    mark?.hold(this.#markKey(key), now);
    const { objects, render } = this.#objects.readiness(obj, stored);
    const effects = step({
      model: this.#model,
      resource: view,
      sidecar,
      delivered: this.#delivered(uid),
      now,
      outboxLimit: this.#options.outboxLimit ?? 64,
      teardownGraceMs: this.#options.teardownGraceMs ?? DEFAULT_TEARDOWN_GRACE_MS,
      statusFormat: this.#options.statusFormat ?? DEFAULT_STATUS_FORMAT,
      storedEncoding: storedEncodingOf(obj.status),
      ...(refusal === undefined ? {} : { startRefused: refusal }),
      ...(objects === undefined ? {} : { objects }),
      ...deliveryProblem(events, uid),
    });
    if (effects.awaitingDelivery) this.#awaitingDelivery.add(key);
    else this.#awaitingDelivery.delete(key);
    const seen = sidecar.kind === 'answered' && typeof sidecar.operation === 'object' ? sidecar.operation : undefined;
    // A write that commits events is a trace of its own: its span starts when this reconcile did.
    const span = this.#telemetry.commitSpan(key, stored, effects, startedAt);
    if (span !== undefined) resource.traceparent = traceparentOf(span);
    try {
      // The held record is written with the step's status, or alone when the step writes none.
      const carried = held !== undefined && effects.status === undefined ? { ...effects, status: held } : effects;
      const result = await this.#carryOut(key, obj, stored, carried, resolved, resource, seen, span, ctx, render);
      mark?.settled(this.#markKey(key));
      return result;
    } finally {
      span?.end();
    }
  }

  /** The graph of the revision the CR is on (whose Service it made), else the operator's. */
  #revisionGraph(status: ReturnType<typeof parseReadBackStatus>): Graph {
    const revision = status !== undefined && !('invalid' in status) ? status.graphRevision : undefined;
    return modelOfRevision(this.#model, revision)?.graph ?? this.#model.graph;
  }

  /** The highest event sequence delivered for this uid: all of them when events are not sent anywhere. */
  #delivered(uid: string): number {
    const { events } = this.#options;
    return events ? events.delivered(uid) : Number.MAX_SAFE_INTEGER;
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
    // Those an earlier leader delivered (committed before the mark it left), in order up to the first that may not be.
    const before = deliveryMark?.deliveredBefore;
    // Events going nowhere are not read back (most operators without a sink, every look).
    if (before === undefined && events.offerWithoutSink(resource, newestEventSequence(status))) return;
    const stored = statusEvents(status, this.#model.graph.name);
    const known = before === undefined ? 0 : stored.findIndex((entry) => !(Date.parse(entry.time) < before));
    const skipped = known === -1 ? stored.length : known;
    if (skipped > 0) events.acknowledge(resource, stored[skipped - 1]!.sequence);
    events.offer(resource, skipped > 0 ? stored.slice(skipped) : stored);
  }

  async #carryOut(
    key: string, obj: LifecycleObject, stored: LifecycleStatus | undefined, effects: StepEffects,
    resolved: SidecarResolution, resource: EventResource, seen: SeenOperation | undefined, span: Span | undefined, ctx: ReconcileContext,
    render: LookRender | undefined,
  ): Promise<ReconcileResult> {
    const client = resolved.kind === 'client' ? resolved.client : undefined;
    const makesObjects = effects.finish === undefined && this.#objects.involved(stored);
    if (makesObjects && effects.status !== undefined && 'state' in effects.status) {
      ({ effects, render } = this.#objects.recordingNew(obj, effects, effects.status, render));
    }
    if (effects.status !== undefined) {
      obj = await this.#writeStatus(obj, effects.status);
      if ('state' in effects.status) this.#telemetry.recordWrite(stored, effects.status, seen, span, ctx.log);
      if ('state' in effects.status) this.#offer(key, resource, effects.status);
    }
    // Also when no revision declares any: an inventory left by an earlier one is pruned.
    if (makesObjects) obj = await this.#objects.apply(obj, render, effects.again === true, (written) => this.#offer(key, resource, written));
    const start = effects.startOperation;
    // Only after the write that committed it: a crash before the start restarts it with the same id.
    if (start !== undefined && resolved.kind === 'client') this.#startCommitted(key, start, resolved, span, ctx);
    if (effects.cancelOperation !== undefined && client !== undefined) this.#cancel(key, client, effects.cancelOperation, ctx);
    // A poll long-polls the operation the CR now holds only while it runs: that of one which ended
    // answers at once, and would wake the CR again at once (a CR waiting for its events, say).
    const held = effects.status !== undefined && 'state' in effects.status ? effects.status.operation : stored?.operation;
    const running = start === undefined && effects.poll && held !== undefined && !isTerminal(held.phase) ? held.id : undefined;
    if (running !== undefined && resolved.kind === 'client') this.#watchOperation(key, resolved, running);
    if (effects.finish === 'removeFinalizer') {
      if (!(await this.#objects.gone(obj, effects.abandoned === true))) return { requeueAfter: OBJECTS_GONE_POLL_MS };
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

  /**
   * Starts a committed operation without holding the worker while the sidecar makes its acceptance
   * durable (a journal write on its disk): the CR's next look waits for it, other CRs do not. Once
   * started, its end is long-polled; a refusal is said on the CR by the next step, which tries the
   * start again after the refusal's delay; a transient failure is thrown by the next look, into the
   * work queue's backoff.
   */
  #startCommitted(key: string, start: NonNullable<StepEffects['startOperation']>, resolved: Extract<SidecarResolution, { kind: 'client' }>, span: Span | undefined, ctx: ReconcileContext): void {
    const params: Parameters<SidecarClient['startOperation']>[1] = { node: start.node, graph: this.#model.graph.name };
    if (start.epoch !== undefined && start.epoch !== '') params.epoch = start.epoch;
    if (start.params !== undefined) params.params = start.params;
    const starting = (async () => {
      try {
        await this.#telemetry.traced(span, `okt.sidecar.start ${start.node}`, { 'okt.operation.id': start.id, 'server.address': resolved.url }, () => resolved.client.startOperation(start.id, params));
        this.#telemetry.started(start.id, span);
        this.#refusals.delete(key);
        ctx.log.info({ operation: start.id, node: start.node }, 'action started');
        this.#watchOperation(key, resolved, start.id);
      } catch (error) {
        this.#sidecars.forgetRefusedToken(resolved, error);
        const policy = classifyStartFailure(error, start, resolved.url, resolved.tokenSource !== undefined);
        if (policy.kind === 'retry') {
          this.#startFailures.set(key, error);
          this.controller.enqueue(key);
          return;
        }
        const known = this.#refusals.get(key);
        this.#refusals.set(key, policy.refusal);
        ctx.log.warn({ operation: start.id, reason: policy.refusal.reason }, policy.refusal.message);
        if (known?.operation !== start.id || known.reason !== policy.refusal.reason) this.controller.enqueue(key);
      } finally {
        this.#starting.delete(key);
      }
    })();
    this.#starting.set(key, starting);
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

  /** Long-polls an operation until it ends, then looks at the resource again, which takes the end heard here. */
  #watchOperation(key: string, { client, url }: Extract<SidecarResolution, { kind: 'client' }>, id: string): void {
    if (this.#watched.has(id) || this.#closed) return;
    this.#watched.add(id);
    void (async () => {
      try {
        for (;;) {
          const op = await client.getOperation(id, { waitMs: 30_000 });
          if (this.#closed) break;
          if (isTerminal(op.phase)) {
            this.#look.ended(key, url, op);
            break;
          }
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
   * The CR's status as stored, read back as okt reads it (expandStatus), once per stored object: a look
   * reads it for its decision and again for its write, of the same object (the cache hands each look
   * one of its own, which no one changes).
   */
  #readBack(obj: LifecycleObject): unknown {
    const stored = obj.status;
    if (typeof stored !== 'object' || stored === null) return expandStatus(stored, obj.metadata.uid ?? '');
    if (!this.#readBacks.has(stored)) this.#readBacks.set(stored, expandStatus(stored, obj.metadata.uid ?? ''));
    return this.#readBacks.get(stored);
  }

  /**
   * Replaces `/status` (PUT, the resourceVersion read as precondition) with the status the step
   * computed and the stored fields okt does not know (the step never saw them). A PUT rather than a
   * merge patch: the API server has no patch to apply, ~20% less of its CPU per write of okt's status.
   */
  async #writeStatus(obj: LifecycleObject, next: object): Promise<LifecycleObject> {
    const { namespace, name } = splitKey(objectKey(obj));
    // Other writers' fields are matched against the status as okt reads it (a compact one expanded).
    const uid = obj.metadata.uid ?? '';
    const status = statusToWrite(this.#readBack(obj), next);
    const stored = 'state' in status ? encodeStatus(status as LifecycleStatus, uid, this.#options.statusFormat ?? DEFAULT_STATUS_FORMAT) : status;
    // The whole object, though the status subresource takes only its status: sent the status alone,
    // kube-apiserver 1.35 drops the metadata it leaves out from managedFields (okt's finalizer entry,
    // kubectl's labels and annotations), where 1.37 does not (measured: 0.9 of its CPU per PUT there).
    const body = { ...obj, apiVersion: this.#apiVersion, kind: this.#options.resource.kind, status: stored };
    return this.#ownWrites.write(obj, () => this.#options.transport.replace<LifecycleObject>(this.#options.resource, namespace, name, body, {
      resourceVersion: obj.metadata.resourceVersion ?? '',
      subresource: 'status',
    }));
  }

  /**
   * Puts okt's finalizer on or takes it off (finalizersWanted), with the shard's key when that goes on
   * too, in one patch; the CR as it then is. Taken off a deleted CR, that releases it.
   */
  async #keepFinalizer(obj: LifecycleObject, finalizers: string[] | undefined, addKey: boolean, log: Logger): Promise<LifecycleObject> {
    if (finalizers === undefined && !addKey) return obj;
    const patched = await this.#patchMetadata(obj, {
      ...(finalizers !== undefined ? { finalizers } : {}),
      ...(addKey ? { labels: { [SHARD_KEY_LABEL]: String(shardKeyOf(obj.metadata.uid ?? '')) } } : {}),
    });
    if (finalizers !== undefined && !finalizers.includes(LIFECYCLE_FINALIZER)) log.info('sidecar refused or spec unreadable, and nothing ran or was made for it: finalizer removed, so its deletion does not wait');
    return patched;
  }

  async #patchMetadata(obj: LifecycleObject, metadata: Record<string, unknown>): Promise<LifecycleObject> {
    const { namespace, name } = splitKey(objectKey(obj));
    return this.#ownWrites.write(obj, () => this.#options.transport.patchMetadata<LifecycleObject>(this.#options.resource, namespace, name, metadata, {
      resourceVersion: obj.metadata.resourceVersion ?? '',
    }));
  }

  /** A spec the operator cannot read (the CRD schema normally prevents it): conditions say why, nothing moves. */
  async #writeUnreadableSpec(obj: LifecycleObject, problem: string): Promise<void> {
    const before = parseConditions(obj.status, obj.metadata.uid ?? '');
    const effects = unreadable(before, REASONS.invalidSpec, problem, obj.metadata.generation ?? 1, new Date().toISOString(), this.#options.statusFormat);
    if (effects.status !== undefined) await this.#writeStatus(obj, effects.status);
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

function deliveryProblem(events: LifecycleEvents | undefined, uid: string): { deliveryProblem?: string } {
  const blocked = events?.blocked(uid);
  return blocked ? { deliveryProblem: `the sink refuses event ${blocked.sequence}: ${blocked.reason}` } : {};
}
