import type { Graph } from '../../graph/index.ts';
import { createPlanner } from '../../plan/index.ts';
import { conditionSchema } from '../../kube/conditions.ts';
import {
  LIFECYCLE_FINALIZER,
  describeIssues,
  lifecycleSpecSchema,
  lifecycleStatusSchema,
  type LifecycleSpec,
  type LifecycleStatus,
  type OutboxEntry,
} from '../../kube/lifecycle-resource.ts';
import { mergePatchFrom } from '../../kube/merge-patch.ts';
import { resourcePath, splitKey, type KubeObject, type KubeTransport, type ResourceRef } from '../../kube/transport/index.ts';
import { isTerminal, SidecarProblemError, type SidecarClient } from '../../sidecar-client/index.ts';
import { Controller, type ReconcileContext, type ReconcileResult } from '../controller.ts';
import { Informer } from '../informer.ts';
import type { ControllerMetrics } from '../metrics.ts';
import type { Logger } from '../logger.ts';
import { shardOf, type Shard } from './shard.ts';
import { SidecarClients } from './sidecar-clients.ts';
import { REASONS, step, unreadable, type InvalidStatus, type LifecycleModel, type SidecarView, type StepEffects } from './step.ts';

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
}

/** What the reconciler needs of the CloudEvents emitter (src/events). */
export interface LifecycleEvents {
  /** Idempotent by sequence; sends in sequence order per resource. */
  offer(resource: EventResource, entries: readonly OutboxEntry[]): void;
  /** The highest sequence delivered for this uid (0: none). */
  delivered(uid: string): number;
  /** The event the sink refuses for this uid, if it does: later events wait behind it. */
  blocked(uid: string): { sequence: number; reason: string } | undefined;
  forget(uid: string): void;
}

export interface LifecycleResourceRef extends ResourceRef {
  kind: string;
}

export interface LifecycleControllerOptions {
  graph: Graph;
  resource: LifecycleResourceRef;
  transport: KubeTransport;
  /** Where CRs without spec.sidecar find theirs, and the token for every sidecar without tokenSecretRef. */
  sidecar?: { url?: string; token?: string };
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
  metrics?: ControllerMetrics;
  logger?: Logger;
}

type LifecycleObject = KubeObject & { spec?: unknown; status?: unknown };

/**
 * The lifecycle controller of one graph: an informer on its CRs and a controller whose reconcile
 * runs `step` between what the API server and the sidecar say and the effects it asks for.
 */
export class LifecycleController {
  readonly informer: Informer<LifecycleObject>;
  readonly controller: Controller;
  readonly #options: LifecycleControllerOptions;
  readonly #model: LifecycleModel;
  readonly #apiVersion: string;
  readonly #sidecars: SidecarClients;
  /** Objects this controller wrote, newer than the cache until the watch brings them (client-go's mutation cache). */
  readonly #written = new Map<string, LifecycleObject>();
  /** Operations long-polled on the sidecar, so a finished action is noticed at once. */
  readonly #watched = new Set<string>();
  /** Resources whose next move waits for their events to be delivered. */
  readonly #awaitingDelivery = new Set<string>();
  #closed = false;

