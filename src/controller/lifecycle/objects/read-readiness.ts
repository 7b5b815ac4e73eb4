// Reading the objects a node waits for from the owned objects' caches (owned.ts), no API request:
// a change of one (its status included) wakes its CR, which judges them again by readiness.ts's rules.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { ObjectRendering } from '../../../graph/index.ts';
import type { InventoryEntry } from '../../../kube/lifecycle-resource.ts';
import { planObjects } from './inventory.ts';
import type { Cached } from './owned.ts';
import { inProgress, nodeReadiness, objectReadiness, type NodeReadiness, type ObjectRef } from './readiness.ts';

/** The verdict on a node's objects, and which objects they are (the objects.ready event names them). */
export interface NodeObjects {
  readonly readiness: NodeReadiness;
  readonly objects: readonly ObjectRef[];
}

/** Where the live objects are read: the owned objects' caches. */
export type CachedObject = (apiVersion: string, kind: string, namespace: string, name: string) => Cached;

/**
 * Judges the objects of the CR's node, `rendering` being their render there and `inventory` the
 * CR's status.objects. One not applied as rendered yet (its inventory hash differs) is in progress:
 * its live state is not the render's; one okt applied that its cache has not seen yet is judged as the
 * apply returned it (owned.ts), so a look right after the apply judges it.
 */
export function readNodeReadiness(cached: CachedObject, namespace: string, rendering: ObjectRendering, inventory: readonly InventoryEntry[]): NodeObjects {
  if (rendering.problems.length > 0) return { readiness: { kind: 'inProgress', object: 'the node\'s objects', message: rendering.problems.map((p) => p.message).join('; ') }, objects: [] };
  const unapplied = new Set(planObjects(inventory, rendering.objects).apply.map((w) => w.rendered));
  const judged = rendering.objects.map((rendered) => {
    const { declaration, object } = rendered;
    const name = object.metadata?.name ?? '';
    const live = unapplied.has(rendered) ? undefined : cached(declaration.apiVersion, declaration.kind, namespace, name);
    const readiness = live === undefined ? inProgress('not applied yet')
      : live.kind === 'unseen' ? inProgress('okt\'s cache of its kind has not synced yet')
      : live.kind === 'absent' ? inProgress('not found')
      : objectReadiness(declaration, live.object as KubernetesObject);
    return { name: `${declaration.kind} ${name} (object "${declaration.id}")`, readiness, ref: { id: declaration.id, kind: declaration.kind, name } };
  });
  return { readiness: nodeReadiness(judged), objects: judged.map((j) => j.ref) };
}
