import { isDeepStrictEqual } from 'node:util';
import { makesObjectsAt, renderObjects, type Graph, type ObjectOwner, type ObjectRendering } from '../../../graph/index.ts';
import { LIFECYCLE_FINALIZER, type LifecycleSpec, type LifecycleStatus } from '../../../kube/lifecycle-resource.ts';
import { objectKey, type KubeObject, type KubeTransport } from '../../../kube/transport/index.ts';
import type { ControllerMetrics } from '../../metrics.ts';
import type { Logger } from '../../logger.ts';
import { objectsGraph } from '../model.ts';
import { parseStatus } from '../parse-status.ts';
import type { Shard } from '../shard.ts';
import type { LifecycleModel, StepEffects, StepInput } from '../step-types.ts';
import { applyNodeObjects, objectsDeletingCondition, type NodeObjectsIo, type ObjectCounts } from './apply.ts';
import { planObjects } from './inventory.ts';
import { OwnedObjects } from './owned.ts';
import { letGo, reverseDeclarationOrder } from './prune.ts';
import { readNodeReadiness } from './read-readiness.ts';

/** A CR of the lifecycle kind, as the informer caches it. */
export type LifecycleObject = KubeObject & { spec?: unknown; status?: unknown };

/** A node's objects rendered in one look: for the readiness read before the step, and again for the apply after it if the CR is still at that node. */
export interface LookRender {
  readonly graph: Graph;
  readonly state: string;
  readonly rendering: ObjectRendering;
}

/** The render of `state` on `graph`: the look's own when it rendered that already, else rendered now. */
function renderOnce(render: LookRender | undefined, graph: Graph, owner: ObjectOwner, state: string): LookRender {
  return render?.graph === graph && render.state === state ? render : { graph, state, rendering: renderObjects(graph, owner, state) };
}

export interface NodeObjectsOptions {
  model: LifecycleModel;
  /** The CR kind's apiVersion and kind: the owner its objects' renders and ownerReferences name. */
  owner: { apiVersion: string; kind: string };
  transport: KubeTransport;
  /** Looks at the CR `namespace/name` again. */
  enqueue(key: string): void;
  /** The highest event sequence delivered for this uid (all of them when events are not sent). */
  delivered(uid: string): number;
  /** Writes the CR's status (the reconciler's write, whose echo it knows) and returns the CR as written. */
  writeStatus(obj: LifecycleObject, next: LifecycleStatus): Promise<LifecycleObject>;
  namespace?: string;
  shard?: Shard;
  watchIdleTimeoutMs?: number;
  metrics?: ControllerMetrics;
  logger?: Logger;
}

/**
 * The objects the nodes of one graph make for its CRs, as the reconciler's effects: their readiness
 * for the step, their record in the step's write, their apply after it, their end with the CR's.
 */
export class NodeObjects {
  /** The objects its CRs' graph makes, watched (one informer per kind): undefined when it makes none. */
  readonly owned: OwnedObjects | undefined;
  readonly #options: NodeObjectsOptions;
  /** The graph or an earlier revision it serves declares objects: its CRs' are made. */
  readonly #declared: boolean;
  /**
   * Per resource, the inventory as applied (objects/apply.ts) not written yet, and the resourceVersion
   * of the write it follows: the look the step asked for at once (to start the action its objects held
   * back) steps from it and writes it with its own status, one write instead of two.
   */
  readonly #heldRecords = new Map<string, { readonly resourceVersion: string; readonly status: LifecycleStatus }>();

