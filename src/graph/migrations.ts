// How the CRs of earlier revisions of a graph find their place in this one: renames (`formerly`),
// removed nodes mapped elsewhere or refused. Pure: the operator, `okt graph check` and the property
// tests all ask the same function (fateOf).
import { conditionTypeProblem, RESERVED_NAMES } from './names.ts';
import type { GraphProblem } from './problems.ts';
import type { GraphData } from './schema.ts';

export type MigrationPolicy = 'Automatic' | 'Manual';

/** What a removed node's CRs get: a node of this revision, or a refusal with the reason a person reads. */
export type RemovedNode = string | { readonly refuse: string };

export interface Migrations {
  readonly policy: MigrationPolicy;
  /** Removed node name -> where its CRs go (or why they may not move). */
  readonly removed: ReadonlyMap<string, RemovedNode>;
}

/**
 * What becomes, in this revision, of a node name a CR of an earlier one holds (its state, its desired
 * state, its running operation's node). `kept`: the node still exists under that name; `renamed`:
 * another node lists it in `formerly`; `moved`: it was removed and mapped to `node`; `refused`: it was
 * removed and its CRs may not move (`reason`); `stranded`: nothing says where it went.
 */
export type NodeFate =
  | { readonly kind: 'kept' | 'renamed' | 'moved'; readonly node: string }
  | { readonly kind: 'refused'; readonly reason: string }
  | { readonly kind: 'stranded' };

/** The part of a graph the fate of a name depends on. */
export interface MigrationSource {
  readonly name: string;
  has(name: string): boolean;
  readonly migrations: Migrations;
  /** Former name -> the node that now bears it. */
  readonly formerNames: ReadonlyMap<string, string>;
}

export function fateOf(graph: MigrationSource, name: string): NodeFate {
  if (graph.has(name)) return { kind: 'kept', node: name };
  const renamed = graph.formerNames.get(name);
  if (renamed !== undefined) return { kind: 'renamed', node: renamed };
  const removed = graph.migrations.removed.get(name);
  if (removed === undefined) return { kind: 'stranded' };
  return typeof removed === 'string' ? { kind: 'moved', node: removed } : { kind: 'refused', reason: removed.refuse };
}

/** A sentence for a fate that leaves a CR without a node: why, and what to declare. */
export function strandedReason(graph: MigrationSource, name: string, fate: NodeFate): string | undefined {
  if (fate.kind === 'refused') return `node "${name}" was removed from graph "${graph.name}" and its migrations refuse to move its CRs: ${fate.reason}`;
  if (fate.kind === 'stranded') {
    return `node "${name}" is not in graph "${graph.name}", and no node lists it in formerly nor does migrations.removed map it`;
  }
  return undefined;
}

type Report = (code: GraphProblem['code'], node: string | undefined, path: PropertyKey[], message: string) => void;

/** Every problem of the migration declarations: names, conflicts, targets, and earlier revisions' nodes left unmapped. */
export function checkMigrations(data: GraphData, previous: readonly { revision: string; nodeNames: readonly string[] }[], report: Report): void {
  const current = new Set(data.nodes.map((n) => n.name));
  const formerOwner = new Map<string, string>();
  data.nodes.forEach((node, i) => {
    (node.formerly ?? []).forEach((former, j) => {
      const where = ['nodes', i, 'formerly', j];
      const problem = conditionTypeProblem(former);
      if (problem !== undefined || RESERVED_NAMES.includes(former)) {
        report('invalid-name', node.name, where, `node "${node.name}": former name "${former}" ${problem ?? 'is reserved'}`);
      }
      if (current.has(former)) {
        report('formerly-conflict', node.name, where, `node "${node.name}": former name "${former}" is the name of a node of this revision`);
      } else if (formerOwner.has(former) && formerOwner.get(former) !== node.name) {
        report('formerly-conflict', node.name, where, `node "${node.name}": former name "${former}" is also a former name of node "${formerOwner.get(former)}"`);
      } else formerOwner.set(former, node.name);
    });
  });
  for (const [removed, target] of Object.entries(data.migrations?.removed ?? {})) {
    const where = ['migrations', 'removed', removed];
    if (current.has(removed)) report('removed-conflict', removed, where, `migrations.removed "${removed}": is a node of this revision`);
    else if (formerOwner.has(removed)) report('removed-conflict', removed, where, `migrations.removed "${removed}": is a former name of node "${formerOwner.get(removed)}"`);
    if (typeof target === 'string' && !current.has(target)) {
      report('unknown-migration-target', removed, where, `migrations.removed "${removed}": "${target}" is not a node of the graph`);
    }
  }
  const removed = new Set(Object.keys(data.migrations?.removed ?? {}));
  previous.forEach((revision, i) => {
    for (const name of revision.nodeNames) {
      if (current.has(name) || formerOwner.has(name) || removed.has(name)) continue;
      report('unmapped-node', name, ['previous', i], `node "${name}" of revision ${revision.revision} is not in this revision: list it in a node's formerly, or map it in migrations.removed (to a node, or { refuse: "why" })`);
    }
  });
}
