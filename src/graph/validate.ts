import { parseDuration } from './duration.ts';
import { checkMigrations } from './migrations.ts';
import { checkParamsConflicts, readParams, type ParamsChangePolicy, type ParamsDeclaration } from './params.ts';
import { resolveObjects, type GraphObject } from './objects.ts';
import { conditionTypeProblem, nodeConditionType, RESERVED_NAMES } from './names.ts';
import type { GraphProblem } from './problems.ts';
import { reach } from './reach.ts';
import type { GraphData } from './schema.ts';

/** A node once validated: `children` in effective priority order (triggers first, default last). */
export interface ResolvedNode {
  readonly name: string;
  readonly description: string;
  readonly children: readonly string[];
  readonly triggers: readonly string[];
  readonly retry: RetryPolicy | undefined;
  readonly cancellable: CancelPolicy;
  /** The child deletion takes from this node: its onDelete, else its default child; none on a leaf, nor on the entry without onDelete. */
  readonly deletionChild: string | undefined;
  readonly formerly: readonly string[];
  readonly deadline: Deadline | undefined;
  /** The node's own parameters (its action also gets the graph's). */
  readonly params: ParamsDeclaration | undefined;
  readonly onParamsChange: ParamsChangePolicy;
}

/** How long a resource may stay on a node, and where it goes then (`then`, a child) or, without one, that it stalls. */
export interface Deadline<S extends string = string> {
  readonly afterMs: number;
  readonly then: S | undefined;
}

/** Re-run a failed action that raised no event: `attempts` runs in all, `backoffMs` before the second, doubling after. */
export interface RetryPolicy {
  readonly attempts: number;
  readonly backoffMs: number;
}

/** When a node's running action is cancelled instead of waited for. */
export interface CancelPolicy {
  /** The resource is deleted. */
  readonly onDelete: boolean;
  /** spec.desiredState moves to another node than the one it named when the action started (and than this node). */
  readonly onDesiredChange: boolean;
}

/** How a policy reads: `yes` and `no` as `cancellable: true | false` say them; one case alone is named. */
export function cancelPolicyText({ onDelete, onDesiredChange }: CancelPolicy): 'yes' | 'no' | 'on delete' | 'on desired change' {
  if (onDelete === onDesiredChange) return onDelete ? 'yes' : 'no';
  return onDelete ? 'on delete' : 'on desired change';
}

/** What a diagram writes beside a node whose action may be cancelled; undefined when it may not. */
export function cancelNote(policy: CancelPolicy): string | undefined {
  const text = cancelPolicyText(policy);
  return text === 'no' ? undefined : text === 'yes' ? 'cancellable' : `cancellable ${text}`;
}

/** The first wait before a retry when a node's retry policy names none. */
export const DEFAULT_RETRY_BACKOFF_MS = 1_000;

export type Resolution =
  | { readonly ok: true; readonly entry: string; readonly nodes: readonly ResolvedNode[]; readonly params: ParamsDeclaration | undefined; readonly objects: readonly GraphObject[] }
  | { readonly ok: false; readonly problems: readonly GraphProblem[] };

/**
 * Effective order: triggers (the debranching events, e.g. to an error manager) come first, then the
 * declared children; the last declared child is the default. Triggers thus win over every ordinary
 * child, which is how OKT's own reconciliation graph lists ErrorManager and GiveupManager.
 */
export function effectiveChildren(node: { children?: readonly string[]; triggers?: readonly string[] }): string[] {
  return [...(node.triggers ?? []), ...(node.children ?? [])];
}

/**
 * Checks every rule at once and returns all problems, or the resolved nodes when there are none.
 * `previous`: the node names of the earlier revisions the graph declares, each of which must find a place here.
 */
