// What a CR's objects are at a node: the graph's render functions called for every declaration
// whose lifetime holds that node, what they return checked against the declaration, and okt's
// labels and owner reference stamped on. Pure: no API call (applying them is the operator's part).
import type { KubernetesObject, V1OwnerReference } from '@kubernetes/client-node';
import { graphParams, type Graph } from './graph.ts';
import { livesAt, objectName, type GraphObject, type OwnerMetadata } from './objects.ts';

/** The labels okt puts on every object it makes: the inventory selects by them. */
export const OBJECT_LABELS = {
  /** The uid of the CR that owns it. */
  ownerUid: 'okt.dev/owner-uid',
  /** The declaration's id. */
  objectId: 'okt.dev/object-id',
  /** The graph's name. */
  graph: 'okt.dev/graph',
  /** The CR's shard key (0-255, from its uid), copied from the CR's own label when it has one: a shard of operators caches only its CRs' objects. */
  shardKey: 'okt.dev/shard-key',
} as const;

/** The CR the objects belong to, as the API returns it (only what rendering reads). */
export interface ObjectOwner {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: OwnerMetadata;
  readonly spec?: { readonly params?: Record<string, unknown> };
}

/** One object to exist while the CR is at the node: its declaration and the object, labelled and owned. */
export interface RenderedObject {
  readonly declaration: GraphObject;
  readonly object: KubernetesObject;
}

/** Why an object could not be rendered: its declaration's id (undefined: the CR's spec.params) and what is wrong. */
export interface ObjectRenderProblem {
  readonly id: string | undefined;
  readonly message: string;
}

export interface ObjectRendering {
  /** In order of declaration; only the declarations that rendered without a problem. */
  readonly objects: readonly RenderedObject[];
  readonly problems: readonly ObjectRenderProblem[];
}

/** The declarations whose lifetime holds `node`, in order of declaration. */
export function objectsAt(graph: Graph<string>, node: string): GraphObject[] {
  graph.node(node); // an unknown node is the caller's mistake: a RangeError naming it
  return graph.objects.filter((object) => livesAt(object.lifetime, node));
}

/**
 * Whether the graph makes objects at `node`. A node the graph lacks (one of an earlier revision, where
 * a CR still stands until it migrates) makes none: an operator applies only its own graph's.
 */
export function makesObjectsAt(graph: Graph<string>, node: string): boolean {
  return graph.has(node) && objectsAt(graph, node).length > 0;
}

/**
 * The objects a CR should have at node `at`, every problem at once: a render that throws or returns
 * what its declaration does not say (another apiVersion, kind or name, a namespace not the CR's, a
 * controller other than the CR), no render function (a graph loaded from data), or spec.params the
 * graph's params refuse (then nothing is rendered).
 */
export function renderObjects(graph: Graph<string>, owner: ObjectOwner, at: string): ObjectRendering {
  const declarations = objectsAt(graph, at);
  if (declarations.length === 0) return { objects: [], problems: [] };
  const checked = graphParams(graph, owner.spec?.params);
  if (checked !== undefined && !checked.ok) {
    return { objects: [], problems: checked.problems.map((p) => ({ id: undefined, message: `${p.field}: ${p.reason}` })) };
  }
  const params = checked?.params ?? {};
  const objects: RenderedObject[] = [];
  const problems: ObjectRenderProblem[] = [];
  for (const declaration of declarations) {
    const result = renderOne(graph, declaration, owner, at, params);
    if (typeof result === 'string') problems.push({ id: declaration.id, message: `object "${declaration.id}": ${result}` });
    else objects.push({ declaration, object: result });
  }
  return { objects, problems };
}