  constructor(options: NodeObjectsOptions) {
    this.#options = options;
    const { graph } = options.model;
    this.#declared = [graph, ...graph.previous].some((g) => g.objects.length > 0);
    this.owned = !this.#declared ? undefined : new OwnedObjects({
      graph,
      transport: options.transport,
      owner: options.owner,
      enqueue: options.enqueue,
      ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
      ...(options.shard === undefined ? {} : { shard: options.shard }),
      ...(options.watchIdleTimeoutMs === undefined ? {} : { watchIdleTimeoutMs: options.watchIdleTimeoutMs }),
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    });
  }

  /** Whether a look that does not end the CR's life records and applies objects: also when no revision declares any, for an inventory an earlier one left (pruned). */
  involved(stored: LifecycleStatus | undefined): boolean {
    return this.#declared || (stored?.objects?.length ?? 0) > 0;
  }

  /**
   * The readiness of the objects of the CR's node, read only while an action of that node may start
   * (its operation not succeeded), from the owned objects' caches (objects/read-readiness.ts): no
   * API request; a change of one wakes the CR. With the render it judged, which the apply reuses.
   */
  readiness(obj: LifecycleObject, stored: LifecycleStatus | undefined): { objects?: StepInput['objects']; render?: LookRender } {
    const operation = stored?.operation;
    const owned = this.owned;
    if (stored === undefined || owned === undefined || operation === undefined || operation.node !== stored.state || operation.phase === 'Succeeded') return {};
    const owner = this.#objectOwner(obj);
    // The objects of the revision the CR is on; one waiting to migrate waits for none.
    const graph = objectsGraph(this.#options.model, stored);
    if (owner === undefined || graph === undefined || !makesObjectsAt(graph, stored.state)) return {};
    const render = { graph, state: stored.state, rendering: renderObjects(graph, owner, stored.state) };
    const read = readNodeReadiness((...object) => owned.cached(...object), owner.metadata.namespace, render.rendering, stored.objects ?? []);
    return { objects: { node: stored.state, ...read }, render };
  }

  /**
   * The step's write with the objects of the node it puts the CR at that the inventory lacks (no hash
   * yet): recorded before they are created by that write, not one of their own. With the render, which
   * the apply after the write reuses.
   */
  recordingNew(obj: LifecycleObject, effects: StepEffects, status: LifecycleStatus, render: LookRender | undefined): { effects: StepEffects; render: LookRender | undefined } {
    const owner = this.#objectOwner(obj);
    const graph = objectsGraph(this.#options.model, status);
    if (owner === undefined || graph === undefined || graph.objects.length === 0) return { effects, render };
    const rendered = renderOnce(render, graph, owner, status.state);
    const { rendering } = rendered;
    // A render problem is said by the apply, which applies nothing.
    const record = rendering.problems.length > 0 ? undefined : planObjects(status.objects ?? [], rendering.objects).record;
    return { effects: record === undefined ? effects : { ...effects, status: { ...status, objects: record } }, render: rendered };
  }

  /**
   * The objects of the CR's node made so (objects/apply.ts), after the step's write: the action it
   * starts finds them applied. A migration's write has put the CR on its new node already: a renamed
   * node's objects are its own still (applied again only if their render changed), a removed node's
   * are pruned once the new node's are applied. Rendered once per look: the readiness's render when
   * the CR is still at its node of the same revision (the step's write changes neither the CR's
   * metadata nor its spec). `offer` hands the events of a status written to the emitter.
   */
  async apply(obj: LifecycleObject, render: LookRender | undefined, lookingAgain: boolean, offer: (written: LifecycleStatus) => void): Promise<LifecycleObject> {
    const status = parseStatus(obj.status, obj.metadata.uid ?? '');
    const owner = this.#objectOwner(obj);
    if (status === undefined || 'invalid' in status || owner === undefined) return obj;
    const graph = objectsGraph(this.#options.model, status);
    if (graph === undefined || (graph.objects.length === 0 && (status.objects ?? []).length === 0)) return obj;
    const { rendering } = renderOnce(render, graph, owner, status.state);
    const key = objectKey(obj);
    const io: NodeObjectsIo = {
      graph,
      transport: this.#options.transport,
      key,
      // Not while the CR is deleted: a look at it that is older than the end of its deletion path would make again what that let go of.
      ...(this.owned === undefined || obj.metadata.deletionTimestamp !== undefined ? {} : { owned: this.owned }),
      now: new Date().toISOString(),
      events: { delivered: this.#options.delivered(obj.metadata.uid ?? ''), desired: (obj.spec as LifecycleSpec).desiredState },
      ...this.#counts(),
      write: async (next: LifecycleStatus) => {
        obj = await this.#options.writeStatus(obj, next);
        // Its events go out as the step's do: handed to the emitter once written.
        offer(next);
        return next;
      },
      // The look asked for at once writes it with its own status.
      ...(lookingAgain ? {
        writeApplied: async (next: LifecycleStatus) => {
          this.#heldRecords.set(key, { resourceVersion: obj.metadata.resourceVersion ?? '', status: next });
          return next;
        },
      } : {}),
    };
    const { applied } = await applyNodeObjects(io, owner, status, rendering);
    // An apply the API server stores wakes the CR through the owned caches; one it stores nothing of
    // (the object already so, as after a restart between an apply and its status write) would not,
    // and the readiness of this look judged the object not applied yet: the next look judges it.
    if (applied > 0) this.#options.enqueue(key);
    return obj;
  }

  /** The record held for this look, taken once: only while the CR is as the write it follows left it (else its objects are applied and recorded anew). */
  heldRecord(key: string, obj: LifecycleObject): LifecycleStatus | undefined {
    const held = this.#heldRecords.get(key);
    this.#heldRecords.delete(key);
    return held !== undefined && held.resourceVersion === obj.metadata.resourceVersion ? held.status : undefined;
  }

  /** The CR is gone: its held record with it. */
  forget(key: string): void {
    this.#heldRecords.delete(key);
  }

  /**
   * At the end of the deletion path: every object in the inventory let go of (deleted in reverse order
   * of declaration, or kept), and gone. One a finalizer holds is named on the CR (ObjectsApplied=False,
   * ObjectsDeleting) while the CR's finalizer waits for it. An abandoned deletion asks for every
   * deletion and waits for none: a namespace teardown ends within its grace, and okt.dev/abandon releases.
   */
  async gone(obj: LifecycleObject, abandoned: boolean): Promise<boolean> {
    const status = parseStatus(obj.status, obj.metadata.uid ?? '');
    if (status === undefined || 'invalid' in status || (status.objects ?? []).length === 0) return true;
    const owner = { namespace: obj.metadata.namespace ?? '', uid: obj.metadata.uid ?? '' };
    const { graph } = this.#options.model;
    const held = await letGo(this.#options.transport, graph, owner, reverseDeclarationOrder(graph, status.objects ?? []), !abandoned, this.#counts().counts?.letGo);
    if (held === undefined || abandoned) return true;
    const next = { ...status, conditions: objectsDeletingCondition(status, held, new Date().toISOString()) };
    if (!isDeepStrictEqual(next, status)) await this.#options.writeStatus(obj, next);
    return false;
  }

  /** The CR as the objects' renders see it; undefined for one without name, namespace or uid. */
  renderedAs(obj: LifecycleObject): ObjectOwner | undefined {
    const { name, namespace, uid } = obj.metadata;
    if (name === undefined || namespace === undefined || uid === undefined) return undefined;
    // No resourceVersion, nothing that changes with every write.
    const { labels, annotations } = obj.metadata;
    const metadata = { name, namespace, uid, ...(labels === undefined ? {} : { labels }), ...(annotations === undefined ? {} : { annotations }) };
    const { apiVersion, kind } = this.#options.owner;
    return { apiVersion, kind, metadata, spec: obj.spec as { params?: Record<string, unknown> } };
  }

  /** The CR as the objects' renders see it (their docs say so), with okt's finalizer; undefined: none of its objects are made. */
  #objectOwner(obj: LifecycleObject): ObjectOwner | undefined {
    // Without okt's finalizer (a CR whose sidecar okt refuses) its deletion would not wait to delete them: none are made.
    if (!(obj.metadata.finalizers ?? []).includes(LIFECYCLE_FINALIZER)) return undefined;
    return this.renderedAs(obj);
  }

  /** The metrics' counts of applies and objects let go of, when there are metrics. */
  #counts(): { counts?: ObjectCounts } {
    const { metrics } = this.#options;
    if (metrics === undefined) return {};
    const graph = this.#options.model.graph.name;
    return {
      counts: {
        applied: (kind, outcome) => metrics.objectApplies.labels(graph, kind, outcome).inc(),
        letGo: (entry, outcome) => metrics.objectPrunes.labels(graph, entry.kind, outcome).inc(),
      },
    };
  }
}
