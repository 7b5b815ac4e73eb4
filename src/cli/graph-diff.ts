// The human form of `okt graph diff`: one line per added, removed or renamed node, per changed node,
// and for the entry and the migration policy; `+` added, `-` removed, `~` changed, as diff reads.
import {
  cancelPolicyText, describeObject, formatDuration, objectName,
  type ObjectData, type GraphDiff, type JsonSchema, type NodeChange, type NodeFate, type NodeMove, type ObjectFate, type RetryPolicy, type ValueChange,
} from '../graph/index.ts';
import type { Colors } from './output.ts';

export function formatGraphDiff(diff: GraphDiff, c: Colors): string {
  const { from, to } = diff;
  if (diff.same) return `${c.bold(`graph "${to.graph}"`)}: no change (revision ${to.revision})\n`;
  const header =
    from.graph === to.graph
      ? `${c.bold(`graph "${to.graph}"`)}: ${from.revision} -> ${to.revision}`
      : `${c.bold(`graph "${from.graph}"`)} ${from.revision} -> ${c.bold(`graph "${to.graph}"`)} ${to.revision}`;
  const lines = [
    header,
    ...diff.nodes.added.map((node) => c.green(`+ node ${node}`)),
    ...diff.nodes.removed.map(({ node, fate }) => c.red(`- node ${node} (${describeFate(fate)})`)),
    ...diff.nodes.renamed.map(({ from: before, to: after }) => c.yellow(`~ node ${before} -> ${after} (renamed)`)),
    ...(diff.entry === undefined ? [] : [c.yellow(`~ entry ${diff.entry.before} -> ${diff.entry.after}`)]),
    ...(diff.policy === undefined ? [] : [c.yellow(`~ migration policy ${diff.policy.before} -> ${diff.policy.after}`)]),
    ...(diff.params === undefined ? [] : [c.yellow(`~ graph params ${describeParamsChange(diff.params)}`)]),
    ...diff.changed.map((change) => c.yellow(`~ ${change.node}: ${describeNodeChange(change)}`)),
    ...(diff.objects === undefined ? [] : objectLines(diff.objects.before, diff.objects.after, c)),
    ...fateLines(diff, c),
  ];
  return `${lines.join('\n')}\n`;
}

/** What the CRs of the old revision see of each object once migrated: one line per declaration. */
function fateLines(diff: GraphDiff, c: Colors): string[] {
  const fates = diff.objectFates ?? [];
  if (fates.length === 0) return [];
  return ['objects of the CRs once migrated:', ...fates.map((fate) => `  object ${fate.id}${fate.declared === null ? '' : ` (${fate.declared.kind} ${objectName('<cr>', fate.declared.name)})`}: ${describeObjectFate(fate, c)}`)];
}

/** `kept at Servicing (now Backup), applied again only if its render changed; pruned at Stopping (now Draining) once ...`. */
function describeObjectFate(fate: ObjectFate, c: Colors): string {
  // The graph's lifetime in NEW: every CR that migrates keeps it or gets it, wherever it stood.
  const everywhere = fate.declared !== null && fate.declared.during === undefined;
  const at = (moves: readonly NodeMove[]) => moves.map(({ from, to }) => (from === to ? from : `${from} (now ${to})`)).join(', ');
  const wanted = (moves: readonly NodeMove[]) => (everywhere ? 'every node' : at(moves));
  const parts: string[] = [];
  if (fate.kept.length > 0) parts.push(`kept at ${wanted(fate.kept)}, applied again only if its render changed`);
  if (fate.made.length > 0) parts.push(c.green(`made at ${wanted(fate.made)}`));
  if (fate.pruned.length > 0) {
    const how = fate.deletion === 'Keep' ? 'let go of (kept: disowned, left in place)' : 'pruned';
    parts.push(c.red(`${how} at ${at(fate.pruned)}, once the objects of the node they stand at are applied`));
  }
  return parts.length > 0 ? parts.join('; ') : `no CR has it at migration${fate.declared === null ? '' : ' (made as CRs reach its nodes)'}`;
}

/** One line per object added, removed or changed (by id); a change of order alone says so. */
function objectLines(before: readonly ObjectData[], after: readonly ObjectData[], c: Colors): string[] {
  const old = new Map(before.map((o) => [o.id, o]));
  const lines = after.flatMap((o) => {
    const was = old.get(o.id);
    if (was === undefined) return [c.green(`+ object ${o.id}: ${describeObject(o)}`)];
    return describeObject(was) === describeObject(o) ? [] : [c.yellow(`~ object ${o.id}: ${describeObject(was)} -> ${describeObject(o)}`)];
  });
  const removed = before.filter((o) => !after.some((n) => n.id === o.id)).map((o) => c.red(`- object ${o.id}: ${describeObject(o)}`));
  const all = [...lines, ...removed];
  return all.length > 0 ? all : [c.yellow(`~ objects reordered: ${after.map((o) => o.id).join(', ')}`)];
}

/** Where a removed node's CRs go: its fate is moved, refused or stranded (kept and renamed nodes are not removed). */
function describeFate(fate: NodeFate): string {
  switch (fate.kind) {
    case 'refused':
      return `refused: ${fate.reason}`;
    case 'stranded':
      return 'stranded: no migration';
    default:
      return `CRs go to ${fate.node}`;
  }
}

function describeNodeChange(change: NodeChange): string {
  const parts: string[] = [];
  const list = (names: readonly string[]) => `[${names.join(', ')}]`;
  const value = (name: string | null) => name ?? 'none';
  const yesNo = (flag: boolean) => (flag ? 'yes' : 'no');
  const retry = (policy: RetryPolicy | null) => (policy === null ? 'none' : `${policy.attempts} attempts, backoff ${policy.backoffMs}ms`);
  const add = <T>(label: string, field: ValueChange<T> | undefined, show: (v: T) => string, suffix = '') => {
    if (field !== undefined) parts.push(`${label} ${show(field.before)} -> ${show(field.after)}${suffix}`);
  };
  add('children', change.children, list, change.children?.reordered ? ' (reordered)' : '');
  add('triggers', change.triggers, list, change.triggers?.reordered ? ' (reordered)' : '');
  add('default', change.defaultChild, value);
  add('action', change.action, yesNo);
  add('retry', change.retry, retry);
  add('cancellable', change.cancellable, cancelPolicyText);
  add('onDelete', change.onDelete, value);
  add('deadline', change.deadline, (d) => (d === null ? 'none' : `${formatDuration(d.afterMs)} then ${d.then ?? 'stall'}`));
  if (change.params !== undefined) parts.push(`params ${describeParamsChange(change.params)}`);
  add('onParamsChange', change.onParamsChange, (policy) => policy);
  return parts.join('; ');
}

/** `{version: string, replicas?: integer} -> {...}`; a change of constraints alone says so. */
function describeParamsChange(change: ValueChange<JsonSchema | null>): string {
  const before = describeParams(change.before);
  const after = describeParams(change.after);
  return before === after ? `${after} (constraints changed)` : `${before} -> ${after}`;
}

function describeParams(schema: JsonSchema | null): string {
  if (schema === null) return 'none';
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const fields = Object.entries((schema.properties as Record<string, JsonSchema> | undefined) ?? {});
  return `{${fields.map(([name, field]) => `${name}${required.has(name) ? '' : '?'}: ${String(field.type)}`).join(', ')}}`;
}