  constructor(options: LifecycleControllerOptions) {
    this.#options = options;
    // The planner's tables and the decision table are built on first use, then cached.
    this.#model = { graph: options.graph, planner: createPlanner(options.graph) };
    const { group, version } = options.resource;
    this.#apiVersion = group === '' ? version : `${group}/${version}`;
    this.#sidecars = new SidecarClients(options.transport, options.sidecar ?? {});
    const informerOptions: ConstructorParameters<typeof Informer<LifecycleObject>>[0] = { transport: options.transport, resource: options.resource };
    if (options.namespace !== undefined) informerOptions.namespace = options.namespace;
    if (options.labelSelector !== undefined) informerOptions.labelSelector = options.labelSelector;
    informerOptions.resyncPeriodMs = options.resyncPeriodMs ?? 600_000;
    if (options.logger !== undefined) informerOptions.logger = options.logger;
    this.informer = new Informer<LifecycleObject>(informerOptions);
    const controllerOptions: ConstructorParameters<typeof Controller>[0] = {
      name: `${options.resource.plural}.${options.resource.group}`,
      reconcile: (key, ctx) => this.reconcile(key, ctx),
    };
    if (options.workers !== undefined) controllerOptions.workers = options.workers;
    if (options.metrics !== undefined) controllerOptions.metrics = options.metrics;
    if (options.logger !== undefined) controllerOptions.logger = options.logger;
    this.controller = new Controller(controllerOptions);
    const shard = options.shard;
    const enqueue = (obj: LifecycleObject) => {
      if (shard === undefined || shardOf(obj.metadata.uid ?? '', shard.count) === shard.index) this.controller.enqueue(keyOf(obj));
    };
    this.informer.addHandler({
      onAdd: enqueue,
      onUpdate: (_old, obj) => {
        // The echo of this controller's own write brings nothing new: the reconcile that wrote it has
        // already asked for what comes next (an operation's long-poll, `again`, a requeue).
        if (this.#isOwnEcho(obj)) return;
        enqueue(obj);
      },
      onDelete: (obj) => {
        const key = keyOf(obj);
        this.#written.delete(key);
        this.#awaitingDelivery.delete(key);
        if (obj.metadata.uid) this.#options.events?.forget(obj.metadata.uid);
      },
    });
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
    let obj = this.#current(key);
    if (obj === undefined) return;
    const { metadata } = obj;
    const uid = metadata.uid ?? '';
    const deleting = metadata.deletionTimestamp !== undefined;
    const finalizers = metadata.finalizers ?? [];
    if (deleting && !finalizers.includes(LIFECYCLE_FINALIZER)) return;

    const spec = lifecycleSpecSchema.safeParse(obj.spec ?? {});
    if (!spec.success) {
      await this.#writeUnreadableSpec(obj, describeIssues('spec', spec.error));
      return;
    }
    if (!deleting && !finalizers.includes(LIFECYCLE_FINALIZER)) {
      // First sight: the finalizer goes on before anything runs, so deletion can always drive the app down.
      obj = await this.#patchMetadata(obj, { finalizers: [...finalizers, LIFECYCLE_FINALIZER] });
    }
    const status = parseStatus(obj.status);
    const resource = this.#eventResource(key, obj, spec.data);
    const events = this.#options.events;
    const stored = status !== undefined && !('invalid' in status) ? status : undefined;
    if (stored?.outbox) events?.offer(resource, stored.outbox);
    const client = await this.#sidecars.forSpec(spec.data, metadata.namespace ?? '');

    const effects = step({
      model: this.#model,
      resource: { uid, generation: metadata.generation ?? 1, deleting, spec: spec.data, status },
      sidecar: await this.#sidecarView(client, stored),
      delivered: events ? events.delivered(uid) : Number.MAX_SAFE_INTEGER,
      now: new Date().toISOString(),
      outboxLimit: this.#options.outboxLimit ?? 64,
      ...deliveryProblem(events, uid),
    });
    if (effects.awaitingDelivery) this.#awaitingDelivery.add(key);
    else this.#awaitingDelivery.delete(key);
    return this.#carryOut(key, obj, stored, effects, client, resource, ctx);
  }

  async #carryOut(
    key: string, obj: LifecycleObject, stored: LifecycleStatus | undefined, effects: StepEffects,
    client: SidecarClient | undefined, resource: EventResource, ctx: ReconcileContext,
  ): Promise<ReconcileResult> {
    if (effects.status !== undefined) {
      const before = 'state' in effects.status ? obj.status ?? {} : { conditions: (obj.status as { conditions?: unknown } | undefined)?.conditions };
      obj = await this.#patchStatus(obj, before, effects.status);
      if ('state' in effects.status) this.#recordTransition(stored, effects.status, ctx);
      if ('outbox' in effects.status && effects.status.outbox) this.#options.events?.offer(resource, effects.status.outbox);
    }
    if (effects.startOperation !== undefined) {
      if (client === undefined) throw new Error('the node has an action but no sidecar is configured: set spec.sidecar.url or start the operator with --sidecar-url');
      // Only after the write that committed it: a crash before this line restarts it with the same id.
      await client.startOperation(effects.startOperation.id, { node: effects.startOperation.node, graph: this.#model.graph.name });
      ctx.log.info({ operation: effects.startOperation.id, node: effects.startOperation.node }, 'action started');
    }
    const running = effects.startOperation?.id ?? (effects.poll ? stored?.operation?.id : undefined);
    if (running !== undefined && client !== undefined) this.#watchOperation(key, client, running);
    if (effects.finish === 'removeFinalizer') {
      const finalizers = (obj.metadata.finalizers ?? []).filter((f) => f !== LIFECYCLE_FINALIZER);
      await this.#patchMetadata(obj, { finalizers });
      ctx.log.info('at a leaf with every event delivered: finalizer removed');
    } else if (effects.finish === 'delete') {
      const { namespace, name } = splitKey(key);
      await this.#options.transport.delete(this.#options.resource, namespace, name, { preconditions: { uid: obj.metadata.uid ?? '' } });
      ctx.log.info('a leaf reached through the spec: resource deleted (spec.onLeaf: Keep keeps it)');
    }
    if (effects.again) this.controller.enqueue(key);
    return effects.poll ? { requeueAfter: this.#options.pollIntervalMs ?? 10_000 } : undefined;
  }

  /** The cached object, or the one this controller wrote last when the watch has not brought it yet. */
  #current(key: string): LifecycleObject | undefined {
    const cached = this.informer.store.get(key);
    const written = this.#written.get(key);
    if (cached === undefined || written === undefined) return cached;
    return isNewer(written, cached) ? written : cached;
  }

  /** Whether `obj` is exactly what this controller wrote last; the cache now has it, so the copy goes. */
  #isOwnEcho(obj: LifecycleObject): boolean {
    const key = keyOf(obj);
    const written = this.#written.get(key);
    if (written === undefined || isNewer(written, obj)) return false;
    this.#written.delete(key);
    return written.metadata.resourceVersion === obj.metadata.resourceVersion;
  }

  async #sidecarView(client: SidecarClient | undefined, stored: LifecycleStatus | undefined): Promise<SidecarView> {
    if (client === undefined) return { kind: 'unavailable', message: 'no sidecar configured (spec.sidecar.url or --sidecar-url)' };
    const operation = stored?.operation;
    try {
      if (operation !== undefined && !isTerminal(operation.phase)) {
        const seen = await client.getOperation(operation.id);
        const view: Exclude<SidecarView, { kind: 'unavailable' }>['operation'] = { phase: seen.phase, events: seen.events, message: seen.message };
        if (seen.startedAt !== undefined) view.startedAt = seen.startedAt;
        if (seen.finishedAt !== undefined) view.finishedAt = seen.finishedAt;
        return { kind: 'answered', operation: view, observedEvents: [] };
      }
      const observation = await client.observe({ graph: this.#model.graph.name, since: stored?.observedSequence ?? 0 });
      return { kind: 'answered', observedEvents: observation.events.map((e) => e.event), observedSequence: observation.lastSeq };
    } catch (error) {
      if (error instanceof SidecarProblemError && error.status === 404 && operation !== undefined) {
        return { kind: 'answered', operation: 'unknown', observedEvents: [] };
      }
      return { kind: 'unavailable', message: error instanceof Error ? error.message : String(error) };
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

  async #patchStatus(obj: LifecycleObject, before: unknown, after: object): Promise<LifecycleObject> {
    const patch = mergePatchFrom(before, after) ?? {};
    const { namespace, name } = splitKey(keyOf(obj));
    const written = await this.#options.transport.patchStatus<LifecycleObject>(this.#options.resource, namespace, name, patch, {
      resourceVersion: obj.metadata.resourceVersion ?? '',
    });
    return this.#remember(written);
  }

  async #patchMetadata(obj: LifecycleObject, metadata: Record<string, unknown>): Promise<LifecycleObject> {
    const { namespace, name } = splitKey(keyOf(obj));
    const written = await this.#options.transport.patchMetadata<LifecycleObject>(this.#options.resource, namespace, name, metadata, {
      resourceVersion: obj.metadata.resourceVersion ?? '',
    });
    return this.#remember(written);
  }

  #remember(written: LifecycleObject): LifecycleObject {
    const { managedFields: _dropped, ...metadata } = written.metadata;
    const kept = { ...written, metadata };
    this.#written.set(keyOf(kept), kept);
    return kept;
  }

  /** A spec the operator cannot read (the CRD schema normally prevents it): conditions say why, nothing moves. */
  async #writeUnreadableSpec(obj: LifecycleObject, problem: string): Promise<void> {
    const before = parseConditions(obj.status);
    const effects = unreadable(before, REASONS.invalidSpec, problem, obj.metadata.generation ?? 1, new Date().toISOString());
    if (effects.status !== undefined) await this.#patchStatus(obj, { conditions: before }, effects.status);
  }

  #recordTransition(stored: LifecycleStatus | undefined, next: LifecycleStatus, ctx: ReconcileContext): void {
    const last = next.lastTransition;
    if (last === undefined || next.transition === (stored?.transition ?? 0)) return;
    this.#options.metrics?.transitionsTotal.labels(this.#model.graph.name, last.from, last.to).inc();
    ctx.log.info({ from: last.from, to: last.to, events: last.events, transition: next.transition }, 'transition');
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

