import type { MigrationPolicy, Migrations, MigrationSource, RemovedNode } from './migrations.ts';
import { GraphDefinitionError, type GraphProblem } from './problems.ts';
import { graphRevision } from './revision.ts';
import { graphDataSchema, type GraphData, type MigrationsData, type NodeData } from './schema.ts';
import { formatDuration } from './duration.ts';
import { resolveGraph, type CancelPolicy, type Deadline, type ResolvedNode, type RetryPolicy } from './validate.ts';
import { checkParams, crdParamsSchema, type JsonSchema, type ParamsChangePolicy, type ParamsCheck, type ParamsDeclaration } from './params.ts';
import type { z } from 'zod';
import { objectData, type GraphObject, type ObjectDeclaration } from './objects.ts';

export interface GraphNode<S extends string = string> {
  readonly name: S;
  readonly description: string;
  /** Effective priority order: triggers first, then the declared children; the last is the default. */
  readonly children: readonly S[];
  readonly defaultChild: S | undefined;
  readonly triggers: readonly S[];
  readonly isLeaf: boolean;
  /** The entry node and the leaves have no action; every other node has exactly one. */
  readonly hasAction: boolean;
  /** How a failed action (one that raised no event) is run again; undefined: it stalls the resource. */
  readonly retry: RetryPolicy | undefined;
  /** When the running action is cancelled instead of waited for: on deletion, on a change of spec.desiredState. */
  readonly cancellable: CancelPolicy;
  /**
   * The child deletion takes from here (`onDelete`, else the default child); undefined on a leaf, and on
   * the entry node unless it declares `onDelete` (a resource deleted there is released with nothing run).
   */
  readonly deletionChild: S | undefined;
  /** The names this node had in earlier revisions. */
  readonly formerly: readonly string[];
  /** How long a resource may stay here (counted from the transition that entered it), then the event `then` or a stall. */
  readonly deadline: Deadline<S> | undefined;
  /** The node's own parameters, as the CRD holds them (its action also gets the graph's). */
  readonly params: JsonSchema | undefined;
  /** What a change of the node's parameters does while a CR rests on it. */
  readonly onParamsChange: ParamsChangePolicy;
}

export interface Graph<S extends string = string> extends MigrationSource {
  readonly name: string;
  readonly description: string;
  readonly entry: S;
  readonly nodeNames: readonly S[];
  /** A hash of what the graph does (see graphRevision): recorded in the CRD, in each CR's status and in every CloudEvent. */
  readonly revision: string;
  /** How CRs of earlier revisions come to this one. */
  readonly migrations: Migrations;
  /** Former name -> the node of this revision that bears it now. */
  readonly formerNames: ReadonlyMap<string, S>;
  /** The earlier revisions still served (their CRs stay there under the Manual policy), newest first. */
  readonly previous: readonly Graph<string>[];
  /** The parameters every node's action gets, as the CRD holds them. */
  readonly params: JsonSchema | undefined;
  /** The Kubernetes objects the graph makes, in order of declaration (see objects.ts and renderObjects). */
  readonly objects: readonly GraphObject<S>[];
  node(name: S): GraphNode<S>;
  has(name: string): name is S;
  /** Plain, JSON-able data; loadGraph(graph.toData()) gives an equal graph (its objects without their functions, which stay code). */
  toData(): GraphData;
}

/** The union of a graph's state names: `StateOf<typeof databaseGraph>`. */
export type StateOf<G> = G extends Graph<infer S> ? S : never;

export interface NodeDefinition<S extends string> {
  /** Ordinary children in priority order; the last one is the default child. */
  readonly children?: readonly NoInfer<S>[];
  /** Debranching children (to an error manager, say): tried before every ordinary child. */
  readonly triggers?: readonly NoInfer<S>[];
  readonly description?: string;
  /** Optional, for documentation: must agree with the rule (false on the entry and leaves, true elsewhere). */
  readonly action?: boolean;
  /** Run a failed action again (one that raised no event): `attempts` runs in all, `backoffMs` (default 1000) before the second, doubling after (at most 5 minutes). */
  readonly retry?: { readonly attempts: number; readonly backoffMs?: number };
  /**
   * Cancel the running action instead of waiting for it: `true` when the resource is deleted or its
   * spec.desiredState moves to another node; `{ onDelete, onDesiredChange }` in only those cases. Default false.
   */
  readonly cancellable?: boolean | { readonly onDelete?: boolean; readonly onDesiredChange?: boolean };
  /** The child deletion goes to from this node (default: the default child; on the entry node, none: a resource deleted there is released with nothing run). */
  readonly onDelete?: NoInfer<S>;
  /** Names this node had in earlier revisions: their CRs migrate here, a running action keeps its operation id. */
  readonly formerly?: readonly string[];
  /**
   * How long a resource may stay on this node, its action running or resting: `after` ('500ms', '90s',
   * '10m', '1h30m', or milliseconds), counted from the transition that entered it. Then a running action
   * is cancelled, and the resource takes the event `then` (one of the node's children), or without one
   * stalls with the reason DeadlineExceeded.
   */
  readonly deadline?: { readonly after: string | number; readonly then?: NoInfer<S> };
  /** This node's own parameters (its action also gets the graph's): a zod object schema, e.g. z.object({ version: z.string() }). */
  readonly params?: ParamsDefinition;
  /**
   * A change of this node's parameters (its own and the graph's) while a CR rests on it: 'NextTransition'
   * (default) does nothing until the CR moves; 'Rerun' runs its action again, under a new operation id.
   */
  readonly onParamsChange?: ParamsChangePolicy;
}

