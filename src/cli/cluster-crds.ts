// How the commands that read a cluster (`okt status`, `okt graph check --against-cluster`) find a CRD
// and its custom resources: one finder, so that both take --crd-name, --kind and --group alike.
import {
  ApiException,
  ApiextensionsV1Api,
  CustomObjectsApi,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import type { CrdFinderFlags } from './crd-names.ts';
import { CliError, EXIT } from './errors.ts';
import type { LifecycleResource } from './status-view.ts';

/** What a command looks for when no flag names the CRD. */
export interface CrdMatch {
  /** What is looked for, for the message when nothing matches: `type "odb"`. */
  readonly wanted: string;
  readonly matches: (crd: V1CustomResourceDefinition) => boolean;
  /** Several CRDs match: keep those that settle it (it may throw to say why none does). */
  readonly narrow?: (crds: V1CustomResourceDefinition[]) => Promise<V1CustomResourceDefinition[]>;
  /** The error when none matches; default: no CRD with `wanted` in the cluster. */
  readonly none?: CliError;
  /** Several still match (or several match the flags): what is ambiguous, and how to say which one. */
  readonly ambiguous: { readonly subject: string; readonly choose: string };
}

/** The one CRD the flags name, else the one `match` finds; every other outcome is a CliError. */
export async function findCrd(kc: KubeConfig, flags: CrdFinderFlags, match: CrdMatch): Promise<V1CustomResourceDefinition> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  if (flags.crdName !== undefined) {
    const name = flags.crdName;
    return cluster(() => api.readCustomResourceDefinition({ name }), `CRD "${name}"`);
  }
  const all = (await cluster(() => api.listCustomResourceDefinition(), 'the CRDs')).items;
  const byFlags = flags.kind !== undefined || flags.group !== undefined;
  let candidates: V1CustomResourceDefinition[];
  if (byFlags) {
    candidates = all.filter(
      (crd) =>
        (flags.kind === undefined || crd.spec.names.kind.toLowerCase() === flags.kind.toLowerCase()) &&
        (flags.group === undefined || crd.spec.group === flags.group),
    );
  } else {
    candidates = all.filter(match.matches);
    if (candidates.length > 1 && match.narrow !== undefined) candidates = await match.narrow(candidates);
  }
  if (candidates.length === 0) {
    if (!byFlags && match.none !== undefined) throw match.none;
    const wanted = byFlags ? [flags.kind && `kind ${flags.kind}`, flags.group && `group ${flags.group}`].filter(Boolean).join(' in ') : match.wanted;
    throw new CliError(EXIT.failed, `no CRD with ${wanted} in the cluster`, 'Apply it first: okt crd FILE ... | kubectl apply -f -');
  }
  if (candidates.length > 1) {
    const names = candidates.map((crd) => crd.metadata?.name).join(', ');
    throw new CliError(EXIT.usage, `${match.ambiguous.subject} is ambiguous: several CRDs match (${names})`, match.ambiguous.choose);
  }
  return candidates[0]!;
}

/** The version to read: `version` if the CRD serves it, else its storage version (else the first served). */
export function servedVersion(crd: V1CustomResourceDefinition, version?: string): string {
  const served = crd.spec.versions.filter((v) => v.served);
  const chosen = version ?? (served.find((v) => v.storage) ?? served[0])?.name;
  if (chosen === undefined || !served.some((v) => v.name === chosen)) {
    throw new CliError(EXIT.usage, `CRD ${crd.metadata?.name} serves no version ${version ?? ''}`.trim(), `It serves: ${served.map((v) => v.name).join(', ') || 'none'}.`);
  }
  return chosen;
}

export async function readResource(
  kc: KubeConfig,
  crd: V1CustomResourceDefinition,
  version: string | undefined,
  namespace: string,
  name: string,
): Promise<LifecycleResource> {
  const { group, names } = crd.spec;
  const chosen = servedVersion(crd, version);
  const api = kc.makeApiClient(CustomObjectsApi);
  return (await cluster(
    () => api.getNamespacedCustomObject({ group, version: chosen, namespace, plural: names.plural, name }),
    `${names.plural}.${group} "${name}" in namespace "${namespace}"`,
  )) as LifecycleResource;
}

/** A list request's page size: a cluster with many resources answers in pages, never in one huge body. */
const PAGE = 500;

/** Every resource of the CRD (in its storage version), in `namespace` or in all namespaces. */
export async function listResources(kc: KubeConfig, crd: V1CustomResourceDefinition, namespace: string | undefined): Promise<LifecycleResource[]> {
  const { group, names } = crd.spec;
  const version = servedVersion(crd);
  const api = kc.makeApiClient(CustomObjectsApi);
  const where = namespace === undefined ? 'in all namespaces' : `in namespace "${namespace}"`;
  const items: LifecycleResource[] = [];
  let next: string | undefined;
  do {
    const page = { group, version, plural: names.plural, limit: PAGE, ...(next === undefined ? {} : { _continue: next }) };
    const list = (await cluster(
      () => (namespace === undefined ? api.listClusterCustomObject(page) : api.listNamespacedCustomObject({ ...page, namespace })),
      `the ${names.plural}.${group} ${where}`,
    )) as { items: LifecycleResource[]; metadata?: { continue?: string } };
    items.push(...list.items);
    next = list.metadata?.continue || undefined;
  } while (next !== undefined);
  return items;
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
