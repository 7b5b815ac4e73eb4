// The picture `okt status` prints (and writes as HTML): pure functions of a resource and its graph.
import { deadlineOf, type NodeDeadline } from '../controller/lifecycle/deadline.ts';
import { expandStatus } from '../controller/lifecycle/status/compact-format.ts';
import type { Graph } from '../graph/index.ts';
import { canonicalJson, formatDuration, nodeParams, renderMermaid } from '../graph/index.ts';
import { lifecycleStatusSchema, describeIssues, type LifecycleStatus } from '../kube/lifecycle-resource.ts';
import { renderPath } from '../machine/index.ts';
import { createPlanner } from '../plan/index.ts';
import type { Colors } from './output.ts';
import type { ObjectView } from './status-objects.ts';

/** A lifecycle custom resource as read from the API server (status still unchecked). */
export interface LifecycleResource {
  kind: string;
  metadata: { name: string; namespace?: string; generation?: number; creationTimestamp?: string; deletionTimestamp?: string; uid?: string; annotations?: Record<string, string> };
  spec?: { desiredState?: string; paused?: boolean; onLeaf?: string; sidecar?: { url?: string }; params?: Record<string, unknown> };
  status?: unknown;
}

export interface StatusView {
  graph: Graph;
  resource: LifecycleResource;
  now: Date;
  /** The objects its inventory names, read and judged (status-objects.ts); absent or empty: none drawn. */
  objects?: ObjectView[];
}

/** What the status says, checked: the parsed status, or why it could not be read. */
type ReadStatus = { kind: 'none' } | { kind: 'invalid'; problem: string } | { kind: 'ok'; status: LifecycleStatus };

function readStatus(resource: LifecycleResource): ReadStatus {
  const raw = expandStatus(resource.status, resource.metadata.uid ?? '');
  if (raw === undefined || raw === null || (typeof raw === 'object' && Object.keys(raw).length === 0)) return { kind: 'none' };
  const parsed = lifecycleStatusSchema.safeParse(raw);
  return parsed.success ? { kind: 'ok', status: parsed.data } : { kind: 'invalid', problem: describeIssues('status', parsed.error) };
}

/** The marks of the picture: where the resource is, where it goes, where it has been. */
interface Marks {
  current: string | undefined;
  desired: string | undefined;
  visited: ReadonlySet<string>;
  /** `from>to` for every transition in status.path. */
  traversed: ReadonlySet<string>;
}

function marksOf(graph: Graph, resource: LifecycleResource, read: ReadStatus): Marks {
  const path = read.kind === 'ok' ? read.status.path : [];
  const traversed = new Set(path.slice(1).map((to, i) => `${path[i]}>${to}`));
  const current = read.kind === 'ok' && graph.has(read.status.state) ? read.status.state : undefined;
  const desired = resource.spec?.desiredState !== undefined && graph.has(resource.spec.desiredState) ? resource.spec.desiredState : undefined;
  return { current, desired, visited: new Set(path), traversed };
}

/** A node's children in display order: the ordinary course first, then the debranching triggers. */
function displayChildren(graph: Graph, name: string): { child: string; trigger: boolean }[] {
  const node = graph.node(name);
  const ordinary = node.children.slice(node.triggers.length).map((child) => ({ child, trigger: false }));
  return [...ordinary, ...node.triggers.map((child) => ({ child, trigger: true }))];
}

/** Each node's parent in a breadth-first tree from the entry (each node drawn once, at its shallowest). */
function treeParents(graph: Graph): Map<string, string | undefined> {
  const parent = new Map<string, string | undefined>([[graph.entry, undefined]]);
  const queue = [graph.entry];
  for (let i = 0; i < queue.length; i++) {
    const name = queue[i]!;
    for (const { child } of displayChildren(graph, name)) {
      if (parent.has(child)) continue;
      parent.set(child, name);
      queue.push(child);
    }
  }
  return parent;
}

/**
 * The graph as a tree from the entry: each node once, under the node it is first reached from; an
 * edge back to a node drawn elsewhere is a `↩` line; triggers to nodes drawn elsewhere are summed up
 * on the node's line. Current node ●, visited ✓, desired ◎; traversed edges in green.
 */