/** Parameters as a graph declares them: a zod 4 object schema (of output P), or the JSON Schema (OpenAPI 3.0) it becomes. */
export type ParamsDefinition<P = unknown> = z.ZodType<P> | JsonSchema;

export interface GraphDefinition<S extends string, P = Record<string, unknown>> {
  readonly name: string;
  readonly entry: NoInfer<S>;
  readonly description?: string;
  readonly nodes: { readonly [K in S]: NodeDefinition<S> };
  /** How CRs of earlier revisions move here: `policy` (Automatic by default) and where removed nodes' CRs go. */
  readonly migrations?: {
    readonly policy?: MigrationPolicy;
    readonly removed?: { readonly [removed: string]: NoInfer<S> | { readonly refuse: string } };
  };
  /** Earlier revisions this one still serves (under the Manual policy their CRs stay there until asked to move). */
  readonly previous?: readonly Graph<string>[];
  /** The parameters every node's action gets from spec.params: a zod object schema, e.g. z.object({ replicas: z.number().int() }). */
  readonly params?: ParamsDefinition<P>;
  /**
   * The Kubernetes objects the graph makes, each rendered from the CR (its metadata, the graph's
   * params typed as `params` declares them, the node it stands at): for the graph's lifetime, a node's
   * (`during: 'Servicing'`) or a span's (`during: { from, until }`).
   */
  readonly objects?: readonly ObjectDeclaration<NoInfer<S>, NoInfer<P>>[];
}

/**
 * Defines a graph in code. State names are inferred from the keys of `nodes` as a literal union, so a
 * misspelt child, entry, or later `desiredState` is a compile error. Throws GraphDefinitionError
 * listing every problem.
 */
export function defineGraph<const S extends string, P = Record<string, unknown>>(definition: GraphDefinition<S, P>): Graph<S> {
  return loadGraph(definition) as Graph<S>;
}

/** Loads a graph from plain data (JSON/YAML) through the zod schema. Throws GraphDefinitionError. */
export function loadGraph(data: unknown): Graph<string> {
  const parsed = graphDataSchema.safeParse(data);
  if (!parsed.success) {
    const name = typeof (data as { name?: unknown } | null)?.name === 'string' ? (data as { name: string }).name : undefined;
    const problems = parsed.error.issues.map((issue) => ({
      code: 'schema' as const,
      path: issue.path,
      message: `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`,
    }));
    throw new GraphDefinitionError(name, problems, parsed.error.issues);
  }
  const { previous, problems } = loadPrevious(parsed.data);
  const resolution = resolveGraph(parsed.data, previous.map((g) => ({ revision: g.revision, nodeNames: g.nodeNames })));
  const all = [...problems, ...(resolution.ok ? [] : resolution.problems)];
  if (!resolution.ok || all.length > 0) throw new GraphDefinitionError(parsed.data.name, all);
  return new ValidGraph(parsed.data, resolution.entry, resolution.nodes, previous, resolution.params, resolution.objects);
}

/** The earlier revisions a graph declares: Graphs (defineGraph) or their plain data, each valid and of the same name. */
function loadPrevious(data: GraphData): { previous: Graph<string>[]; problems: GraphProblem[] } {
  const previous: Graph<string>[] = [];
  const problems: GraphProblem[] = [];
  (data.previous ?? []).forEach((item, i) => {
    try {
      const graph = item instanceof ValidGraph ? item : loadGraph(isGraph(item) ? item.toData() : item);
      if (graph.name !== data.name) {
        problems.push({ code: 'previous-revision', path: ['previous', i], message: `previous[${i}]: is graph "${graph.name}", not an earlier revision of "${data.name}"` });
      } else if (previous.some((g) => g.revision === graph.revision)) {
        problems.push({ code: 'previous-revision', path: ['previous', i], message: `previous[${i}]: revision ${graph.revision} is listed twice` });
      } else previous.push(graph);
    } catch (error) {
      if (!(error instanceof GraphDefinitionError)) throw error;
      for (const p of error.problems) problems.push({ ...p, code: 'previous-revision', path: ['previous', i, ...p.path], message: `previous[${i}]: ${p.message}` });
    }
  });
  return { previous, problems };
}

