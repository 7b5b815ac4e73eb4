/** Which kind of object a request addresses: `group` '' is the core API (/api/v1). */
export interface ResourceRef {
  readonly group: string;
  readonly version: string;
  readonly plural: string;
  /** Defaults to true. */
  readonly namespaced?: boolean;
}

export const LEASES: ResourceRef = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases' };
export const NAMESPACES: ResourceRef = { group: '', version: 'v1', plural: 'namespaces', namespaced: false };

export interface ObjectMeta {
  name?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  managedFields?: unknown[];
  [field: string]: unknown;
}

/** Any API object: the transport parses JSON and leaves the shape to the caller. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

export interface ObjectList<T extends KubeObject = KubeObject> {
  apiVersion?: string;
  kind?: string;
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: T[];
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
export interface WatchEvent<T extends KubeObject = KubeObject> {
  type: WatchEventType;
  object: T;
}

/** The store key of an object: `namespace/name`, or `name` for a cluster-scoped object (client-go's convention). */
export function objectKey(obj: KubeObject): string {
  const { namespace, name } = obj.metadata;
  if (!name) throw new Error('objectKey: metadata.name is missing');
  return namespace ? `${namespace}/${name}` : name;
}

/** Splits a store key back into namespace and name (namespace '' when cluster-scoped). */
export function splitKey(key: string): { namespace: string; name: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { namespace: '', name: key } : { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
}

/** The API path of a collection or of one object (with an optional subresource). */
export function resourcePath(res: ResourceRef, namespace?: string, name?: string, subresource?: string): string {
  const base = res.group === '' ? `/api/${res.version}` : `/apis/${res.group}/${res.version}`;
  const namespaced = res.namespaced ?? true;
  if (namespaced && name !== undefined && !namespace) {
    throw new Error(`resourcePath: namespace is required for namespaced resource ${res.plural} (name ${name})`);
  }
  let path = base;
  if (namespaced && namespace) path += `/namespaces/${encodeURIComponent(namespace)}`;
  path += `/${res.plural}`;
  if (name !== undefined) path += `/${encodeURIComponent(name)}`;
  if (subresource !== undefined) path += `/${subresource}`;
  return path;
}

/**
 * The resource of a namespaced kind, its plural guessed as Kubernetes' own UnsafeGuessKindToResource
 * does (`Ingress` -> `ingresses`, `NetworkPolicy` -> `networkpolicies`, `ConfigMap` -> `configmaps`):
 * right for the built-in kinds; a CRD whose plural is not the guess is not addressed right (no discovery).
 */
export function kindResource(apiVersion: string, kind: string): ResourceRef {
  const slash = apiVersion.indexOf('/');
  const lower = kind.toLowerCase();
  const plural = lower.endsWith('s') ? `${lower}es` : lower.endsWith('y') ? `${lower.slice(0, -1)}ies` : `${lower}s`;
  return slash < 0 ? { group: '', version: apiVersion, plural } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1), plural };
}