function renderGraphTree(graph: Graph, marks: Marks, c: Colors): string[] {
  const parents = treeParents(graph);
  const lines: string[] = [];
  const colored = (name: string): string =>
    name === marks.current ? c.bold(c.yellow(name)) : marks.visited.has(name) ? c.green(name) : name;
  const label = (name: string): string => {
    const tags: string[] = [];
    if (name === marks.current) tags.push(c.bold(c.yellow('● current')));
    else if (marks.visited.has(name)) tags.push(c.green('✓'));
    if (name === marks.desired && name !== marks.current) tags.push(c.cyan('◎ desired'));
    return [colored(name), ...tags].join(' ');
  };
  const visit = (name: string, prefix: string, connector: string): void => {
    const children = displayChildren(graph, name);
    const drawn = children.filter(({ child, trigger }) => parents.get(child) === name || !trigger);
    const elsewhereTriggers = children.filter(({ child, trigger }) => trigger && parents.get(child) !== name).map((t) => t.child);
    const triggers = elsewhereTriggers.length > 0 ? c.dim(`  ⚡ ${elsewhereTriggers.join(', ')}`) : '';
    lines.push(`${connector}${label(name)}${triggers}`);
    drawn.forEach(({ child, trigger }, i) => {
      const last = i === drawn.length - 1;
      const branch = `${prefix}${last ? '└─' : '├─'}`;
      const edge = marks.traversed.has(`${name}>${child}`) ? c.green : (s: string) => s;
      const arrow = trigger ? '⚡' : '▶';
      if (parents.get(child) === name) visit(child, `${prefix}${last ? '    ' : '│   '}`, `${branch}${edge(arrow)} `);
      else lines.push(`${branch}${edge('↩')} ${colored(child)}`);
    });
  };
  visit(graph.entry, '', '');
  return lines;
}

/** `45s`, `12m`, `5h`, `3d`: like kubectl's AGE column. */
export function age(from: string | undefined, now: Date): string {
  if (from === undefined) return '-';
  const seconds = Math.max(0, Math.floor((now.getTime() - Date.parse(from)) / 1000));
  if (!Number.isFinite(seconds)) return '-';
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 120 * 60) return `${Math.floor(seconds / 60)}m`;
  if (seconds < 48 * 3600) return `${Math.floor(seconds / 3600)}h`;
  return `${Math.floor(seconds / 86400)}d`;
}

function table(rows: string[][], c: Colors): string[] {
  const widths = rows[0]!.map((_, col) => Math.max(...rows.map((row) => row[col]!.length)));
  return rows.map((row, r) => {
    const text = row.map((cell, col) => (col === row.length - 1 ? cell : cell.padEnd(widths[col]!))).join('  ');
    return r === 0 ? c.bold(text) : text;
  });
}

function headline(view: StatusView): string {
  const { metadata } = view.resource;
  return `${view.resource.kind} ${metadata.namespace ?? 'default'}/${metadata.name}`;
}

/** The facts under the headline, as label/value pairs shared by the text and HTML pictures. */
function facts(view: StatusView, read: ReadStatus, marks: Marks): [string, string][] {
  const { graph, resource, now } = view;
  // The revision drawn differs from the resource's when its own is not at hand (not published, or --graph).
  const recorded = read.kind === 'ok' ? read.status.graphRevision : undefined;
  const elsewhere = recorded !== undefined && recorded !== graph.revision ? `; the resource is on revision ${recorded}` : '';
  const out: [string, string][] = [['graph', `${graph.name} (${graph.nodeNames.length} nodes), revision ${graph.revision}${elsewhere}`]];
  const desired = resource.spec?.desiredState;
  if (read.kind === 'ok') {
    const { status } = read;
    let toward = '';
    if (marks.current !== undefined && marks.desired !== undefined && marks.current !== marks.desired) {
      const route = createPlanner(graph).route(marks.current, marks.desired);
      toward = route === undefined ? ' (unreachable from here)' : ` (${route.length === 1 ? '1 move' : `${route.length} moves`}: ${renderPath(route)})`;
    }
    out.push(['state', status.state + (graph.has(status.state) ? '' : ` (not a node of graph "${graph.name}")`)]);
    out.push(['desired', `${desired ?? '-'}${toward}`]);
    const ready = status.conditions.find((cond) => cond.type === 'Ready');
    out.push(['ready', ready === undefined ? '-' : `${ready.status}${ready.reason ? ` (${ready.reason})` : ''}`]);
    out.push(['path', status.pathSummary ?? renderPath(status.path)]);
    const t = status.lastTransition;
    if (t !== undefined) out.push(['last transition', `${t.from} -> ${t.to} on [${t.events.join(', ')}] ${age(t.time, now)} ago (generation ${t.generation})`]);
    const due = deadlineOf(graph, status);
    if (due !== undefined) out.push(['deadline', deadlineFact(due, resource, now)]);
    const op = status.operation;
    if (op !== undefined) {
      const when = op.finishedAt !== undefined ? `finished ${age(op.finishedAt, now)} ago` : op.startedAt !== undefined ? `started ${age(op.startedAt, now)} ago` : 'not started';
      const events = op.events !== undefined && op.events.length > 0 ? `, raised [${op.events.join(', ')}]` : '';
      const tries = [op.reason && op.phase !== 'Succeeded' ? op.reason : '', (op.attempts ?? 1) > 1 ? `attempt ${op.attempts}` : '', op.retries ? `retry ${op.retries}` : '']
        .filter((t) => t !== '');
      const detail = tries.length > 0 ? `, ${tries.join(', ')}` : '';
      out.push(['operation', `${op.phase}${detail}, action of ${op.node}, ${when}${events} (id ${op.id})${op.message ? ` — ${op.message}` : ''}`]);
    }
    if (resource.spec?.params !== undefined || op?.params !== undefined) out.push(['params', paramsFact(graph, resource.spec?.params, op)]);
    out.push(['generation', `${resource.metadata.generation ?? '-'} (observed ${status.observedGeneration}), transition ${status.transition}`]);
  } else {
    out.push(['desired', desired ?? '-']);
    out.push(['status', read.kind === 'none' ? 'none yet: no operator has reconciled this resource (is `okt run` running?)' : `unreadable: ${read.problem}`]);
  }
  const flags = [resource.spec?.paused ? 'paused' : '', resource.metadata.deletionTimestamp ? `deleting since ${age(resource.metadata.deletionTimestamp, now)} ago` : '']
    .filter((f) => f !== '');
  if (flags.length > 0) out.push(['note', flags.join('; ')]);
  out.push(['age', age(resource.metadata.creationTimestamp, now)]);
  return out;
}

