// What changed between two revisions of a graph, as plain JSON-able data: `okt graph diff` prints it,
// a pipeline can read its --json. Pure. Only what CRs live by is compared (as in the revision), plus
// the migration policy: descriptions and `formerly` lists are not, except as the renames they make.
import { declaredOnDelete, type Graph, type GraphNode } from './graph.ts';
import { fateOf, type MigrationPolicy, type NodeFate } from './migrations.ts';
import type { CancelPolicy, Deadline, RetryPolicy } from './validate.ts';
import { canonicalJson } from './canonical-json.ts';
import type { JsonSchema, ParamsChangePolicy } from './params.ts';
import { livesAt, objectData, sameObject, type GraphObject, type ObjectDeletionPolicy } from './objects.ts';
import type { ObjectData } from './schema.ts';

/** A value before and after; `null` where there is none (a leaf's default child, no retry policy). */
export interface ValueChange<T> {
  readonly before: T;
  readonly after: T;
}

/** A list of nodes (children, triggers) before and after; `reordered`: the nodes both lists hold come in another priority order. */
export interface NodeListChange extends ValueChange<readonly string[]> {
  readonly reordered: boolean;
}

/**
 * How one node of the new graph differs from its old self (the old node of the same name, else the
 * one renamed to it). Names of the old graph are given as the new graph calls them (through its
 * renames), so a pure rename changes nothing here. Only what changed is present.
 */
export interface NodeChange {
  /** The node's name in the new graph. */
  readonly node: string;
  /** The declared (ordinary) children, in priority order. */
  readonly children?: NodeListChange;
  readonly triggers?: NodeListChange;
  readonly defaultChild?: ValueChange<string | null>;
  readonly action?: ValueChange<boolean>;
  readonly retry?: ValueChange<RetryPolicy | null>;
  readonly cancellable?: ValueChange<CancelPolicy>;
  /** The declared deletion child; `null`: deletion follows the default child. */
  readonly onDelete?: ValueChange<string | null>;
  /** `null`: no deadline; `then` null: the deadline stalls. */
  readonly deadline?: ValueChange<{ readonly afterMs: number; readonly then: string | null } | null>;
  /** The node's own parameters (JSON Schema); `null`: none. */
  readonly params?: ValueChange<JsonSchema | null>;
  readonly onParamsChange?: ValueChange<ParamsChangePolicy>;
}

/** An old node that is no more: `fate` (fateOf the new graph) says where its CRs go: moved, refused or stranded. */
export interface RemovedNodeChange {
  readonly node: string;
  readonly fate: NodeFate;
}

export interface GraphDiff {
  readonly from: { readonly graph: string; readonly revision: string };
  readonly to: { readonly graph: string; readonly revision: string };
  /**
   * Same name, and nothing below changed: then the revisions are equal too. Equal revisions can still
   * differ in `policy`, which is no part of the revision.
   */
  readonly same: boolean;
  readonly nodes: {
    /** New nodes that are no old node's new name. */
    readonly added: readonly string[];
    readonly removed: readonly RemovedNodeChange[];
    readonly renamed: readonly { readonly from: string; readonly to: string }[];
  };
  readonly changed: readonly NodeChange[];
  /** The entry node (the old one named as the new graph calls it). */
  readonly entry?: ValueChange<string>;
  readonly policy?: ValueChange<MigrationPolicy>;
  /** The graph's own parameters (JSON Schema); `null`: none. */
  readonly params?: ValueChange<JsonSchema | null>;
  /** The objects the graph makes, as data (the old ones' nodes named as the new graph calls them). */
  readonly objects?: ValueChange<readonly ObjectData[]>;
  /** Per object declaration of either graph (the new ones first), what the old revision's CRs see of it once migrated; absent when neither declares any. */
  readonly objectFates?: readonly ObjectFate[];
}

/** CRs at `from` (a node of the old graph) that stand at `to` (of the new graph) once migrated. */
export interface NodeMove {
  readonly from: string;
  readonly to: string;
}

