// How `okt status` finds a lifecycle resource, its CRD and its graph in the cluster, the way kubectl does.
import type { KubeConfig, V1CustomResourceDefinition } from '@kubernetes/client-node';
import type { Graph } from '../graph/index.ts';
import { GRAPH_ANNOTATION, GRAPH_REVISIONS_ANNOTATION, publishedGraph } from '../kube/crd.ts';
import { bundledGraph, BUNDLED_GRAPHS } from './bundled.ts';
import { findCrd, readResource, type CrdMatch } from './cluster-crds.ts';
import type { CrdFinderFlags } from './crd-names.ts';
import { CliError, EXIT } from './errors.ts';
import { loadGraphFile } from './graph-module.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import { KubeTransport } from '../kube/transport/index.ts';
import { inventoryOf, readObjectViews, type ObjectView } from './status-objects.ts';
import type { LifecycleResource } from './status-view.ts';

/** The flags of `okt status`. */
export interface StatusFlags extends CrdFinderFlags {
  namespace?: string;
  version?: string;
  graph?: string;
  export?: string;
  html?: string;
}

/** The resource `[TYPE/]NAME` (in --namespace, else the context's namespace, else "default"), its graph, and the objects its inventory names. */
export async function readLifecycleResource(resource: string, flags: StatusFlags): Promise<{ graph: Graph; object: LifecycleResource; objects: ObjectView[] }> {
  // A --graph file that cannot be loaded fails before anything is asked of the cluster.
  const given = flags.graph === undefined ? undefined : (await loadGraphFile(flags.graph, { exportName: flags.export })).graph;
  const kc = loadKubeConfig();
  const namespace = flags.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  const [type, name] = resource.includes('/') ? splitTypeName(resource) : [undefined, resource];
  const crd = await findCrd(kc, flags, resourceMatch(kc, type, name, namespace));
  const object = await readResource(kc, crd, flags.version, namespace, name);
  const graph = given ?? graphFromCrd(crd, object);
  return { graph, object, objects: await readObjects(kc, graph, object) };
}

/** Each object the resource's inventory names, one GET each (the declaration's `ready` judges it when the graph's module was given). */
async function readObjects(kc: KubeConfig, graph: Graph, object: LifecycleResource): Promise<ObjectView[]> {
  const inventory = inventoryOf(object.status);
  if (inventory.length === 0) return [];
  let transport: KubeTransport;
  try {
    transport = await KubeTransport.fromKubeConfig(kc);
  } catch (error) {
    throw new CliError(EXIT.usage, `cannot use the kubeconfig: ${error instanceof Error ? error.message : String(error)}`, 'Check KUBECONFIG.');
  }
  try {
    return await readObjectViews(transport, graph, object.metadata.namespace ?? 'default', inventory);
  } finally {
    await transport.close();
  }
}

function splitTypeName(resource: string): [string, string] {
  const [type, name, ...rest] = resource.split('/');
  if (!type || !name || rest.length > 0) throw new CliError(EXIT.usage, `"${resource}" is neither NAME nor TYPE/NAME`);
  return [type.toLowerCase(), name];
}

/** Every way kubectl lets a person name a custom resource type. */
export function typeNames(crd: V1CustomResourceDefinition): string[] {
  const { names, group } = crd.spec;
  const base = [names.plural, names.singular ?? '', names.kind.toLowerCase(), ...(names.shortNames ?? [])].filter((n) => n !== '');
  return [...base, ...base.map((n) => `${n}.${group}`)];
}

/** The CRD of TYPE, or for a bare NAME the one okt CRD that has a resource of that name. */
function resourceMatch(kc: KubeConfig, type: string | undefined, name: string, namespace: string): CrdMatch {
  const ambiguous = { subject: `"${name}"`, choose: 'Say which one with TYPE/NAME, --kind/--group or --crd-name.' };
  if (type !== undefined) {
    return {
      wanted: `type "${type}"`,
      matches: (crd) => typeNames(crd).includes(type),
      // A short name two groups share: the one that has this resource settles it.
      narrow: async (crds) => {
        const found = await withResource(kc, crds, namespace, name);
        if (found.length === 0) throw new CliError(EXIT.failed, `${type}/${name}: not found in namespace "${namespace}"`);
        return found;
      },
      ambiguous,
    };
  }
  return {
    wanted: `annotation ${GRAPH_ANNOTATION}`,
    matches: (crd) => crd.metadata?.annotations?.[GRAPH_ANNOTATION] !== undefined,
    narrow: (crds) => withResource(kc, crds, namespace, name),
    none: new CliError(EXIT.failed, `no lifecycle resource named "${name}" in namespace "${namespace}"`, 'Name its type too (odb/NAME), or pass --namespace.'),
    ambiguous,
  };
}

async function withResource(kc: KubeConfig, crds: V1CustomResourceDefinition[], namespace: string, name: string): Promise<V1CustomResourceDefinition[]> {
  const found = await Promise.all(
    crds.map(async (crd) => {
      try {
        await readResource(kc, crd, undefined, namespace, name);
        return crd;
      } catch (error) {
        if (error instanceof CliError && error.exitCode === EXIT.failed) return undefined;
        throw error;
      }
    }),
  );
  return found.filter((crd) => crd !== undefined);
}

/**
 * The graph the resource is on, as its CRD publishes it: the revision in its status, else the CRD's own
 * (the view then says the two differ); a CRD from an okt that published no graph: the bundled graph it names.
 */
function graphFromCrd(crd: V1CustomResourceDefinition, object: LifecycleResource): Graph {
  const recorded = (object.status as { graphRevision?: unknown } | undefined)?.graphRevision;
  const published = (typeof recorded === 'string' ? readPublished(crd, recorded) : undefined) ?? readPublished(crd);
  if (published !== undefined) return published;
  const annotation = crd.metadata?.annotations?.[GRAPH_ANNOTATION];
  const bundled = annotation === undefined ? undefined : bundledGraph(annotation);
  if (bundled !== undefined) return bundled.graph;
  const said = annotation === undefined ? `has no ${GRAPH_ANNOTATION} annotation` : `publishes no graph, and names graph "${annotation}", which is not bundled with okt (${BUNDLED_GRAPHS.map((b) => b.graph.name).join(', ')})`;
  throw new CliError(EXIT.usage, `CRD ${crd.metadata?.name} ${said}`, 'Pass the graph with --graph FILE.');
}

function readPublished(crd: V1CustomResourceDefinition, revision?: string): Graph | undefined {
  try {
    return publishedGraph(crd.metadata?.annotations, revision);
  } catch (error) {
    throw noReadableGraph(crd, error);
  }
}

/** The CRD publishes graph revisions none of which can be read (`error`: why the first cannot). */
export function noReadableGraph(crd: V1CustomResourceDefinition, error: unknown): CliError {
  const reason = error instanceof Error ? error.message.split('\n', 1)[0] : String(error);
  return new CliError(EXIT.usage, `CRD ${crd.metadata?.name}: its ${GRAPH_REVISIONS_ANNOTATION} annotation holds no readable graph: ${reason}`, 'Apply the CRD again (okt crd FILE ... | kubectl apply -f -), or pass --graph FILE.');
}