export function resolveGraph(data: GraphData, previous: readonly { revision: string; nodeNames: readonly string[] }[] = []): Resolution {
  const problems: GraphProblem[] = [];
  const report = (code: GraphProblem['code'], node: string | undefined, path: PropertyKey[], message: string) =>
    problems.push(node === undefined ? { code, path, message } : { code, node, path, message });

  const index = new Map<string, number>();
  const conditionOwner = new Map<string, string>();
  data.nodes.forEach((node, i) => {
    const where: PropertyKey[] = ['nodes', i, 'name'];
    const nameProblem = conditionTypeProblem(node.name);
    if (nameProblem !== undefined) report('invalid-name', node.name, where, `node "${node.name}": name ${nameProblem}`);
    if (RESERVED_NAMES.includes(node.name)) {
      report('reserved-name', node.name, where, `node "${node.name}": name is reserved (${RESERVED_NAMES.join(', ')} is the event "go to the default child")`);
    }
    if (index.has(node.name)) report('duplicate-node', node.name, where, `node "${node.name}": defined more than once`);
    else index.set(node.name, i);
    const condition = nodeConditionType(node.name);
    const owner = conditionOwner.get(condition);
    if (owner !== undefined && owner !== node.name) {
      report('condition-collision', node.name, where, `node "${node.name}": its condition type "${condition}" is also node "${owner}"'s`);
    }
    conditionOwner.set(condition, node.name);
  });
  checkMigrations(data, previous, report);

  const edges = data.nodes.map((node, i) => {
    const seen = new Set<string>();
    const known: number[] = [];
    for (const list of ['triggers', 'children'] as const) {
      (node[list] ?? []).forEach((child, j) => {
        const where = ['nodes', i, list, j];
        const kind = list === 'triggers' ? 'trigger' : 'child';
        if (seen.has(child)) report('duplicate-child', node.name, where, `node "${node.name}": ${kind} "${child}" is listed more than once`);
        seen.add(child);
        const target = index.get(child);
        if (target === undefined) report('unknown-child', node.name, where, `node "${node.name}": ${kind} "${child}" is not a node of the graph`);
        else known.push(target);
      });
    }
    if ((node.triggers ?? []).length > 0 && (node.children ?? []).length === 0) {
      report('triggers-without-default', node.name, ['nodes', i, 'children'], `node "${node.name}": has triggers but no children, so no default child (a trigger cannot be the default)`);
    }
    return known;
  });

  const entry = findEntry(data, index, edges, report);
  const isLeaf = (i: number) => (data.nodes[i]?.children ?? []).length === 0 && (data.nodes[i]?.triggers ?? []).length === 0;

  if (entry !== undefined) {
    const reached = reach([entry], (i) => edges[i] ?? []);
    data.nodes.forEach((node, i) => {
      if (!reached.has(i) && index.get(node.name) === i) {
        report('unreachable', node.name, ['nodes', i], `node "${node.name}": unreachable from the entry node "${data.nodes[entry]?.name}"`);
      }
    });
  }

  const parents = data.nodes.map((): number[] => []);
  edges.forEach((targets, from) => targets.forEach((to) => parents[to]?.push(from)));
  const leaves = data.nodes.flatMap((_, i) => (isLeaf(i) ? [i] : []));
  const reachesLeaf = reach(leaves, (i) => parents[i] ?? []);
  data.nodes.forEach((node, i) => {
    if (!reachesLeaf.has(i) && index.get(node.name) === i) {
      report('trap', node.name, ['nodes', i], `node "${node.name}": no leaf is reachable from it, a run entering it could never end`);
    }
  });

  data.nodes.forEach((node, i) => {
    if (node.action === undefined) return;
    const where = ['nodes', i, 'action'];
    if (i === entry && node.action) report('action-on-entry', node.name, where, `node "${node.name}": the entry node has no action`);
    else if (isLeaf(i) && node.action) report('action-on-leaf', node.name, where, `node "${node.name}": a leaf has no action (entering it ends the run)`);
    else if (i !== entry && !isLeaf(i) && !node.action) {
      report('missing-action', node.name, where, `node "${node.name}": every node other than the entry and the leaves has an action`);
    }
  });

  // A loop of default children that reaches no leaf at all is a trap, already reported.
  checkPolicies(data, entry, isLeaf, report, !problems.some((p) => p.code === 'trap'));
  const params = resolveParams(data, entry, isLeaf, report);
  const objects = resolveObjects(data, index, edges, report);

  if (problems.length > 0 || entry === undefined) return { ok: false, problems };
  return {
    ok: true,
    entry: data.nodes[entry]?.name ?? '',
    params: params.get(undefined),
    objects,
    nodes: data.nodes.map((node, i) => ({
      name: node.name,
      description: node.description ?? '',
      children: effectiveChildren(node),
      triggers: node.triggers ?? [],
      retry: node.retry === undefined ? undefined : { attempts: node.retry.attempts, backoffMs: node.retry.backoffMs ?? DEFAULT_RETRY_BACKOFF_MS },
      cancellable: cancelPolicyOf(node.cancellable),
      deletionChild: deletionChildOf(node, i === entry),
      formerly: node.formerly ?? [],
      deadline: node.deadline === undefined ? undefined : { afterMs: parseDuration(node.deadline.after) ?? 0, then: node.deadline.then },
      params: params.get(node.name),
      onParamsChange: node.onParamsChange ?? 'NextTransition',
    })),
  };
}