/** A Graph by shape, not instanceof: a module may make it with another copy of okt (a package). */
export function isGraph(value: unknown): value is Graph {
  const v = value as Partial<Graph> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.name === 'string' &&
    typeof v.entry === 'string' &&
    Array.isArray(v.nodeNames) &&
    typeof v.node === 'function' &&
    typeof v.toData === 'function'
  );
}

/** The onDelete a definition states: the deletion child unless it is the default child anyway (on the entry node, any: it has none undeclared). */
export function declaredOnDelete<S extends string>(node: GraphNode<S>): S | undefined {
  const isEntry = !node.hasAction && !node.isLeaf;
  return isEntry || node.deletionChild !== node.defaultChild ? node.deletionChild : undefined;
}

/**
 * The integer form every hot path works on: node i is `names[i]`; its children, in effective
 * priority order, are `children[childStart[i] .. childStart[i+1])` (the last one is the default).
 */
export interface GraphTable {
  readonly names: readonly string[];
  readonly ids: ReadonlyMap<string, number>;
  readonly entry: number;
  readonly childStart: Int32Array;
  readonly children: Int32Array;
}

const tables = new WeakMap<Graph<string>, GraphTable>();

/** The precomputed integer table of a graph made by defineGraph/loadGraph. */
export function graphTable(graph: Graph<string>): GraphTable {
  const table = tables.get(graph);
  if (table === undefined) throw new TypeError('not a graph made by defineGraph or loadGraph');
  return table;
}

class ValidGraph implements Graph<string> {
  readonly name: string;
  readonly description: string;
  readonly entry: string;
  readonly nodeNames: readonly string[];
  readonly revision: string;
  readonly migrations: Migrations;
  readonly formerNames: ReadonlyMap<string, string>;
  readonly previous: readonly Graph<string>[];
  readonly params: JsonSchema | undefined;
  readonly objects: readonly GraphObject[];
  readonly #nodes: ReadonlyMap<string, GraphNode<string>>;

  constructor(data: GraphData, entry: string, resolved: readonly ResolvedNode[], previous: readonly Graph<string>[], params: ParamsDeclaration | undefined, objects: readonly GraphObject[]) {
    this.name = data.name;
    this.description = data.description ?? '';
    this.entry = entry;
    this.nodeNames = Object.freeze(resolved.map((n) => n.name));
    this.objects = Object.freeze(objects.map((o) => Object.freeze({ ...o, lifetime: Object.freeze(o.lifetime) })));
    this.revision = graphRevision(data.name, entry, resolved, params, this.objects.map(objectData));
    this.params = params?.schema;
    this.migrations = Object.freeze({
      policy: data.migrations?.policy ?? 'Automatic',
      removed: new Map<string, RemovedNode>(Object.entries(data.migrations?.removed ?? {})),
    });
    this.formerNames = new Map(resolved.flatMap((n) => n.formerly.map((former): [string, string] => [former, n.name])));
    this.previous = Object.freeze([...previous]);
    this.#nodes = new Map(
      resolved.map((n) => {
        const isLeaf = n.children.length === 0;
        const node: GraphNode<string> = Object.freeze({
          name: n.name,
          description: n.description,
          children: Object.freeze([...n.children]),
          defaultChild: n.children[n.children.length - 1],
          triggers: Object.freeze([...n.triggers]),
          isLeaf,
          hasAction: !isLeaf && n.name !== entry,
          retry: n.retry === undefined ? undefined : Object.freeze({ ...n.retry }),
          cancellable: Object.freeze({ ...n.cancellable }),
          deletionChild: n.deletionChild,
          formerly: Object.freeze([...n.formerly]),
          deadline: n.deadline === undefined ? undefined : Object.freeze({ ...n.deadline }),
          params: n.params?.schema,
          onParamsChange: n.onParamsChange,
        });
        return [n.name, node];
      }),
    );
    tables.set(this, buildTable(this.nodeNames, entry, resolved));
    declaredParams.set(this, { graph: params, nodes: new Map(resolved.map((n) => [n.name, n.params])) });
    Object.freeze(this);
  }

  node(name: string): GraphNode<string> {
    const node = this.#nodes.get(name);
    if (node === undefined) throw new RangeError(`graph "${this.name}" has no node "${name}"`);
    return node;
  }

  has(name: string): name is string {
    return this.#nodes.has(name);
  }

  toData(): GraphData {
    const nodes = this.nodeNames.map((name): NodeData => {
      const node = this.node(name);
      const data: { -readonly [K in keyof NodeData]: NodeData[K] } = { name };
      if (node.description !== '') data.description = node.description;
      if (node.triggers.length > 0) data.triggers = [...node.triggers];
      if (!node.isLeaf) data.children = node.children.slice(node.triggers.length);
      if (node.retry !== undefined) data.retry = { ...node.retry };
      const { onDelete: cancelOnDelete, onDesiredChange } = node.cancellable;
      if (cancelOnDelete && onDesiredChange) data.cancellable = true;
      else if (cancelOnDelete) data.cancellable = { onDelete: true };
      else if (onDesiredChange) data.cancellable = { onDesiredChange: true };
      const onDelete = declaredOnDelete(node);
      if (onDelete !== undefined) data.onDelete = onDelete;
      if (node.formerly.length > 0) data.formerly = [...node.formerly];
      if (node.deadline !== undefined) {
        data.deadline = { after: formatDuration(node.deadline.afterMs), ...(node.deadline.then === undefined ? {} : { then: node.deadline.then }) };
      }
      if (node.params !== undefined) data.params = node.params;
      if (node.onParamsChange !== 'NextTransition') data.onParamsChange = node.onParamsChange;
      return data;
    });
    const out: { -readonly [K in keyof GraphData]: GraphData[K] } = { name: this.name, entry: this.entry, nodes };
    if (this.description !== '') out.description = this.description;
    if (this.params !== undefined) out.params = this.params;
    if (this.objects.length > 0) out.objects = this.objects.map(objectData);
    const migrations: { -readonly [K in keyof MigrationsData]: MigrationsData[K] } = {};
    if (this.migrations.policy !== 'Automatic') migrations.policy = this.migrations.policy;
    if (this.migrations.removed.size > 0) migrations.removed = Object.fromEntries(this.migrations.removed);
    if (Object.keys(migrations).length > 0) out.migrations = migrations;
    if (this.previous.length > 0) out.previous = this.previous.map((g) => g.toData());
    return out;
  }
}