/**
 * spec.params, and how they stand to the current operation's: `{"replicas":4}; the action of Running
 * ran with {"replicas":2}: it runs again with these (onParamsChange: Rerun)`.
 */
function paramsFact(graph: Graph, given: Record<string, unknown> | undefined, op: LifecycleStatus['operation']): string {
  const text = JSON.stringify(given ?? {});
  if (op?.params === undefined || !graph.has(op.node)) return text;
  const now = nodeParams(graph, op.node, given);
  if (now !== undefined && !now.ok) return `${text}; they do not fit ${op.node}: ${now.problems.map((p) => `${p.field}: ${p.reason}`).join('; ')}`;
  if (now === undefined || canonicalJson(now.params) === canonicalJson(op.params)) return `${text}; the action of ${op.node} ran with them`;
  const then = graph.node(op.node).onParamsChange === 'Rerun' ? 'it runs again with these (onParamsChange: Rerun)' : 'these apply from the next transition';
  return `${text}; the action of ${op.node} ran with ${JSON.stringify(op.params)}: ${then}`;
}

/** `10m on Waiting, then Expired: 4m12s left`; a deadline passed says how long ago, one held off says why. */
function deadlineFact(due: NodeDeadline, resource: LifecycleResource, now: Date): string {
  const declared = `${formatDuration(due.deadline.afterMs)} on ${due.node}, then ${due.deadline.then ?? 'stall'}`;
  const left = due.at - now.getTime();
  const when = left > 0 ? `${formatDuration(Math.ceil(left / 1000) * 1000)} left` : `passed ${age(new Date(due.at).toISOString(), now)} ago`;
  const held = resource.metadata.deletionTimestamp ? ' (held off: deleting)' : resource.spec?.paused ? ' (held off: paused)' : '';
  return `${declared}: ${when}${held}`;
}

function conditionRows(read: ReadStatus, now: Date): string[][] {
  if (read.kind !== 'ok') return [];
  return read.status.conditions.map((cond) => [cond.type, cond.status, cond.reason, age(cond.lastTransitionTime, now), cond.message.replace(/\s+/g, ' ')]);
}

/** The terminal picture: headline, facts, the graph tree with marks, the conditions table. */
export function renderStatusText(view: StatusView, c: Colors): string {
  const read = readStatus(view.resource);
  const marks = marksOf(view.graph, view.resource, read);
  const factList = facts(view, read, marks);
  const width = Math.max(...factList.map(([label]) => label.length));
  const lines = [c.bold(headline(view)), ...factList.map(([label, value]) => `  ${c.dim(label.padEnd(width))}  ${value}`), ''];
  lines.push(...renderGraphTree(view.graph, marks, c).map((line) => `  ${line}`));
  lines.push(c.dim('  ● current  ✓ on the path  ◎ desired  ↩ drawn above  ⚡ trigger'), '');
  const rows = conditionRows(read, view.now);
  if (rows.length > 0) lines.push(...table([['TYPE', 'STATUS', 'REASON', 'AGE', 'MESSAGE'], ...rows], c).map((line) => `  ${line}`));
  else lines.push(c.dim('  no conditions'));
  const objects = objectRows(view);
  if (objects.length > 0) lines.push('', ...table([OBJECT_HEADINGS, ...objects], c).map((line) => `  ${line}`));
  return `${lines.join('\n')}\n`;
}

