// Letting go of objects okt made: those of deletion policy Delete are deleted; those of policy Keep
// lose the CR's owner reference (else the garbage collector would delete them with the CR) and stay.
// Used when a node's objects are no longer wanted, and for all of them at the end of the deletion path.
import type { Graph } from '../../../graph/index.ts';
import type { InventoryEntry } from '../../../kube/lifecycle-resource.ts';
import { deletionPolicy } from './inventory.ts';
import { isNotFound, kindResource, type KubeObject, type KubeTransport } from '../../../kube/transport/index.ts';

/** Where the objects live and whose they are. */
export interface ObjectsOwner {
  readonly namespace: string;
  readonly uid: string;
}

/** An object deleted that a finalizer still holds. */
export interface HeldObject {
  readonly entry: InventoryEntry;
  readonly finalizers: readonly string[];
}

/** What letting go of an object came to: counted by the metrics. */
export type LetGoOutcome = 'deleted' | 'held' | 'kept';

/**
 * Lets go of each entry in the order given. `awaitEach`: stops at the first object still there after
 * its deletion (a finalizer holds it) and returns it, the entries after it waiting; without it (a
 * prune), every deletion is asked for, a held object going once its finalizers are done. Undefined:
 * every one is gone or kept. `counted` hears of each object let go of (not of one found gone already).
 */
export async function letGo(
  transport: KubeTransport, graph: Graph, owner: ObjectsOwner, entries: readonly InventoryEntry[], awaitEach: boolean,
  counted?: (entry: InventoryEntry, outcome: LetGoOutcome) => void,
): Promise<HeldObject | undefined> {
  let held: HeldObject | undefined;
  for (const entry of entries) {
    const resource = kindResource(entry.apiVersion, entry.kind);
    if (deletionPolicy(graph, entry) === 'Keep') {
      if (await disown(transport, entry, owner)) counted?.(entry, 'kept');
      continue;
    }
    try {
      // Background, as kubectl deletes: the garbage collector deletes what the object owns (a Job's
      // Pods); a batch/v1 Job's own default would orphan them, and hold the Job until it had.
      const left = await transport.delete(resource, owner.namespace, entry.name, { propagationPolicy: 'Background' });
      const metadata = 'metadata' in left ? (left as KubeObject).metadata : undefined;
      if (metadata?.deletionTimestamp === undefined) {
        counted?.(entry, 'deleted');
        continue;
      }
      counted?.(entry, 'held');
      held ??= { entry, finalizers: metadata.finalizers ?? [] };
      if (awaitEach) return held;
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }
  return held;
}

/** The entries in reverse order of their declaration (an id no longer declared first): the order the deletion path's end deletes them in. */
export function reverseDeclarationOrder(graph: Graph, entries: readonly InventoryEntry[]): InventoryEntry[] {
  const rank = (entry: InventoryEntry) => {
    const declared = graph.objects.findIndex((o) => o.id === entry.id);
    return declared < 0 ? Number.POSITIVE_INFINITY : declared;
  };
  return [...entries].sort((a, b) => rank(b) - rank(a));
}

/**
 * Takes the CR's owner reference off a kept object (a merge patch replaces the list whole, so the
 * read's resourceVersion guards it). False: there was nothing to take off (gone, or disowned already).
 */
async function disown(transport: KubeTransport, entry: InventoryEntry, owner: ObjectsOwner): Promise<boolean> {
  const resource = kindResource(entry.apiVersion, entry.kind);
  let live: KubeObject;
  try {
    live = await transport.get(resource, owner.namespace, entry.name);
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
  const refs = (live.metadata.ownerReferences ?? []) as { uid?: string }[];
  if (!refs.some((ref) => ref.uid === owner.uid)) return false;
  await transport.patchMetadata(resource, owner.namespace, entry.name, { ownerReferences: refs.filter((ref) => ref.uid !== owner.uid) }, { resourceVersion: live.metadata.resourceVersion ?? '' });
  return true;
}