/** `cancellable: true` cancels on both; an object names the cases; absent or false, neither. */
function cancelPolicyOf(declared: GraphData['nodes'][number]['cancellable']): CancelPolicy {
  if (typeof declared === 'boolean' || declared === undefined) return { onDelete: declared === true, onDesiredChange: declared === true };
  return { onDelete: declared.onDelete === true, onDesiredChange: declared.onDesiredChange === true };
}

/**
 * onDelete when it names a child (else that is reported), or the default child; on the entry node only
 * onDelete: its default child leads into the lifecycle, not out of it, and a resource deleted there is
 * released with nothing run.
 */
function deletionChildOf(node: GraphData['nodes'][number], isEntry: boolean): string | undefined {
  const declared = node.onDelete;
  if (declared !== undefined && effectiveChildren(node).includes(declared)) return declared;
  return isEntry ? undefined : node.children?.at(-1);
}

/**
 * Node policies: retry and cancellable need an action; onDelete names one of the node's children; the
 * path deletion takes (onDelete, else the default child, node after node) ends at a leaf, or at the
 * entry node without onDelete, from everywhere.
 */
function checkPolicies(
  data: GraphData,
  entry: number | undefined,
  isLeaf: (i: number) => boolean,
  report: (code: GraphProblem['code'], node: string | undefined, path: PropertyKey[], message: string) => void,
  checkDeletionCycles: boolean,
): void {
  const index = new Map(data.nodes.map((node, i) => [node.name, i]));
  data.nodes.forEach((node, i) => {
    const hasAction = i !== entry && !isLeaf(i);
    for (const policy of ['retry', 'cancellable'] as const) {
      if (node[policy] !== undefined && !hasAction) {
        report('policy-without-action', node.name, ['nodes', i, policy], `node "${node.name}": ${policy} applies to a node's action, and ${i === entry ? 'the entry node' : 'a leaf'} has none`);
      }
    }
    if (node.onDelete !== undefined && !effectiveChildren(node).includes(node.onDelete)) {
      report('unknown-delete-child', node.name, ['nodes', i, 'onDelete'], `node "${node.name}": onDelete "${node.onDelete}" is not one of its children`);
    }
    if (node.deadline !== undefined) checkDeadline(node.name, effectiveChildren(node), node.deadline, i, i === entry ? 'entry' : isLeaf(i) ? 'leaf' : 'inner', report);
  });
  if (!checkDeletionCycles) return;
  // Deletion follows one child per node, so from each node it is a chain: it ends at a leaf or loops.
  const reported = new Set<string>();
  data.nodes.forEach((start) => {
    const chain: string[] = [];
    let at: GraphData['nodes'][number] | undefined = start;
    while (at !== undefined && !chain.includes(at.name)) {
      chain.push(at.name);
      const next = deletionChildOf(at, index.get(at.name) === entry);
      at = next === undefined ? undefined : data.nodes[index.get(next) ?? -1];
    }
    if (at === undefined) return;
    const loop = chain.slice(chain.indexOf(at.name));
    const key = [...loop].sort().join('\n');
    if (reported.has(key)) return;
    reported.add(key);
    report('deletion-cycle', at.name, ['nodes', index.get(at.name) ?? 0], `nodes ${loop.map((n) => `"${n}"`).join(' -> ')}: deletion follows each node's default child (or its onDelete) and loops here without reaching a leaf; give one of them an onDelete that leaves the loop`);
  });
}