const OBJECT_HEADINGS = ['OBJECT', 'KIND', 'NAME', 'READY', 'MESSAGE'];

/** One row per object of the inventory: id, kind, name, readiness, and why not ready. */
function objectRows(view: StatusView): string[][] {
  return (view.objects ?? []).map((o) => [o.id, o.kind, o.name, o.readiness, o.message.replace(/\s+/g, ' ')]);
}

const MERMAID_CLASSES = {
  current: 'fill:#ffd54f,stroke:#e65100,stroke-width:4px,font-weight:bold',
  desired: 'fill:#e1f5fe,stroke:#0277bd,stroke-width:3px,stroke-dasharray:5 5',
  visited: 'fill:#c8e6c9,stroke:#2e7d32',
} as const;

/** The Mermaid diagram of the resource: current node, desired node and visited nodes styled. */
function statusMermaid(graph: Graph, marks: Marks): string {
  const one = (name: string | undefined) => (name === undefined ? [] : [name]);
  const desired = marks.desired === marks.current ? [] : one(marks.desired);
  const visited = [...marks.visited].filter((n) => n !== marks.current && n !== marks.desired);
  return renderMermaid(graph, {
    current: { css: MERMAID_CLASSES.current, nodes: one(marks.current) },
    desired: { css: MERMAID_CLASSES.desired, nodes: desired },
    visited: { css: MERMAID_CLASSES.visited, nodes: visited },
  });
}

/** A self-contained HTML page (Mermaid is loaded from a CDN when the page is viewed). */
export function renderStatusHtml(view: StatusView): string {
  const read = readStatus(view.resource);
  const marks = marksOf(view.graph, view.resource, read);
  const factRows = facts(view, read, marks).map(([label, value]) => `<tr><th>${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`);
  const rows = conditionRows(read, view.now);
  const conditions =
    rows.length === 0
      ? '<p>No conditions.</p>'
      : `<table class="conditions"><tr><th>Type</th><th>Status</th><th>Reason</th><th>Age</th><th>Message</th></tr>\n${rows
          .map((row) => `<tr class="${row[1] === 'True' ? 'true' : 'other'}">${row.map((cell) => `<td>${escapeHtml(cell)}</td>`).join('')}</tr>`)
          .join('\n')}</table>`;
  const objectList = objectRows(view);
  const objects =
    objectList.length === 0
      ? ''
      : `<h2>Objects</h2>\n<table class="objects"><tr>${OBJECT_HEADINGS.map((h) => `<th>${escapeHtml(h[0] + h.slice(1).toLowerCase())}</th>`).join('')}</tr>\n${objectList
          .map((row) => `<tr class="${row[3] === 'Ready' ? 'true' : 'other'}">${row.map((cell) => `<td>${escapeHtml(cell)}</td>`).join('')}</tr>`)
          .join('\n')}</table>\n`;
  const title = `okt status: ${headline(view)}`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)}</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; margin-bottom: 1.5rem; }
th, td { text-align: left; padding: .25rem .75rem; border-bottom: 1px solid #ddd; vertical-align: top; }
.conditions tr.true td:nth-child(2), .objects tr.true td:nth-child(4) { color: #2e7d32; font-weight: bold; }
.legend span { display: inline-block; padding: .1rem .5rem; margin-right: .5rem; border-radius: 4px; }
</style>
</head>
<body>
<h1>${escapeHtml(headline(view))}</h1>
<table class="facts">
${factRows.join('\n')}
</table>
<p class="legend"><span style="background:#ffd54f">current</span><span style="background:#e1f5fe">desired</span><span style="background:#c8e6c9">on the path</span></p>
<pre class="mermaid">
${escapeHtml(statusMermaid(view.graph, marks))}</pre>
<h2>Conditions</h2>
${conditions}
${objects}<script type="module">
import mermaid from 'https://cdn.jsdelivr.net/npm/mermaid@11/dist/mermaid.esm.min.mjs';
mermaid.initialize({ startOnLoad: true });
</script>
</body>
</html>
`;
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
