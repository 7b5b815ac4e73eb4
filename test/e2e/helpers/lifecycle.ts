import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { databaseGraph } from '../../../graphs/database.ts';
import { generateCrd } from '../../../src/kube/crd.ts';
import { startOperator, type LifecycleResourceRef, type RunningOperator } from '../../../src/controller/lifecycle/index.ts';
import { createLogger } from '../../../src/controller/index.ts';
import type { Graph } from '../../../src/graph/index.ts';
import type { LifecycleStatus } from '../../../src/kube/lifecycle-resource.ts';
import type { StatusFormat } from '../../../src/kube/status-format.ts';
import { startNoopSidecar as startNoopSidecarFor, type NoopSidecar } from '../../../sidecar/noop.ts';
import { applyCrd, type CrdManifest } from './crd.ts';
import { createNamespace, httpStatusOf, mergePatch } from './cluster.ts';
import { waitFor } from './wait.ts';

export const DATABASES = { group: 'okt.dev', version: 'v1alpha1', plural: 'databases', kind: 'Database' } as const;
export const databaseCrd = databaseCrdIn(DATABASES);

/** The database CRD under `resource`, its status in `statusFormat` (default: okt's default, full). */
export function databaseCrdIn(resource: LifecycleResourceRef, statusFormat?: StatusFormat): CrdManifest {
  return generateCrd(databaseGraph, { ...resource, shortNames: ['odb'], ...(statusFormat === undefined ? {} : { statusFormat }) }) as unknown as CrdManifest;
}

/** A lifecycle CR as the API server returns it (of any graph's kind). */
export interface LifecycleObject {
  metadata: { name: string; namespace: string; uid: string; resourceVersion: string; generation: number; finalizers?: string[]; deletionTimestamp?: string; labels?: Record<string, string> };
  spec: { desiredState: string; [field: string]: unknown };
  status?: LifecycleStatus;
}

export type DatabaseObject = LifecycleObject;

export async function installDatabaseCrd(kc: KubeConfig): Promise<void> {
  await applyCrd(kc, databaseCrd);
}

/** The no-op sidecar (sidecar/noop.ts) for the database graph: every node rests until spec.desiredState moves it on. */
export function startNoopSidecar(options: { hang?: string[]; port?: number; token?: string; maxActiveOperations?: number } = {}) {
  return startNoopSidecarFor({ graph: databaseGraph, ...options });
}

/** create, get, patchSpec and remove for the CRs of one lifecycle resource. */
export function lifecycleObjects(kc: KubeConfig, resource: LifecycleResourceRef) {
  const api = kc.makeApiClient(CustomObjectsApi);
  const ref = { group: resource.group, version: resource.version, plural: resource.plural };
  return {
    create: (namespace: string, name: string, spec: Record<string, unknown>, labels?: Record<string, string>) =>
      api.createNamespacedCustomObject({ ...ref, namespace, body: { apiVersion: `${resource.group}/${resource.version}`, kind: resource.kind, metadata: { name, ...(labels ? { labels } : {}) }, spec } }) as Promise<LifecycleObject>,
    get: (namespace: string, name: string) => api.getNamespacedCustomObject({ ...ref, namespace, name }) as Promise<LifecycleObject>,
    /** With `resourceVersion`: only if the CR is still as read (409 otherwise). */
    patchSpec: (namespace: string, name: string, spec: Record<string, unknown>, resourceVersion?: string) =>
      api.patchNamespacedCustomObject({ ...ref, namespace, name, body: { ...(resourceVersion === undefined ? {} : { metadata: { resourceVersion } }), spec } }, mergePatch) as Promise<LifecycleObject>,
    annotate: (namespace: string, name: string, annotations: Record<string, string>) =>
      api.patchNamespacedCustomObject({ ...ref, namespace, name, body: { metadata: { annotations } } }, mergePatch) as Promise<LifecycleObject>,
    remove: (namespace: string, name: string) => api.deleteNamespacedCustomObject({ ...ref, namespace, name }),
  };
}

export type LifecycleObjects = ReturnType<typeof lifecycleObjects>;