/**
 * A deadline counts from the transition that entered the node, so the entry node (entered by none)
 * may not have one, nor may a leaf (entering it ends the run); `then` is one of the node's children.
 */
function checkDeadline(
  name: string,
  children: readonly string[],
  deadline: NonNullable<GraphData['nodes'][number]['deadline']>,
  i: number,
  place: 'entry' | 'leaf' | 'inner',
  report: (code: GraphProblem['code'], node: string | undefined, path: PropertyKey[], message: string) => void,
): void {
  const where = ['nodes', i, 'deadline'];
  if (place === 'entry') report('deadline-on-entry', name, where, `node "${name}": the entry node may not have a deadline (no transition entered it, so there is no time to count from)`);
  if (place === 'leaf') report('deadline-on-leaf', name, where, `node "${name}": a leaf may not have a deadline (entering it ends the run)`);
  const { after, then } = deadline;
  if (parseDuration(after) === undefined) {
    report('invalid-deadline', name, [...where, 'after'], `node "${name}": deadline.after ${JSON.stringify(after)} is not a positive duration ('500ms', '90s', '10m', '1h30m', or a whole number of milliseconds)`);
  }
  if (then !== undefined && !children.includes(then)) {
    report('unknown-deadline-child', name, [...where, 'then'], `node "${name}": deadline.then "${then}" is not one of its children`);
  }
}

/**
 * The graph's parameters and each node's (key undefined: the graph's), each one checked to become a
 * CRD schema; a node's own parameters and onParamsChange need an action, and onParamsChange parameters.
 */
function resolveParams(
  data: GraphData,
  entry: number | undefined,
  isLeaf: (i: number) => boolean,
  report: (code: GraphProblem['code'], node: string | undefined, path: PropertyKey[], message: string) => void,
): Map<string | undefined, ParamsDeclaration> {
  const declarations = new Map<string | undefined, ParamsDeclaration>();
  const graphParams = data.params === undefined ? undefined : readParams(data.params, { path: ['params'] }, report);
  if (graphParams !== undefined) declarations.set(undefined, graphParams);
  data.nodes.forEach((node, i) => {
    const place = i === entry ? 'the entry node' : isLeaf(i) ? 'a leaf' : undefined;
    if (node.params !== undefined) {
      if (place !== undefined) report('policy-without-action', node.name, ['nodes', i, 'params'], `node "${node.name}": params go to a node's action, and ${place} has none`);
      const own = readParams(node.params, { node: node.name, path: ['nodes', i, 'params'] }, report);
      if (own !== undefined && !declarations.has(node.name)) declarations.set(node.name, own);
    }
    if (node.onParamsChange === undefined) return;
    const where = ['nodes', i, 'onParamsChange'];
    if (place !== undefined) report('policy-without-action', node.name, where, `node "${node.name}": onParamsChange applies to a node's action, and ${place} has none`);
    else if (data.params === undefined && node.params === undefined) {
      report('invalid-params', node.name, where, `node "${node.name}": onParamsChange applies to parameters, and neither the graph nor the node declares any`);
    }
  });
  checkParamsConflicts(data, declarations, report);
  return declarations;
}

/** The entry node's index: the declared one, or else the only node nothing points to. */
function findEntry(
  data: GraphData,
  index: ReadonlyMap<string, number>,
  edges: readonly (readonly number[])[],
  report: (code: GraphProblem['code'], node: string | undefined, path: PropertyKey[], message: string) => void,
): number | undefined {
  if (data.entry !== undefined) {
    const entry = index.get(data.entry);
    if (entry === undefined) report('unknown-entry', data.entry, ['entry'], `entry "${data.entry}" is not a node of the graph`);
    return entry;
  }
  const pointedTo = new Set(edges.flat());
  const roots = [...index.values()].filter((i) => !pointedTo.has(i));
  if (roots.length === 1) return roots[0];
  if (roots.length === 0) {
    report('no-entry', undefined, ['entry'], 'no entry node: every node is the child of another; name one with "entry"');
  } else {
    const names = roots.map((i) => `"${data.nodes[i]?.name}"`).join(', ');
    report('several-entries', undefined, ['entry'], `several entry nodes (${names}): no node points to them; name the entry with "entry"`);
  }
  return undefined;
}
