// The CR's inventory (status.objects) against what its node wants: what to record before any
// create, what to apply (a render changed since its last apply, or never applied), what to prune,
// and the inventory once all that is done. Pure.
import { createHash } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { canonicalJson } from '../../../graph/canonical-json.ts';
import { objectName, objectsAt, sameObject, type Graph, type GraphObject, type ObjectDeletionPolicy, type RenderedObject } from '../../../graph/index.ts';
import type { InventoryEntry } from '../../../kube/lifecycle-resource.ts';

/** The hash of a rendered object as it would be applied: the same render is not applied again. */
export function renderHash(object: KubernetesObject): string {
  return createHash('sha256').update(canonicalJson(object)).digest('hex').slice(0, 32);
}

/** One object the node wants, with its inventory entry once applied (`fields` kept from the inventory while its render is unchanged, else set by its apply). */
export interface WantedObject {
  readonly rendered: RenderedObject;
  readonly entry: InventoryEntry;
}

export interface ObjectsPlan {
  /** The inventory to write before anything is applied: the stored one and every wanted object it lacks (no hash yet); undefined: it lacks none. */
  readonly record: InventoryEntry[] | undefined;
  /** To apply, in order of declaration: never applied, or rendered otherwise since. */
  readonly apply: readonly WantedObject[];
  /** Applied already as rendered now: applied again only if someone deleted or changed them since. */
  readonly unchanged: readonly WantedObject[];
  /** No longer wanted, latest recorded first: pruned only once every apply succeeded. */
  readonly prune: readonly InventoryEntry[];
  /** The inventory once every apply and prune is done: the wanted objects in order of declaration (those applied still to get their `fields`). */
  readonly settled: InventoryEntry[];
}

/** The inventory entry of a declared object named `name`, not applied yet (no hash). */
function declaredEntry(declaration: GraphObject, name: string): InventoryEntry {
  return { id: declaration.id, apiVersion: declaration.apiVersion, kind: declaration.kind, name, ...(declaration.deletion === 'Keep' ? { deletion: 'Keep' as const } : {}) };
}

export function planObjects(inventory: readonly InventoryEntry[], rendered: readonly RenderedObject[]): ObjectsPlan {
  const recorded = (entry: InventoryEntry) => inventory.find((known) => sameObject(known, entry));
  const wanted = rendered.map((r): WantedObject => {
    const entry: InventoryEntry = { ...declaredEntry(r.declaration, r.object.metadata?.name ?? ''), hash: renderHash(r.object) };
    const known = recorded(entry);
    return { rendered: r, entry: known !== undefined && known.hash === entry.hash && known.fields !== undefined ? { ...entry, fields: known.fields } : entry };
  });
  const missing = wanted.filter((w) => recorded(w.entry) === undefined).map(({ entry: { hash: _hash, fields: _fields, ...unapplied } }) => unapplied);
  return {
    record: missing.length === 0 ? undefined : [...inventory, ...missing],
    apply: wanted.filter((w) => recorded(w.entry)?.hash !== w.entry.hash),
    unchanged: wanted.filter((w) => recorded(w.entry)?.hash === w.entry.hash),
    prune: inventory.filter((known) => !wanted.some((w) => sameObject(known, w.entry))).reverse(),
    settled: wanted.map((w) => w.entry),
  };
}

/** What becomes of a CR's objects once it stands at `node` of `graph`: kept (still wanted there), pruned (let go of: a Keep one disowned), made. */
export interface ObjectsOutlook {
  readonly kept: readonly InventoryEntry[];
  readonly pruned: readonly InventoryEntry[];
  readonly made: readonly InventoryEntry[];
}

/**
 * The inventory of the CR named `owner` against what `node` of `graph` declares, without rendering
 * (names are static): what the operator's next apply there keeps, prunes and makes. A kept object is
 * applied again only if its render changed, which only running the render says.
 */
export function objectsOutlook(graph: Graph, owner: string, node: string, inventory: readonly InventoryEntry[]): ObjectsOutlook {
  const wanted = (graph.has(node) ? objectsAt(graph, node) : []).map((declaration) => declaredEntry(declaration, objectName(owner, declaration.name)));
  const recorded = (entry: InventoryEntry) => inventory.some((known) => sameObject(known, entry));
  return {
    kept: inventory.filter((known) => wanted.some((w) => sameObject(known, w))),
    pruned: inventory.filter((known) => !wanted.some((w) => sameObject(known, w))).map((known) => {
      const { deletion: _recorded, ...entry } = known;
      return deletionPolicy(graph, known) === 'Keep' ? { ...entry, deletion: 'Keep' as const } : entry;
    }),
    made: wanted.filter((w) => !recorded(w)),
  };
}

/** What letting go of an inventory entry does: as `graph` declares its id, else (a revision dropped the declaration) as it was declared when recorded. */
export function deletionPolicy(graph: Graph, entry: InventoryEntry): ObjectDeletionPolicy {
  return graph.objects.find((o) => o.id === entry.id)?.deletion ?? entry.deletion ?? 'Delete';
}