export function databases(kc: KubeConfig): LifecycleObjects {
  return lifecycleObjects(kc, DATABASES);
}

export function conditionOf(obj: LifecycleObject, type: string) {
  return obj.status?.conditions.find((c) => c.type === type);
}

/** Waits until `predicate` holds for the CR (read through the API server, not the operator's cache). */
export async function waitForObject(objects: LifecycleObjects, namespace: string, name: string, what: string, predicate: (obj: LifecycleObject) => boolean, timeoutMs = 30_000) {
  let last: LifecycleObject | undefined;
  try {
    return await waitFor(`${namespace}/${name}: ${what}`, async () => {
      last = await objects.get(namespace, name);
      return predicate(last) ? last : undefined;
    }, timeoutMs, 50);
  } catch (error) {
    // Said on a time-out: where the CR was, so that a failure in CI needs no second run to understand.
    throw new Error(`${error instanceof Error ? error.message : String(error)}; last seen: ${describeObject(last)}`, { cause: error });
  }
}

/** A CR in one line: its spec, node, transition, operation and conditions. */
function describeObject(obj: LifecycleObject | undefined): string {
  if (obj === undefined) return 'nothing (never read)';
  const status = obj.status;
  const conditions = (status?.conditions ?? []).map((c) => `${c.type}=${c.status} ${c.reason}: ${c.message}`);
  const operation = status?.operation === undefined ? undefined : `${status.operation.id} ${status.operation.node} ${status.operation.phase}`;
  return JSON.stringify({ spec: obj.spec, state: status?.state, transition: status?.transition, operation, conditions }).slice(0, 2000);
}

/** Waits until the CR is gone (the API server answers 404). */
export function waitForObjectGone(objects: LifecycleObjects, namespace: string, name: string, timeoutMs = 30_000) {
  return waitFor(`${namespace}/${name} to be deleted`, async () => {
    try {
      await objects.get(namespace, name);
      return undefined;
    } catch (error) {
      if (httpStatusOf(error) === 404) return true;
      throw error;
    }
  }, timeoutMs, 50);
}

/** Waits until `predicate` holds for the database CR. */
export function waitForDatabase(kc: KubeConfig, namespace: string, name: string, what: string, predicate: (obj: DatabaseObject) => boolean, timeoutMs = 30_000) {
  return waitForObject(databases(kc), namespace, name, what, predicate, timeoutMs);
}

/** Waits until the database CR is gone. */
export function waitForGone(kc: KubeConfig, namespace: string, name: string, timeoutMs = 30_000) {
  return waitForObjectGone(databases(kc), namespace, name, timeoutMs);
}

/** An operator in this process for `graph`'s CRs in a fresh namespace, with a no-op sidecar (its `hang` nodes never end by themselves). */
export interface LocalOperator {
  namespace: string;
  sidecar: NoopSidecar;
  operator: RunningOperator;
  stop(): Promise<void>;
}

export async function startLocalOperator(
  kc: KubeConfig,
  options: { graph: Graph; resource: LifecycleResourceRef; namespacePrefix: string; hang?: string[]; maxActiveOperations?: number; statusFormat?: StatusFormat },
): Promise<LocalOperator> {
  const namespace = await createNamespace(kc, options.namespacePrefix);
  const sidecar = await startNoopSidecarFor({ graph: options.graph, ...(options.hang ? { hang: options.hang } : {}), ...(options.maxActiveOperations ? { maxActiveOperations: options.maxActiveOperations } : {}) });
  const operator = await startOperator({
    kubeConfig: kc,
    graph: options.graph,
    resource: options.resource,
    ...(options.statusFormat === undefined ? {} : { statusFormat: options.statusFormat }),
    namespace,
    sidecar: { url: sidecar.url, token: sidecar.token },
    logger: createLogger({ level: (process.env.OKT_TEST_LOG ?? 'silent') as 'silent' }),
  });
  return {
    namespace,
    sidecar,
    operator,
    async stop() {
      await operator.stop();
      await sidecar.close();
    },
  };
}