function keyOf(obj: KubeObject): string {
  const { namespace, name } = obj.metadata;
  return namespace ? `${namespace}/${name}` : (name ?? '');
}

/** resourceVersions are etcd revisions in every API server we know; where one is not a number, trust the cache. */
function isNewer(a: KubeObject, b: KubeObject): boolean {
  try {
    return BigInt(a.metadata.resourceVersion ?? '0') > BigInt(b.metadata.resourceVersion ?? '0');
  } catch {
    return false;
  }
}

function parseStatus(raw: unknown): LifecycleStatus | InvalidStatus | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'object' && Object.keys(raw).every((key) => key === 'conditions')) {
    // Only conditions (an earlier InvalidSpec write) and no state yet: a first sight. A status that lost
    // its state but kept the rest is not: it is invalid, and the operator does not start over at the entry.
    return undefined;
  }
  const parsed = lifecycleStatusSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const invalid: InvalidStatus = { invalid: describeIssues('status', parsed.error) };
  const conditions = parseConditions(raw);
  if (conditions.length > 0) invalid.conditions = conditions;
  return invalid;
}

function parseConditions(raw: unknown): NonNullable<InvalidStatus['conditions']> {
  const list = (raw as { conditions?: unknown } | undefined)?.conditions;
  const parsed = conditionSchema.array().safeParse(list ?? []);
  return parsed.success ? parsed.data : [];
}
