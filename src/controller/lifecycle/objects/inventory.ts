// The CR's inventory (status.objects) against what its node wants: what to record before any
// create, what to apply (a render changed since its last apply, or never applied), what to prune,
// and the inventory once all that is done. Pure.
import { createHash } from 'node:crypto';
import type { KubernetesObject } from '@kubernetes/client-node';
import { canonicalJson } from '../../../graph/canonical-json.ts';
import type { RenderedObject } from '../../../graph/index.ts';
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

/** One object: the same id, apiVersion, kind and name (a graph revision that renames it makes another). */
export function sameObject(a: InventoryEntry, b: InventoryEntry): boolean {
  return a.id === b.id && a.apiVersion === b.apiVersion && a.kind === b.kind && a.name === b.name;
}

export function planObjects(inventory: readonly InventoryEntry[], rendered: readonly RenderedObject[]): ObjectsPlan {
  const recorded = (entry: InventoryEntry) => inventory.find((known) => sameObject(known, entry));
  const wanted = rendered.map((r): WantedObject => {
    const entry: InventoryEntry = { id: r.declaration.id, apiVersion: r.declaration.apiVersion, kind: r.declaration.kind, name: r.object.metadata?.name ?? '', hash: renderHash(r.object) };
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
