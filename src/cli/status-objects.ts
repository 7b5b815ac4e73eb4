// The objects a CR's inventory (status.objects) names, as `okt status` and `okt ui` show them: each
// read (one GET) and judged as the operator judges readiness (kstatus, or the declaration's `ready`
// when the graph's module is at hand), a reason when not ready.
import type { KubernetesObject } from '@kubernetes/client-node';
import { objectReadiness } from '../controller/lifecycle/objects/readiness.ts';
import type { Graph } from '../graph/index.ts';
import { inventoryEntrySchema, type InventoryEntry } from '../kube/lifecycle-resource.ts';
import { isKubeApiError, isNotFound, kindResource, type KubeTransport } from '../kube/transport/index.ts';

/** Ready, in progress, failed (kstatus's words), deleting (a finalizer holds it), missing (not found), or unknown (it could not be read). */
export type ObjectReadinessWord = 'Ready' | 'InProgress' | 'Failed' | 'Deleting' | 'Missing' | 'Unknown';

export interface ObjectView {
  id: string;
  kind: string;
  name: string;
  readiness: ObjectReadinessWord;
  /** Why it is not ready; empty when it is. */
  message: string;
}

/** The inventory of a status as read from the API server (unchecked): its well-formed entries. */
export function inventoryOf(status: unknown): InventoryEntry[] {
  const objects = (status as { objects?: unknown } | null | undefined)?.objects;
  if (!Array.isArray(objects)) return [];
  return objects.flatMap((entry) => {
    const parsed = inventoryEntrySchema.safeParse(entry);
    return parsed.success ? [parsed.data] : [];
  });
}

/** What is known of an object before it is read. */
export function unreadObject(entry: InventoryEntry): ObjectView {
  return { id: entry.id, kind: entry.kind, name: entry.name, readiness: 'Unknown', message: 'not read yet' };
}

/** One object judged from its live state (undefined: not found). Pure. */
export function objectView(graph: Graph | undefined, entry: InventoryEntry, live: KubernetesObject | undefined): ObjectView {
  const base = { id: entry.id, kind: entry.kind, name: entry.name };
  if (live === undefined) return { ...base, readiness: 'Missing', message: 'not found' };
  if (live.metadata?.deletionTimestamp !== undefined) {
    const finalizers = live.metadata.finalizers ?? [];
    return { ...base, readiness: 'Deleting', message: finalizers.length === 0 ? 'being deleted' : `being deleted, held by its finalizers: ${finalizers.join(', ')}` };
  }
  const declaration = graph?.objects.find((o) => o.id === entry.id);
  const verdict = objectReadiness(declaration ?? { ready: undefined }, live);
  if (verdict.kind === 'ready') return { ...base, readiness: 'Ready', message: '' };
  return { ...base, readiness: verdict.kind === 'failed' ? 'Failed' : 'InProgress', message: verdict.message };
}

/** Reads each object of the inventory (one GET each, all at once) and judges it; one that cannot be read says why. */
export async function readObjectViews(transport: KubeTransport, graph: Graph | undefined, namespace: string, entries: readonly InventoryEntry[]): Promise<ObjectView[]> {
  return Promise.all(
    entries.map(async (entry) => {
      try {
        return objectView(graph, entry, (await transport.get(kindResource(entry.apiVersion, entry.kind), namespace, entry.name)) as KubernetesObject);
      } catch (error) {
        if (isNotFound(error)) return objectView(graph, entry, undefined);
        const why = isKubeApiError(error) ? (error.status?.message ?? error.message) : error instanceof Error ? error.message : String(error);
        return { ...unreadObject(entry), message: `cannot be read: ${why}` };
      }
    }),
  );
}