/**
 * What the CRs of the old revision see of one object declaration once migrated, by the node they
 * stood at: `kept` (the same object is declared at the node they land on: applied again only if its
 * render changed, which only running it says), `made` (declared there, and they did not have it),
 * `pruned` (they had it and the node they land on does not declare it, or declares another object
 * under its id: pruned once every apply there succeeded, a `Keep` one disowned). CRs at a node the
 * new graph has no place for (stranded, refused) are in none: their objects stay as they are.
 */
export interface ObjectFate {
  readonly id: string;
  /** The new graph's declaration; null: no longer declared. */
  readonly declared: ObjectData | null;
  /** What a prune does: the new declaration's policy, else the old one's (recorded in each CR's inventory). */
  readonly deletion: ObjectDeletionPolicy;
  readonly kept: readonly NodeMove[];
  readonly made: readonly NodeMove[];
  readonly pruned: readonly NodeMove[];
}

export function diffGraphs(old: Graph, next: Graph): GraphDiff {
  const fates = old.nodeNames.map((name) => ({ name, fate: fateOf(next, name) }));
  // Old name -> the name its node bears in `next`, for the nodes that live on (kept or renamed).
  const newName = new Map<string, string>();
  for (const { name, fate } of fates) if (fate.kind === 'kept' || fate.kind === 'renamed') newName.set(name, fate.node);
  const asNew = (name: string) => newName.get(name) ?? name;

  const renamed = fates.flatMap(({ name, fate }) => (fate.kind === 'renamed' ? [{ from: name, to: fate.node }] : []));
  const removed = fates.filter(({ fate }) => fate.kind !== 'kept' && fate.kind !== 'renamed').map(({ name, fate }) => ({ node: name, fate }));
  // The old self of a new node: the same name first, else the first old node renamed to it.
  const oldSelf = new Map<string, string>();
  for (const { from, to } of renamed) if (!oldSelf.has(to)) oldSelf.set(to, from);
  for (const name of old.nodeNames) if (next.has(name)) oldSelf.set(name, name);

  const added = next.nodeNames.filter((name) => !oldSelf.has(name));
  const changed = next.nodeNames.flatMap((name) => {
    const self = oldSelf.get(name);
    if (self === undefined) return [];
    const change = diffNode(old.node(self), next.node(name), asNew);
    return Object.keys(change).length > 1 ? [change] : []; // more than its name
  });
  const entry = changeOf(asNew(old.entry), next.entry);
  const policy = changeOf(old.migrations.policy, next.migrations.policy);
  const params = schemaChange(old.params, next.params);
  const objects = objectsChange(old, next, asNew);
  const objectFates = old.objects.length + next.objects.length === 0 ? undefined : objectFatesOf(old, next);
  const same =
    old.name === next.name && added.length + removed.length + renamed.length + changed.length === 0 && entry === undefined && policy === undefined && params === undefined && objects === undefined;
  return {
    from: { graph: old.name, revision: old.revision },
    to: { graph: next.name, revision: next.revision },
    same,
    nodes: { added, removed, renamed },
    changed,
    ...(entry === undefined ? {} : { entry }),
    ...(policy === undefined ? {} : { policy }),
    ...(params === undefined ? {} : { params }),
    ...(objects === undefined ? {} : { objects }),
    ...(objectFates === undefined ? {} : { objectFates }),
  };
}