/** The object, labelled and owned; or what is wrong with what the render returned. */
function renderOne(graph: Graph<string>, declaration: GraphObject, owner: ObjectOwner, at: string, params: Record<string, unknown>): KubernetesObject | string {
  if (declaration.render === undefined) return 'has no render function (a graph loaded from data: the functions stay in its module)';
  const { name: ownerName, namespace, uid } = owner.metadata;
  const name = objectName(ownerName, declaration.name);
  let returned: unknown;
  try {
    // Copies: a render that changes the CR's metadata or its parameters changes no other render.
    returned = declaration.render({ metadata: structuredClone(owner.metadata), params: structuredClone(params), node: at, name, namespace });
  } catch (error) {
    return `render threw: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (typeof returned !== 'object' || returned === null || Array.isArray(returned)) return 'render returned no object';
  let object: KubernetesObject;
  try {
    // Plain data, never the render's own value: what it shares with other calls stays untouched.
    object = structuredClone(returned) as KubernetesObject;
  } catch (error) {
    return `render returned what is not plain data (${error instanceof Error ? error.message : String(error)})`;
  }
  const wrong: string[] = [];
  if (object.apiVersion !== declaration.apiVersion) wrong.push(`apiVersion is ${JSON.stringify(object.apiVersion)}, declared "${declaration.apiVersion}"`);
  if (object.kind !== declaration.kind) wrong.push(`kind is ${JSON.stringify(object.kind)}, declared "${declaration.kind}"`);
  const metadata = object.metadata ?? {};
  if (metadata.name !== undefined && metadata.name !== name) wrong.push(`metadata.name is "${metadata.name}", declared "${name}" (leave it out to get it)`);
  if (metadata.namespace !== undefined && metadata.namespace !== namespace) wrong.push(`metadata.namespace is "${metadata.namespace}", not the CR's "${namespace}" (leave it out to get it)`);
  const controller = (metadata.ownerReferences ?? []).find((ref) => ref.controller === true);
  if (controller !== undefined) wrong.push(`metadata.ownerReferences names a controller (${controller.kind} "${controller.name}"): the CR is its controller`);
  if (wrong.length > 0) return wrong.join('; ');
  const shardKey = owner.metadata.labels?.[OBJECT_LABELS.shardKey];
  // No blockOwnerDeletion: okt orders deletion itself (its finalizer), and setting it needs a permission on the CR's finalizers.
  const ownerReference: V1OwnerReference = { apiVersion: owner.apiVersion, kind: owner.kind, name: ownerName, uid, controller: true };
  object.metadata = {
    ...metadata,
    name,
    namespace,
    // okt's labels win over the render's: the inventory relies on them.
    labels: {
      ...metadata.labels,
      [OBJECT_LABELS.ownerUid]: uid,
      [OBJECT_LABELS.objectId]: declaration.id,
      [OBJECT_LABELS.graph]: graph.name,
      ...(shardKey === undefined ? {} : { [OBJECT_LABELS.shardKey]: shardKey }),
    },
    ownerReferences: [...(metadata.ownerReferences ?? []), ownerReference],
  };
  return object;
}

/** The name of the Service port that reaches okt's sidecar: the container port `withOktSidecar` adds is named so. */
export const SIDECAR_PORT_NAME = 'okt-sidecar';

/**
 * The URL of a CR's sidecar as the graph makes it reachable: the graph's own Service (declared for
 * the graph's lifetime, apiVersion v1) whose port is named SIDECAR_PORT_NAME, rendered for the CR:
 * `http://<its name>.<the CR's namespace>.svc:<that port>`. Host and namespace come from the
 * declaration and the CR's metadata, never from its spec, so a CR cannot point it elsewhere.
 * Undefined when the graph has no such Service or it does not render (its problems are said when
 * the objects are applied); several such Services: the first in declaration order.
 */
export function sidecarServiceUrl(graph: Graph<string>, owner: ObjectOwner): string | undefined {
  const declarations = graph.objects.filter((object) => object.lifetime.kind === 'graph' && object.apiVersion === 'v1' && object.kind === 'Service');
  if (declarations.length === 0) return undefined;
  const checked = graphParams(graph, owner.spec?.params);
  if (checked !== undefined && !checked.ok) return undefined;
  for (const declaration of declarations) {
    const service = renderOne(graph, declaration, owner, graph.entry, checked?.params ?? {});
    if (typeof service === 'string') continue;
    const ports = (service as { spec?: { ports?: { name?: string; port?: number }[] } }).spec?.ports ?? [];
    const port = ports.find((p) => p.name === SIDECAR_PORT_NAME)?.port;
    if (typeof port === 'number') return `http://${service.metadata!.name}.${owner.metadata.namespace}.svc:${port}`;
  }
  return undefined;
}
