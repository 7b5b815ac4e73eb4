// How `okt status` finds a lifecycle resource, its CRD and its graph in the cluster, the way kubectl does.
import {
  ApiException,
  ApiextensionsV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import type { Graph } from '../graph/index.ts';
import { GRAPH_ANNOTATION } from '../kube/crd.ts';
import { bundledGraph, BUNDLED_GRAPHS } from './bundled.ts';
import { CliError, EXIT } from './errors.ts';
import { loadGraphFile } from './graph-module.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import type { StatusFlags } from './status.ts';
import type { LifecycleResource } from './status-view.ts';

/** The resource `[TYPE/]NAME` (in --namespace, else the context's namespace, else "default") and its graph. */
export async function readLifecycleResource(resource: string, flags: StatusFlags): Promise<{ graph: Graph; object: LifecycleResource }> {
  const kc = loadKubeConfig();
  const namespace = flags.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  const [type, name] = resource.includes('/') ? splitTypeName(resource) : [undefined, resource];
  const crd = await findCrd(kc, { ...flags, type, name, namespace });
  const graph = await graphFor(crd, flags);
  const object = await readResource(kc, crd, flags.version, namespace, name);
  return { graph, object };
}

function splitTypeName(resource: string): [string, string] {
  const [type, name, ...rest] = resource.split('/');
  if (!type || !name || rest.length > 0) throw new CliError(EXIT.usage, `"${resource}" is neither NAME nor TYPE/NAME`);
  return [type.toLowerCase(), name];
}

/** Every way kubectl lets a person name a custom resource type. */
function typeNames(crd: V1CustomResourceDefinition): string[] {
  const { names, group } = crd.spec;
  const base = [names.plural, names.singular ?? '', names.kind.toLowerCase(), ...(names.shortNames ?? [])].filter((n) => n !== '');
  return [...base, ...base.map((n) => `${n}.${group}`)];
}

async function findCrd(
  kc: KubeConfig,
  query: StatusFlags & { type: string | undefined; name: string; namespace: string },
): Promise<V1CustomResourceDefinition> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  if (query.crdName !== undefined) {
    const name = query.crdName;
    return cluster(() => api.readCustomResourceDefinition({ name }), `CRD "${name}"`);
  }
  const all = (await cluster(() => api.listCustomResourceDefinition(), 'the CRDs')).items;
  let candidates = all;
  let wanted: string;
  if (query.kind !== undefined || query.group !== undefined) {
    candidates = all.filter(
      (crd) =>
        (query.kind === undefined || crd.spec.names.kind.toLowerCase() === query.kind.toLowerCase()) &&
        (query.group === undefined || crd.spec.group === query.group),
    );
    wanted = [query.kind && `kind ${query.kind}`, query.group && `group ${query.group}`].filter(Boolean).join(' in ');
  } else if (query.type !== undefined) {
    const type = query.type;
    candidates = all.filter((crd) => typeNames(crd).includes(type));
    wanted = `type "${type}"`;
    // A short name two groups share: the one that has this resource settles it.
    if (candidates.length > 1) {
      candidates = await withResource(kc, candidates, query.namespace, query.name);
      if (candidates.length === 0) throw new CliError(EXIT.failed, `${type}/${query.name}: not found in namespace "${query.namespace}"`);
    }
  } else {
    // A bare NAME: look among okt's CRDs for the one type that has a resource of that name.
    candidates = all.filter((crd) => crd.metadata?.annotations?.[GRAPH_ANNOTATION] !== undefined);
    wanted = `annotation ${GRAPH_ANNOTATION}`;
    if (candidates.length > 1) candidates = await withResource(kc, candidates, query.namespace, query.name);
    if (candidates.length === 0) {
      throw new CliError(EXIT.failed, `no lifecycle resource named "${query.name}" in namespace "${query.namespace}"`, 'Name its type too (odb/NAME), or pass --namespace.');
    }
  }
  if (candidates.length === 0) throw new CliError(EXIT.failed, `no CRD with ${wanted} in the cluster`, 'Apply it first: okt crd FILE ... | kubectl apply -f -');
  if (candidates.length > 1) {
    const names = candidates.map((crd) => crd.metadata?.name).join(', ');
    throw new CliError(EXIT.usage, `"${query.name}" is ambiguous: several CRDs match (${names})`, 'Say which one with TYPE/NAME, --kind/--group or --crd-name.');
  }
  return candidates[0]!;
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

async function graphFor(crd: V1CustomResourceDefinition, flags: StatusFlags): Promise<Graph> {
  if (flags.graph !== undefined) return (await loadGraphFile(flags.graph, { exportName: flags.export })).graph;
  const annotation = crd.metadata?.annotations?.[GRAPH_ANNOTATION];
  const bundled = annotation === undefined ? undefined : bundledGraph(annotation);
  if (bundled !== undefined) return bundled.graph;
  const said = annotation === undefined ? `has no ${GRAPH_ANNOTATION} annotation` : `names graph "${annotation}", which is not bundled with okt (${BUNDLED_GRAPHS.map((b) => b.graph.name).join(', ')})`;
  throw new CliError(EXIT.usage, `CRD ${crd.metadata?.name} ${said}`, 'Pass the graph with --graph FILE.');
}

async function readResource(
  kc: KubeConfig,
  crd: V1CustomResourceDefinition,
  version: string | undefined,
  namespace: string,
  name: string,
): Promise<LifecycleResource> {
  const { group, names } = crd.spec;
  const served = crd.spec.versions.filter((v) => v.served);
  const chosen = version ?? (served.find((v) => v.storage) ?? served[0])?.name;
  if (chosen === undefined || !served.some((v) => v.name === chosen)) {
    throw new CliError(EXIT.usage, `CRD ${crd.metadata?.name} serves no version ${version ?? ''}`.trim(), `It serves: ${served.map((v) => v.name).join(', ') || 'none'}.`);
  }
  const api = kc.makeApiClient(CustomObjectsApi);
  const object = (await cluster(
    () => api.getNamespacedCustomObject({ group, version: chosen, namespace, plural: names.plural, name }),
    `${names.plural}.${group} "${name}" in namespace "${namespace}"`,
  )) as LifecycleResource;
  return object;
}

/** A call to the API server, its failures as CliErrors: not found (1), refused or unreachable (3). */
async function cluster<T>(call: () => Promise<T>, what: string): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof ApiException) {
      const code = (error as ApiException<unknown>).code;
      if (code === 404) throw new CliError(EXIT.failed, `${what}: not found`);
      const reason = serverMessage((error as ApiException<unknown>).body);
      if (code === 401 || code === 403) throw new CliError(EXIT.cluster, `${what}: access denied (HTTP ${code})${reason}`, 'Check the credentials of your kubeconfig context.');
      throw new CliError(EXIT.cluster, `${what}: the API server answered HTTP ${code}${reason}`);
    }
    const cause = (error as { cause?: { message?: string } }).cause?.message;
    const message = error instanceof Error ? error.message : String(error);
    throw new CliError(EXIT.cluster, `cannot reach the cluster for ${what}: ${message}${cause ? ` (${cause})` : ''}`, 'Check KUBECONFIG, or start a local control plane: npx okt cluster up.');
  }
}

function serverMessage(body: unknown): string {
  try {
    const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as { message?: unknown };
    return typeof parsed?.message === 'string' ? `: ${parsed.message}` : '';
  } catch {
    return '';
  }
}