/** Per declaration id, new ones first: where each old node's CRs land (fateOf), and whether the object lives there before and after. */
function objectFatesOf(old: Graph, next: Graph): ObjectFate[] {
  const moves = old.nodeNames.flatMap((from): NodeMove[] => {
    const fate = fateOf(next, from);
    return 'node' in fate ? [{ from, to: fate.node }] : [];
  });
  const ids = [...next.objects, ...old.objects].map((o) => o.id).filter((id, i, all) => all.indexOf(id) === i);
  return ids.map((id) => {
    const before = old.objects.find((o) => o.id === id);
    const after = next.objects.find((o) => o.id === id);
    const same = before !== undefined && after !== undefined && sameObject(before, after);
    const had = (move: NodeMove) => before !== undefined && livesAt(before.lifetime, move.from);
    const wants = (move: NodeMove) => after !== undefined && livesAt(after.lifetime, move.to);
    return {
      id,
      declared: after === undefined ? null : objectData(after),
      deletion: (after ?? (before as GraphObject)).deletion,
      kept: moves.filter((m) => same && had(m) && wants(m)),
      made: moves.filter((m) => wants(m) && !(same && had(m))),
      pruned: moves.filter((m) => had(m) && !(same && wants(m))),
    };
  });
}

/** Compared as the revision compares them (canonical JSON, in order of declaration), the old lifetimes renamed. */
function objectsChange(old: Graph, next: Graph, asNew: (name: string) => string): ValueChange<readonly ObjectData[]> | undefined {
  const before = old.objects.map((o) => {
    const data = objectData(o);
    const during = data.during;
    if (during === undefined) return data;
    return { ...data, during: typeof during === 'string' ? asNew(during) : { from: asNew(during.from), until: asNew(during.until) } };
  });
  const after = next.objects.map(objectData);
  return canonicalJson(before) === canonicalJson(after) ? undefined : { before, after };
}

function diffNode(old: GraphNode, next: GraphNode, asNew: (name: string) => string): NodeChange {
  const orNull = (name: string | undefined) => (name === undefined ? null : asNew(name));
  const fields = {
    children: listChange(declaredChildren(old).map(asNew), declaredChildren(next)),
    triggers: listChange(old.triggers.map(asNew), next.triggers),
    defaultChild: changeOf(orNull(old.defaultChild), next.defaultChild ?? null),
    action: changeOf(old.hasAction, next.hasAction),
    retry: changeOf(old.retry ?? null, next.retry ?? null),
    cancellable: changeOf(old.cancellable, next.cancellable),
    onDelete: changeOf(orNull(declaredOnDelete(old)), declaredOnDelete(next) ?? null),
    deadline: changeOf(deadlineOf(old.deadline, asNew), deadlineOf(next.deadline, (name) => name)),
    params: schemaChange(old.params, next.params),
    onParamsChange: changeOf(old.onParamsChange, next.onParamsChange),
  };
  return { node: next.name, ...Object.fromEntries(Object.entries(fields).filter(([, change]) => change !== undefined)) };
}

function deadlineOf(deadline: Deadline | undefined, asNew: (name: string) => string): { afterMs: number; then: string | null } | null {
  return deadline === undefined ? null : { afterMs: deadline.afterMs, then: deadline.then === undefined ? null : asNew(deadline.then) };
}

/** Schemas are compared as the revision compares them: the order of their keys does not matter. */
function schemaChange(before: JsonSchema | undefined, after: JsonSchema | undefined): ValueChange<JsonSchema | null> | undefined {
  return canonicalJson(before ?? null) === canonicalJson(after ?? null) ? undefined : { before: before ?? null, after: after ?? null };
}

/** `children` holds the triggers first: the ordinary children are the rest. */
function declaredChildren(node: GraphNode): readonly string[] {
  return node.children.slice(node.triggers.length);
}

/** Compared as JSON: every value here is plain data (names, lists of names, flags, retry policies). */
function changeOf<T>(before: T, after: T): ValueChange<T> | undefined {
  return JSON.stringify(before) === JSON.stringify(after) ? undefined : { before, after };
}

function listChange(before: readonly string[], after: readonly string[]): NodeListChange | undefined {
  const change = changeOf(before, after);
  if (change === undefined) return undefined;
  const shared = (list: readonly string[], other: readonly string[]) => list.filter((name) => other.includes(name));
  return { ...change, reordered: changeOf(shared(before, after), shared(after, before)) !== undefined };
}
