// The objects okt made, watched: one informer per kind the graph declares, selected by okt's graph
// label (and, for a shard, the shard keys of its CRs), not a GET per CR. An event on one looks at its
// CR again; the reconcile reads the objects' readiness from these caches (`cached`), asks `drift`
// whether an object the inventory says is applied was deleted or had a field okt owns changed by
// someone, and `mayRepair` whether putting it back again is a fight (another manager writing it back
// each time).
import { createHash } from 'node:crypto';
import { canonicalJson } from '../../../graph/canonical-json.ts';
import { OBJECT_LABELS, type Graph } from '../../../graph/index.ts';
import { DEFAULT_FIELD_MANAGER, kindResource, type KubeObject, type KubeTransport } from '../../../kube/transport/index.ts';
import { Informer } from '../../informer.ts';
import type { Logger } from '../../logger.ts';
import { bothSelectors, shardSelector, type Shard } from '../shard.ts';

/** Re-applies of one object allowed within FIGHT_WINDOW_MS: the next one is a fight. */
export const FIGHT_REPAIRS = 3;
export const FIGHT_WINDOW_MS = 60_000;
/** How long a fought object is left as the other manager wrote it before okt puts it back again. */
export const FIGHT_BACKOFF_MS = 300_000;

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  time?: string;
  fieldsV1?: unknown;
}

/** Why an applied object is to be applied again: gone, or a field okt owns taken by `manager` (undefined: the inventory has no record of okt's fields in it, as one an earlier okt wrote). */
export type Drift = { readonly kind: 'deleted' } | { readonly kind: 'changed'; readonly manager: string | undefined };

/** An object as the cache holds it (or as okt's last apply returned it, which the cache has not seen yet): `unseen` while the cache has not synced. */
export type Cached = { readonly kind: 'unseen' } | { readonly kind: 'absent' } | { readonly kind: 'live'; readonly object: KubeObject };

/** A fight: the object is left alone until `until`, `manager` writing what okt owns back each time. */
export interface Fight {
  readonly manager: string | undefined;
  readonly until: number;
}

export interface OwnedObjectsOptions {
  graph: Graph;
  transport: KubeTransport;
  /** The CR kind's apiVersion and kind: only objects this kind controls wake a CR. */
  owner: { apiVersion: string; kind: string };
  /** Looks at the CR `namespace/name` again. */
  enqueue(key: string): void;
  namespace?: string;
  /** Only the objects of this shard's CRs (they carry their CR's shard key label). */
  shard?: Shard;
  watchIdleTimeoutMs?: number;
  logger?: Logger;
  now?: () => number;
}

export class OwnedObjects {
  /** One per kind the graph's declarations name, by `apiVersion kind`. */
  readonly #informers = new Map<string, Informer>();
  readonly #options: OwnedObjectsOptions;
  /** What okt's last apply of each object returned, kept until the cache reaches it: the cache's copy is older than okt's write until then. */
  readonly #applied = new Map<string, KubeObject>();
  readonly #repairs = new Map<string, number[]>();
  readonly #fights = new Map<string, Fight>();
  readonly #wakeups = new Set<NodeJS.Timeout>();

