// The Kubernetes objects a graph makes: declared with the graph at one of three lifetimes (the
// graph's, a node's, a span's), each rendered from the CR by a function that stays code. Here: the
// declarations, their data form and the checks made when the graph is defined. Pure.
import type { KubernetesObject, V1ObjectMeta } from '@kubernetes/client-node';
import type { GraphProblem } from './problems.ts';
import { reach } from './reach.ts';
import type { GraphData, ObjectData } from './schema.ts';

/** What deleting the CR (or leaving the object's lifetime) does to the object: delete it, or keep it (a PVC with data). */
export type ObjectDeletionPolicy = 'Delete' | 'Keep';

/** A node's lifetime (the object exists while the CR is at it), or a span's: from entering `from` until leaving `until`. */
export type ObjectLifetime<S extends string = string> = S | { readonly from: S; readonly until: S };

/** What a render function gets: the CR, where it stands, and the name and namespace its object must have. */
export interface ObjectContext<S extends string = string, P = Record<string, unknown>> {
  /** The CR's metadata (name, namespace, uid, labels, annotations). */
  readonly metadata: OwnerMetadata;
  /** spec.params as the graph's `params` declare them: checked, defaults filled in; `{}` when the graph declares none. */
  readonly params: P;
  /** The node the CR stands at. */
  readonly node: S;
  /** The object's name: the CR's name, or `<CR name>-<declared name>`. */
  readonly name: string;
  /** The CR's namespace: the object's. */
  readonly namespace: string;
}

/** The CR's metadata a render sees. */
export type OwnerMetadata = Readonly<V1ObjectMeta> & { readonly name: string; readonly namespace: string; readonly uid: string };

/**
 * One object a graph makes. `render` returns it typed with @kubernetes/client-node's models
 * (`(cr): V1Deployment => ({...})`); metadata.name and metadata.namespace may be left out (okt sets
 * them), and when set must be the declared name and the CR's namespace.
 */
export interface ObjectDeclaration<S extends string = string, P = Record<string, unknown>> {
  /** Stable and unique in the graph: it names the object in the CR's inventory (a label value). */
  readonly id: string;
  readonly apiVersion: string;
  readonly kind: string;
  /** The object is named `<CR name>-<name>`; without `name`, as the CR. Static, so the published graph says it and two declarations of one object are found when the graph is defined. */
  readonly name?: string;
  /** A node (the object exists while the CR is at it) or a span `{ from, until }`; absent: the graph's lifetime (as long as the CR). */
  readonly during?: ObjectLifetime<S>;
  /** 'Delete' (default) or 'Keep' (left in place when its lifetime ends or the CR goes, without the CR's owner reference, so it outlives the CR). */
  readonly deletion?: ObjectDeletionPolicy;
  /** Readiness of the live object, instead of kstatus's. A method, so that `ready(job: V1Job)` fits. */
  ready?(live: KubernetesObject): boolean;
  render(cr: ObjectContext<S, P>): KubernetesObject;
}

/** Where a declared object lives, resolved: a span lists its nodes (see resolveLifetime). */
export type ResolvedLifetime<S extends string = string> =
  | { readonly kind: 'graph' }
  | { readonly kind: 'node'; readonly node: S }
  | { readonly kind: 'span'; readonly from: S; readonly until: S; readonly nodes: readonly S[] };

/** An object declaration once the graph is defined. `render` and `ready` are undefined in a graph loaded from data. */
export interface GraphObject<S extends string = string> {
  readonly id: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string | undefined;
  readonly lifetime: ResolvedLifetime<S>;
  readonly deletion: ObjectDeletionPolicy;
  /** Typed loosely here (any node, any params): a Graph<S> stays a Graph<string>. */
  readonly render: ((cr: ObjectContext) => KubernetesObject) | undefined;
  readonly ready: ((live: KubernetesObject) => boolean) | undefined;
}

/**
 * The built-in kinds that are cluster-scoped, by API group ('' is the core group). A graph's objects
 * live in the CR's namespace, so none of these may be declared. A kind of another group (a CRD's) is
 * taken as namespaced: its scope is its CRD's to say, which only the cluster knows.
 */
export const CLUSTER_SCOPED_KINDS: Readonly<Record<string, readonly string[]>> = {
  '': ['Namespace', 'Node', 'PersistentVolume', 'ComponentStatus'],
  'admissionregistration.k8s.io': ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding'],
  'apiextensions.k8s.io': ['CustomResourceDefinition'],
  'apiregistration.k8s.io': ['APIService'],
  'authentication.k8s.io': ['TokenReview', 'SelfSubjectReview'],
  'authorization.k8s.io': ['SubjectAccessReview', 'SelfSubjectAccessReview', 'SelfSubjectRulesReview'],
  'certificates.k8s.io': ['CertificateSigningRequest', 'ClusterTrustBundle'],
  'flowcontrol.apiserver.k8s.io': ['FlowSchema', 'PriorityLevelConfiguration'],
  'internal.apiserver.k8s.io': ['StorageVersion'],
  'networking.k8s.io': ['IngressClass', 'IPAddress', 'ServiceCIDR'],
  'node.k8s.io': ['RuntimeClass'],
  'rbac.authorization.k8s.io': ['ClusterRole', 'ClusterRoleBinding'],
  'resource.k8s.io': ['DeviceClass', 'ResourceSlice'],
  'scheduling.k8s.io': ['PriorityClass'],
  'storage.k8s.io': ['StorageClass', 'CSIDriver', 'CSINode', 'VolumeAttachment', 'VolumeAttributesClass'],
  'storagemigration.k8s.io': ['StorageVersionMigration'],
};