/** The parameter declarations of a graph made by defineGraph/loadGraph, with the validators its data form leaves out. */
const declaredParams = new WeakMap<Graph<string>, { graph: ParamsDeclaration | undefined; nodes: ReadonlyMap<string, ParamsDeclaration | undefined> }>();

function paramsDeclarations(graph: Graph<string>) {
  const declared = declaredParams.get(graph);
  if (declared === undefined) throw new TypeError('not a graph made by defineGraph or loadGraph');
  return declared;
}

/**
 * The parameters the action of `node` gets from a CR's spec.params (the graph's and the node's own),
 * checked by their zod schemas, defaults filled in; undefined when neither declares any.
 */
export function nodeParams(graph: Graph<string>, node: string, given: Record<string, unknown> | undefined): ParamsCheck | undefined {
  const declared = paramsDeclarations(graph);
  return checkParams(declared.graph, declared.nodes.get(node), given);
}

/** Per node declaring any, the parameters of its own it declares without a default: its action cannot start without them. */
export function requiredNodeParams(graph: Graph<string>): ReadonlyMap<string, readonly string[]> {
  const required = new Map<string, readonly string[]>();
  for (const [node, declaration] of paramsDeclarations(graph).nodes) {
    const fields = (declaration?.schema.required as string[] | undefined) ?? [];
    if (fields.length > 0) required.set(node, fields);
  }
  return required;
}

/** The graph's own parameters (not a node's) from a CR's spec.params, checked, defaults filled in; undefined when the graph declares none. */
export function graphParams(graph: Graph<string>, given: Record<string, unknown> | undefined): ParamsCheck | undefined {
  return checkParams(paramsDeclarations(graph).graph, undefined, given);
}

/** The schema of the CRD's spec.params: every parameter the graph and its nodes declare; undefined when none does. */
export function paramsSchema(graph: Graph<string>): JsonSchema | undefined {
  const declared = paramsDeclarations(graph);
  return crdParamsSchema({ params: declared.graph }, [...declared.nodes.values()].map((params) => ({ params })));
}

function buildTable(names: readonly string[], entry: string, resolved: readonly ResolvedNode[]): GraphTable {
  const ids = new Map(names.map((name, i) => [name, i]));
  const childStart = new Int32Array(names.length + 1);
  const children = new Int32Array(resolved.reduce((sum, n) => sum + n.children.length, 0));
  let at = 0;
  resolved.forEach((node, i) => {
    childStart[i] = at;
    for (const child of node.children) children[at++] = ids.get(child) ?? -1;
  });
  childStart[names.length] = at;
  return Object.freeze({ names, ids, entry: ids.get(entry) ?? -1, childStart, children });
}