  constructor(options: OwnedObjectsOptions) {
    this.#options = options;
    // The kinds of every revision served: a CR the Manual policy keeps on an earlier one has its objects too.
    for (const { apiVersion, kind } of [options.graph, ...options.graph.previous].flatMap((g) => g.objects)) {
      const id = kindId(apiVersion, kind);
      if (this.#informers.has(id)) continue;
      const informer = new Informer({
        transport: options.transport,
        resource: kindResource(apiVersion, kind),
        labelSelector: graphSelector(options.graph.name, options.shard),
        // Only okt's entry of managedFields keeps its fields (compared with the inventory's record); the others' names and times say who took a field.
        transform: keepOwnFields,
        ...(options.namespace === undefined ? {} : { namespace: options.namespace }),
        ...(options.watchIdleTimeoutMs === undefined ? {} : { watchIdleTimeoutMs: options.watchIdleTimeoutMs }),
        ...(options.logger === undefined ? {} : { logger: options.logger }),
      });
      const wake = (obj: KubeObject) => {
        const key = this.#ownerKey(obj);
        if (key !== undefined) options.enqueue(key);
      };
      const seen = (obj: KubeObject) => {
        const id = objectId(apiVersion, kind, obj.metadata.namespace ?? '', obj.metadata.name ?? '');
        const written = this.#applied.get(id)?.metadata.resourceVersion;
        if (written !== undefined && !behind(obj.metadata.resourceVersion ?? '', written)) this.#applied.delete(id);
        wake(obj);
      };
      informer.addHandler({
        onAdd: seen,
        onChange: seen,
        onDelete: (obj) => {
          this.#applied.delete(objectId(apiVersion, kind, obj.metadata.namespace ?? '', obj.metadata.name ?? ''));
          wake(obj);
        },
      });
      this.#informers.set(id, informer);
    }
  }

  /** The caches the manager starts, waits for and stops. */
  get informers(): Informer[] {
    return [...this.#informers.values()];
  }

  /** Remembers okt's apply of an object (what it returned): the cache's copy is older until it reaches that write. */
  applied(apiVersion: string, kind: string, object: KubeObject): void {
    const { namespace = '', name = '' } = object.metadata;
    this.#applied.set(objectId(apiVersion, kind, namespace, name), keepOwnFields(object));
  }

  /**
   * The object as the cache holds it; while the cache has not yet seen okt's last apply of it, as
   * that apply returned it (the API server's object then, status included): judged at once after
   * the apply, not a watch event later.
   */
  cached(apiVersion: string, kind: string, namespace: string, name: string): Cached {
    const informer = this.#informers.get(kindId(apiVersion, kind));
    if (informer === undefined || !informer.hasSynced) return { kind: 'unseen' };
    const id = objectId(apiVersion, kind, namespace, name);
    const written = this.#applied.get(id);
    if (written !== undefined) {
      if (behind(informer.resourceVersion, written.metadata.resourceVersion ?? '')) return { kind: 'live', object: written };
      this.#applied.delete(id);
    }
    const object = informer.store.get(`${namespace}/${name}`);
    return object === undefined ? { kind: 'absent' } : { kind: 'live', object };
  }

  /**
   * Whether an object the inventory says is applied must be applied again: the cache lacks it
   * (someone deleted it), or okt's fields in it are not `fields`, those the inventory recorded of
   * okt's last apply (ownFieldsHash). Undefined: it is as okt left it (or as its last apply returned
   * it, which the cache has not seen yet), or the cache has not synced.
   */
  drift(apiVersion: string, kind: string, namespace: string, name: string, fields: string | undefined): Drift | undefined {
    const cached = this.cached(apiVersion, kind, namespace, name);
    if (cached.kind === 'unseen') return undefined;
    if (cached.kind === 'absent') return { kind: 'deleted' };
    // Someone changed what okt does not own (a status, a label of theirs): nothing to put back.
    if (fields !== undefined && fields === ownFieldsHash(cached.object)) return undefined;
    return { kind: 'changed', manager: fields === undefined ? undefined : lastOtherManager(cached.object) };
  }

  /**
   * Whether okt may put the object back now: not while a fight holds it; a repair that makes
   * FIGHT_REPAIRS within FIGHT_WINDOW_MS starts one (the CR is looked at again when it ends).
   */
  mayRepair(crKey: string, apiVersion: string, kind: string, namespace: string, name: string, drift: Drift): Fight | undefined {
    const id = objectId(apiVersion, kind, namespace, name);
    const now = (this.#options.now ?? Date.now)();
    const fight = this.#fights.get(id);
    if (fight !== undefined && fight.until > now) return fight;
    this.#fights.delete(id);
    // No record of okt's fields (an inventory an earlier okt wrote): applying once records them, no repair of someone's change.
    if (drift.kind === 'changed' && drift.manager === undefined) return undefined;
    const recent = (this.#repairs.get(id) ?? []).filter((at) => at > now - FIGHT_WINDOW_MS);
    if (recent.length < FIGHT_REPAIRS) {
      this.#repairs.set(id, [...recent, now]);
      return undefined;
    }
    this.#repairs.delete(id);
    const started: Fight = { manager: drift.kind === 'changed' ? drift.manager : undefined, until: now + FIGHT_BACKOFF_MS };
    this.#fights.set(id, started);
    const wakeup = setTimeout(() => {
      this.#wakeups.delete(wakeup);
      this.#options.enqueue(crKey);
    }, FIGHT_BACKOFF_MS).unref();
    this.#wakeups.add(wakeup);
    return started;
  }

  /** Cancels the looks a fight's end would ask for: the controller is being closed. */
  close(): void {
    for (const wakeup of this.#wakeups) clearTimeout(wakeup);
    this.#wakeups.clear();
  }

  /** The CR that controls the object (its controller owner reference of okt's CR kind), as `namespace/name`. */
  #ownerKey(obj: KubeObject): string | undefined {
    const { apiVersion, kind } = this.#options.owner;
    const refs = (obj.metadata.ownerReferences ?? []) as { apiVersion?: string; kind?: string; name?: string; controller?: boolean }[];
    const ref = refs.find((r) => r.controller === true && r.apiVersion === apiVersion && r.kind === kind);
    return ref?.name === undefined ? undefined : `${obj.metadata.namespace ?? ''}/${ref.name}`;
  }
}

/** The objects of the graph, and of the shard's CRs only when sharded: the API server filters. */
function graphSelector(graph: string, shard: Shard | undefined): string {
  const ofGraph = `${OBJECT_LABELS.graph}=${graph}`;
  return shard === undefined ? ofGraph : bothSelectors(ofGraph, shardSelector(shard));
}

function kindId(apiVersion: string, kind: string): string {
  return `${apiVersion} ${kind}`;
}

function objectId(apiVersion: string, kind: string, namespace: string, name: string): string {
  return `${apiVersion} ${kind} ${namespace}/${name}`;
}

function entriesOf(obj: KubeObject): ManagedFieldsEntry[] {
  return ((obj.metadata as { managedFields?: ManagedFieldsEntry[] }).managedFields ?? []);
}

function isOwn(entry: ManagedFieldsEntry): boolean {
  return entry.manager === DEFAULT_FIELD_MANAGER && entry.operation === 'Apply';
}

/** The cache's transform: managedFields keep okt's entry whole and the others' manager, operation and time only. */
function keepOwnFields(obj: KubeObject): KubeObject {
  const managedFields = entriesOf(obj).map((entry) => (isOwn(entry) ? entry : { manager: entry.manager, operation: entry.operation, time: entry.time }));
  return { ...obj, metadata: { ...obj.metadata, managedFields } as KubeObject['metadata'] };
}

/**
 * The hash of the fields okt's apply owns in an object (its managedFields entry): the same after
 * every apply of one render, changed only when another manager takes one of them. The inventory
 * records it with each applied object, so a restarted operator compares it as the one before did.
 */
export function ownFieldsHash(obj: KubeObject): string {
  const own = entriesOf(obj).find(isOwn);
  return createHash('sha256').update(canonicalJson(own?.fieldsV1 ?? null)).digest('hex').slice(0, 32);
}

/** The manager other than okt that wrote the object last (an Update takes the fields it changes from okt). */
function lastOtherManager(obj: KubeObject): string | undefined {
  const others = entriesOf(obj).filter((entry) => !isOwn(entry) && entry.manager !== undefined);
  others.sort((a, b) => (a.time ?? '').localeCompare(b.time ?? ''));
  return others.at(-1)?.manager;
}

/** Whether the cache (at `seen`) has not yet reached okt's write at `written`: resourceVersions are etcd revisions, compared as numbers when both are. */
function behind(seen: string, written: string): boolean {
  if (!/^\d+$/.test(seen) || !/^\d+$/.test(written)) return false;
  return BigInt(seen) < BigInt(written);
}