/** `v1`, `apps/v1`, `batch/v1`, `example.com/v1beta2`: an optional DNS subdomain group, then a version. */
const API_VERSION = /^(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?v[1-9][0-9]*(?:(?:alpha|beta)[1-9][0-9]*)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;
/** A DNS label: what a name suffix must be (the name is `<CR name>-<suffix>`). */
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** A label value: what an id must be, since it labels the object. */
const LABEL_VALUE = /^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
const MAX_LABEL = 63;

/** The API group of an apiVersion: '' for the core group (`v1`). */
export function apiGroup(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/**
 * One object to the API server: the same id, API group, kind and name (a declaration's name suffix,
 * or an inventory entry's full name). Another version of the group is the same object; another name
 * or kind is another one (a graph revision that changes them makes the new one and prunes the old).
 */
export function sameObject(a: ObjectIdentity, b: ObjectIdentity): boolean {
  return a.id === b.id && apiGroup(a.apiVersion) === apiGroup(b.apiVersion) && a.kind === b.kind && a.name === b.name;
}

/** What sameObject compares. */
export interface ObjectIdentity {
  readonly id: string;
  readonly apiVersion: string;
  readonly kind: string;
  readonly name?: string | undefined;
}

/** The name an object declared `name` gets for a CR named `owner`. */
export function objectName(owner: string, name: string | undefined): string {
  return name === undefined ? owner : `${owner}-${name}`;
}

type Report = (code: GraphProblem['code'], node: string | undefined, path: PropertyKey[], message: string) => void;

/**
 * The graph's object declarations, each checked (every problem reported): its id (a label value,
 * unique), apiVersion and kind (well formed, not a cluster-scoped built-in kind), name (a DNS label;
 * no two declarations of one group, kind and name), lifetime (known nodes; a span's end reachable from
 * its start) and functions. `index`: node name -> index; `edges`: each node's children's indices.
 */
export function resolveObjects(data: GraphData, index: ReadonlyMap<string, number>, edges: readonly (readonly number[])[], report: Report): GraphObject[] {
  const objects = data.objects ?? [];
  if (objects.length > 0 && (data.name.length > MAX_LABEL || !LABEL_VALUE.test(data.name))) {
    report('invalid-object', undefined, ['name'], `name "${data.name}": a graph that declares objects labels them with its name, so it must be a label value (at most ${MAX_LABEL} letters, digits, "-", "_" or ".", starting and ending with a letter or digit)`);
  }
  const parents = data.nodes.map((): number[] => []);
  edges.forEach((targets, from) => targets.forEach((to) => parents[to]?.push(from)));
  const ids = new Set<string>();
  const identities = new Map<string, string>();
  return objects.map((object, i): GraphObject => {
    const where = (...rest: PropertyKey[]) => ['objects', i, ...rest];
    const owner = `object "${object.id}"`;
    if (object.id === '' || object.id.length > MAX_LABEL || !LABEL_VALUE.test(object.id)) {
      report('invalid-object', undefined, where('id'), `objects[${i}]: id "${object.id}" is not a label value (1-${MAX_LABEL} letters, digits, "-", "_" or ".", starting and ending with a letter or digit); it labels the object`);
    } else if (ids.has(object.id)) report('duplicate-object-id', undefined, where('id'), `${owner}: id declared more than once (an id names one object in the CR's inventory)`);
    ids.add(object.id);
    if (!API_VERSION.test(object.apiVersion)) {
      report('invalid-object', undefined, where('apiVersion'), `${owner}: apiVersion "${object.apiVersion}" is not "v1" or "<group>/<version>" (apps/v1, batch/v1)`);
    }
    if (!KIND.test(object.kind)) report('invalid-object', undefined, where('kind'), `${owner}: kind "${object.kind}" is not a kind (CamelCase: Deployment, Service)`);
    const group = apiGroup(object.apiVersion);
    if (CLUSTER_SCOPED_KINDS[group]?.includes(object.kind)) {
      report('cluster-scoped-object', undefined, where('kind'), `${owner}: ${object.kind}${group === '' ? '' : `.${group}`} is cluster-scoped; a graph's objects live in the CR's namespace`);
    }
    if (object.name !== undefined && (object.name.length > MAX_LABEL || !DNS_LABEL.test(object.name))) {
      report('invalid-object', undefined, where('name'), `${owner}: name "${object.name}" is not a DNS label (1-${MAX_LABEL} lowercase letters, digits or "-", starting and ending with a letter or digit); the object is named "<CR name>-${object.name}"`);
    }
    const identity = JSON.stringify([group, object.kind, object.name ?? null]);
    const first = identities.get(identity);
    const shown = object.name === undefined ? 'named as the CR' : `named "<CR name>-${object.name}"`;
    if (first !== undefined) report('duplicate-object', undefined, where('name'), `${owner}: ${object.kind} ${shown} is also declared by object "${first}" (one object, two declarations)`);
    else identities.set(identity, object.id);
    const lifetime = resolveLifetime(data, object, index, edges, parents, {
      unknownNode: (path, message) => report('unknown-object-node', undefined, where('during', ...path), `${owner}: ${message}`),
      unreachable: (message) => report('unreachable-span', undefined, where('during'), `${owner}: ${message}`),
    });
    for (const fn of ['render', 'ready'] as const) {
      if (object[fn] !== undefined && typeof object[fn] !== 'function') report('invalid-object', undefined, where(fn), `${owner}: ${fn} is not a function`);
    }
    return {
      id: object.id,
      apiVersion: object.apiVersion,
      kind: object.kind,
      name: object.name,
      lifetime,
      deletion: object.deletion ?? 'Delete',
      render: typeof object.render === 'function' ? (object.render as GraphObject['render']) : undefined,
      ready: typeof object.ready === 'function' ? (object.ready as GraphObject['ready']) : undefined,
    };
  });
}

/**
 * A span is the nodes a CR can be at after entering `from` and before leaving `until` (reached from
 * `from` without passing `until`) from which `until` can still be reached: a CR that takes a way out
 * of it (to a node that cannot reach `until`) has left the span.
 */
function resolveLifetime(
  data: GraphData,
  object: ObjectData,
  index: ReadonlyMap<string, number>,
  edges: readonly (readonly number[])[],
  parents: readonly (readonly number[])[],
  { unknownNode, unreachable }: { unknownNode: (path: PropertyKey[], message: string) => void; unreachable: (message: string) => void },
): ResolvedLifetime {
  const during = object.during;
  if (during === undefined) return { kind: 'graph' };
  if (typeof during === 'string') {
    if (!index.has(during)) unknownNode([], `during "${during}" is not a node of the graph`);
    return { kind: 'node', node: during };
  }
  const from = index.get(during.from);
  const until = index.get(during.until);
  if (from === undefined) unknownNode(['from'], `during.from "${during.from}" is not a node of the graph`);
  if (until === undefined) unknownNode(['until'], `during.until "${during.until}" is not a node of the graph`);
  if (from === undefined || until === undefined) return { kind: 'span', from: during.from, until: during.until, nodes: [] };
  const after = reach([from], (i) => (i === until ? [] : (edges[i] ?? [])));
  if (!after.has(until)) unreachable(`during.until "${during.until}" is not reachable from during.from "${during.from}", so the span would never end`);
  const before = reach([until], (i) => parents[i] ?? []);
  const nodes = data.nodes.flatMap((node, i) => (after.has(i) && before.has(i) && index.get(node.name) === i ? [node.name] : []));
  return { kind: 'span', from: during.from, until: during.until, nodes };
}

/** Whether an object of this lifetime exists while the CR is at `node`. */
export function livesAt(lifetime: ResolvedLifetime, node: string): boolean {
  switch (lifetime.kind) {
    case 'graph':
      return true;
    case 'node':
      return lifetime.node === node;
    case 'span':
      return lifetime.nodes.includes(node);
  }
}

/** The declaration as plain data (its functions left out): what toData() and the CRD's published graph hold. */
export function objectData(object: GraphObject): ObjectData {
  const { lifetime } = object;
  return {
    id: object.id,
    apiVersion: object.apiVersion,
    kind: object.kind,
    ...(object.name === undefined ? {} : { name: object.name }),
    ...(lifetime.kind === 'graph' ? {} : { during: lifetime.kind === 'node' ? lifetime.node : { from: lifetime.from, until: lifetime.until } }),
    ...(object.deletion === 'Delete' ? {} : { deletion: object.deletion }),
  };
}

/** One line for people: `Job <cr>-backup (batch/v1) during Servicing`, `PersistentVolumeClaim <cr>-data (v1) for the graph, kept`. */
export function describeObject(object: ObjectData): string {
  const { during } = object;
  const lifetime = during === undefined ? 'for the graph' : typeof during === 'string' ? `during ${during}` : `from ${during.from} until ${during.until}`;
  return `${object.kind} ${objectName('<cr>', object.name)} (${object.apiVersion}) ${lifetime}${object.deletion === 'Keep' ? ', kept' : ''}`;
}
