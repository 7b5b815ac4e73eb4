// Reading the objects a node waits for: one GET per wanted object per look (no informer on the
// objects yet), done only while the node's action waits to start; judged by readiness.ts's rules.
import type { KubernetesObject } from '@kubernetes/client-node';
import { renderObjects, type Graph, type GraphObject, type ObjectOwner } from '../../../graph/index.ts';
import type { LifecycleStatus } from '../../../kube/lifecycle-resource.ts';
import { isNotFound, kindResource, type KubeTransport } from '../../../kube/transport/index.ts';
import { planObjects } from './inventory.ts';
import { inProgress, nodeReadiness, objectReadiness, type NodeReadiness, type ObjectRef, type Readiness } from './readiness.ts';

/** The verdict on a node's objects, and which objects they are (the objects.ready event names them). */
export interface NodeObjects {
  readonly readiness: NodeReadiness;
  readonly objects: readonly ObjectRef[];
}

/**
 * Reads the objects the CR's node (status.state) wants, one GET each, and judges them. One not applied
 * as rendered yet (its inventory hash differs) is in progress: its live state is not the render's.
 */
export async function readNodeReadiness(transport: KubeTransport, graph: Graph, owner: ObjectOwner, status: LifecycleStatus): Promise<NodeObjects> {
  const rendering = renderObjects(graph, owner, status.state);
  if (rendering.problems.length > 0) return { readiness: { kind: 'inProgress', object: 'the node\'s objects', message: rendering.problems.map((p) => p.message).join('; ') }, objects: [] };
  const unapplied = new Set(planObjects(status.objects ?? [], rendering.objects).apply.map((w) => w.rendered));
  const judged = [];
  for (const rendered of rendering.objects) {
    const { declaration, object } = rendered;
    const name = object.metadata?.name ?? '';
    const readiness = unapplied.has(rendered) ? inProgress('not applied yet') : await readOne(transport, owner.metadata.namespace, declaration, name);
    judged.push({ name: `${declaration.kind} ${name} (object "${declaration.id}")`, readiness, ref: { id: declaration.id, kind: declaration.kind, name } });
  }
  return { readiness: nodeReadiness(judged), objects: judged.map((j) => j.ref) };
}

async function readOne(transport: KubeTransport, namespace: string, declaration: GraphObject, name: string): Promise<Readiness> {
  try {
    return objectReadiness(declaration, (await transport.get(kindResource(declaration.apiVersion, declaration.kind), namespace, name)) as KubernetesObject);
  } catch (error) {
    if (isNotFound(error)) return inProgress('not found');
    throw error;
  }
}
