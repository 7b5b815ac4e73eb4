// What `okt ui` sends its page: a graph laid out in columns, each CR as the page draws it, and the
// events seen in the watch. Pure functions of a graph and of CRs: the page only draws them.
import type { Graph } from '../graph/index.ts';
import { cancelNote, formatDuration } from '../graph/index.ts';
import { lifecycleStatusSchema, type LifecycleStatus } from '../kube/lifecycle-resource.ts';
import { expandStatus } from '../controller/lifecycle/status/compact-format.ts';
import type { LifecycleResource } from '../cli/status-view.ts';
import { inventoryOf, unreadObject, type ObjectView } from '../cli/status-objects.ts';

export interface UiNode {
  name: string;
  description: string;
  /** `main`: reached from the entry by ordinary children; `side`: only through triggers (an error handler), drawn in a row below. */
  lane: 'main' | 'side';
  /** Its column in its lane: the longest path to it, edges back up the graph left out. */
  rank: number;
  entry: boolean;
  leaf: boolean;
  action: boolean;
  /** Its policies in a few words: `retry 3x`, `deadline 10m → Failed`, `cancellable`. */
  notes: string[];
  /** Its triggers (debranching children, tried first). */
  triggers: string[];
}

export interface UiEdge {
  from: string;
  to: string;
  /** `trigger`: a debranching child (tried first); `default`: the default child; `child`: the others. */
  kind: 'trigger' | 'default' | 'child';
  /** Its place among the node's children, 1 first (as `okt graph render` numbers them). */
  priority: number;
  /** Back up the graph (to a column at or left of its source in the same lane), or to itself. */
  back: boolean;
  /** `timeout 10m` on the edge a deadline takes, else ''. */
  label: string;
}

export interface UiGraph {
  name: string;
  revision: string;
  entry: string;
  /** The main lane's node names by column, each column top to bottom. */
  columns: string[][];
  /** The side lane, left to right: nodes only triggers lead to. */
  side: string[];
  nodes: UiNode[];
  edges: UiEdge[];
}

/**
 * The graph in columns from the entry. The main lane holds what ordinary children reach from the
 * entry; nodes only triggers lead to (error and give-up handlers, which every node may debranch to)
 * go in a side row, so that they do not stretch the main course. A depth-first walk (ordinary children
 * in priority order, then triggers) finds the edges that go back up; every other edge of a lane goes
 * right, so a node's column is the longest path to it. In a column, nodes sit near the mean row of
 * their parents (one pass, left to right).
 */
export function layoutGraph(graph: Graph): UiGraph {
  const names = graph.nodeNames;
  const ordinary = (name: string): string[] => {
    const node = graph.node(name);
    return node.children.slice(node.triggers.length);
  };
  const ordered = (name: string): string[] => [...ordinary(name), ...graph.node(name).triggers];
  const main = new Set<string>([graph.entry]);
  const queue = [graph.entry];
  for (let i = 0; i < queue.length; i++) {
    for (const child of ordinary(queue[i]!)) {
      if (!main.has(child)) {
        main.add(child);
        queue.push(child);
      }
    }
  }
  const lane = (name: string): 'main' | 'side' => (main.has(name) ? 'main' : 'side');

  const discovered = new Map<string, number>();
  const postorder: string[] = [];
  const back = new Set<string>();
  const onStack = new Set<string>();
  const visit = (start: string): void => {
    // Iterative: a graph may be deep.
    const stack: { name: string; next: number }[] = [{ name: start, next: 0 }];
    discovered.set(start, discovered.size);
    onStack.add(start);
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const children = ordered(top.name);
      if (top.next < children.length) {
        const child = children[top.next++]!;
        if (onStack.has(child)) back.add(`${top.name}>${child}`);
        else if (!discovered.has(child)) {
          discovered.set(child, discovered.size);
          onStack.add(child);
          stack.push({ name: child, next: 0 });
        }
      } else {
        stack.pop();
        onStack.delete(top.name);
        postorder.push(top.name);
      }
    }
  };
  visit(graph.entry);
  for (const name of names) if (!discovered.has(name)) visit(name);

  const rank = new Map<string, number>(names.map((name) => [name, 0]));
  const parents = new Map<string, string[]>(names.map((name) => [name, []]));
  for (const name of [...postorder].reverse()) {
    for (const child of new Set(ordered(name))) {
      if (back.has(`${name}>${child}`) || lane(child) !== lane(name)) continue;
      rank.set(child, Math.max(rank.get(child)!, rank.get(name)! + 1));
      parents.get(child)!.push(name);
    }
  }
  const byDiscovery = [...names].sort((a, b) => discovered.get(a)! - discovered.get(b)!);
  const mainRanks = byDiscovery.filter((n) => main.has(n)).map((n) => rank.get(n)!);
  const columns: string[][] = Array.from({ length: Math.max(...mainRanks) + 1 }, () => []);
  for (const name of byDiscovery) if (main.has(name)) columns[rank.get(name)!]!.push(name);
  const row = new Map<string, number>();
  for (const column of columns) {
    const weight = (name: string): number => {
      const placed = parents.get(name)!.filter((p) => row.has(p)).map((p) => row.get(p)!);
      return placed.length === 0 ? Number.POSITIVE_INFINITY : placed.reduce((a, b) => a + b, 0) / placed.length;
    };
    const weights = new Map(column.map((name) => [name, weight(name)]));
    column.sort((a, b) => weights.get(a)! - weights.get(b)! || discovered.get(a)! - discovered.get(b)!);
    column.forEach((name, i) => row.set(name, i));
  }
  const side = byDiscovery.filter((n) => !main.has(n)).sort((a, b) => rank.get(a)! - rank.get(b)! || discovered.get(a)! - discovered.get(b)!);

  const edges: UiEdge[] = [];
  for (const name of names) {
    const node = graph.node(name);
    node.children.forEach((child, i) => {
      const kind = i < node.triggers.length ? 'trigger' : child === node.defaultChild ? 'default' : 'child';
      const label = node.deadline?.then === child ? `timeout ${formatDuration(node.deadline.afterMs)}` : '';
      const backward = back.has(`${name}>${child}`) || (lane(child) === lane(name) && rank.get(child)! <= rank.get(name)!);
      edges.push({ from: name, to: child, kind, priority: i + 1, back: backward, label });
    });
  }
  const nodes = names.map((name): UiNode => {
    const node = graph.node(name);
    return {
      name, description: node.description, lane: lane(name), rank: rank.get(name)!, entry: name === graph.entry, leaf: node.isLeaf,
      action: node.hasAction, notes: nodeNotes(graph, name), triggers: [...node.triggers],
    };
  });
  return { name: graph.name, revision: graph.revision, entry: graph.entry, columns, side, nodes, edges };
}

function nodeNotes(graph: Graph, name: string): string[] {
  const node = graph.node(name);
  const params = Object.keys((node.params?.properties as Record<string, unknown> | undefined) ?? {});
  const notes = [
    node.retry !== undefined && node.retry.attempts > 1 ? `retry ${node.retry.attempts}x` : undefined,
    cancelNote(node.cancellable),
    node.deadline === undefined ? undefined : `deadline ${formatDuration(node.deadline.afterMs)}${node.deadline.then === undefined ? ', then stalls' : ` → ${node.deadline.then}`}`,
    params.length > 0 ? `params ${params.join(', ')}` : undefined,
  ];
  return notes.filter((note) => note !== undefined);
}

/** How a CR stands, for its colour: no status yet, unreadable, stalled, ready, or on its way. */
export type Health = 'new' | 'invalid' | 'stalled' | 'ready' | 'progressing';

export interface UiCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
  lastTransitionTime: string;
}

export interface UiOperation {
  id: string;
  node: string;
  phase: string;
  message?: string;
  reason?: string;
  startedAt?: string;
  finishedAt?: string;
  attempts?: number;
  retries?: number;
  events?: string[];
  params?: Record<string, unknown>;
}

/** A CR as the page shows it. */
export interface CrView {
  /** `namespace/name`. */
  key: string;
  namespace: string;
  name: string;
  uid: string;
  /** status.graphRevision; null when none is recorded. */
  revision: string | null;
  /** status.state; null without a (readable) status. */
  state: string | null;
  desired: string | null;
  health: Health;
  /** Why: the Stalled reason and message, the Ready one, or what is wrong with the status. */
  reason: string;
  message: string;
  operation: UiOperation | null;
  path: string[];
  pathSummary: string | null;
  lastTransition: { from: string; to: string; events: string[]; time: string; generation: number } | null;
  params: Record<string, unknown> | null;
  paused: boolean;
  deleting: boolean;
  conditions: UiCondition[];
  /** Lifecycle events committed and not yet known delivered (status.outbox). */
  outbox: { sequence: number; type: string; time: string }[];
  /** The objects its inventory (status.objects) names, with their readiness as last read (`okt ui` reads them every few seconds). */
  objects: ObjectView[];
  transition: number;
  generation: number | null;
  observedGeneration: number | null;
  created: string | null;
}

export function crView(resource: LifecycleResource): CrView {
  const { metadata, spec } = resource;
  const namespace = metadata.namespace ?? '';
  const base = {
    key: namespace === '' ? metadata.name : `${namespace}/${metadata.name}`,
    namespace,
    name: metadata.name,
    uid: metadata.uid ?? '',
    desired: typeof spec?.desiredState === 'string' ? spec.desiredState : null,
    params: spec?.params ?? null,
    paused: spec?.paused === true,
    deleting: metadata.deletionTimestamp !== undefined,
    generation: metadata.generation ?? null,
    created: metadata.creationTimestamp ?? null,
  };
  const empty = { revision: null, state: null, operation: null, path: [], pathSummary: null, lastTransition: null, conditions: [], outbox: [], objects: [], transition: 0, observedGeneration: null };
  const raw = expandStatus(resource.status, metadata.uid ?? '');
  if (raw === undefined || raw === null || (typeof raw === 'object' && Object.keys(raw).length === 0)) {
    return { ...base, ...empty, health: 'new', reason: 'NoStatus', message: 'no operator has reconciled it yet' };
  }
  const parsed = lifecycleStatusSchema.safeParse(raw);
  if (!parsed.success) {
    const conditions = conditionsOf((raw as { conditions?: unknown }).conditions);
    const stalled = conditions.find((c) => c.type === 'Stalled' && c.status === 'True');
    const problem = parsed.error.issues.map((issue) => `status.${issue.path.map(String).join('.')}: ${issue.message}`).join('; ');
    return stalled === undefined
      ? { ...base, ...empty, conditions, health: 'invalid', reason: 'InvalidStatus', message: problem }
      : { ...base, ...empty, conditions, health: 'stalled', reason: stalled.reason, message: stalled.message };
  }
  const status: LifecycleStatus = parsed.data;
  const conditions = conditionsOf(status.conditions);
  const stalled = conditions.find((c) => c.type === 'Stalled' && c.status === 'True');
  const ready = conditions.find((c) => c.type === 'Ready');
  const health: Health = stalled !== undefined ? 'stalled' : ready?.status === 'True' ? 'ready' : 'progressing';
  const why = stalled ?? ready;
  return {
    ...base,
    revision: status.graphRevision ?? null,
    state: status.state,
    health,
    reason: why?.reason ?? '',
    message: why?.message ?? '',
    operation: status.operation === undefined ? null : operationView(status.operation),
    path: status.path,
    pathSummary: status.pathSummary ?? null,
    lastTransition: status.lastTransition ?? null,
    conditions,
    outbox: (status.outbox ?? []).map(({ sequence, type, time }) => ({ sequence, type, time })),
    objects: inventoryOf(status).map(unreadObject),
    transition: status.transition,
    observedGeneration: status.observedGeneration,
  };
}

function operationView(op: NonNullable<LifecycleStatus['operation']>): UiOperation {
  const view: UiOperation = { id: op.id, node: op.node, phase: op.phase };
  for (const field of ['message', 'reason', 'startedAt', 'finishedAt', 'attempts', 'retries', 'events', 'params'] as const) {
    if (op[field] !== undefined) (view as unknown as Record<string, unknown>)[field] = op[field];
  }
  return view;
}

function conditionsOf(raw: unknown): UiCondition[] {
  if (!Array.isArray(raw)) return [];
  return raw
    .filter((c): c is Record<string, unknown> => typeof c === 'object' && c !== null && typeof (c as { type?: unknown }).type === 'string')
    .map((c) => ({
      type: String(c.type),
      status: String(c.status ?? 'Unknown'),
      reason: String(c.reason ?? ''),
      message: String(c.message ?? ''),
      lastTransitionTime: String(c.lastTransitionTime ?? ''),
    }));
}

/** Something that happened to a CR, as seen in the watch. */
export interface UiEvent {
  /** Increasing: the page keeps the newest. */
  id: number;
  time: string;
  key: string;
  kind: 'created' | 'deleted' | 'transition' | 'action' | 'stalled' | 'recovered' | 'ready' | 'migrated' | 'desired';
  tone: 'info' | 'good' | 'bad';
  text: string;
}

export type UiEventDraft = Omit<UiEvent, 'id'>;

const FINISHED_PHASES = new Set(['Succeeded', 'Failed', 'Cancelled']);

/**
 * What changed between two sights of a CR (`before` undefined: it appeared; `after` undefined: it was
 * deleted), oldest first. A transition says where from and where to, on which events.
 */
export function eventsBetween(before: CrView | undefined, after: CrView | undefined, now: Date): UiEventDraft[] {
  const at = now.toISOString();
  if (after === undefined) return before === undefined ? [] : [{ time: at, key: before.key, kind: 'deleted', tone: 'info', text: `deleted (was at ${before.state ?? 'no node'})` }];
  const key = after.key;
  if (before === undefined) return [{ time: at, key, kind: 'created', tone: 'info', text: `created, desired ${after.desired ?? '-'}` }];
  const out: UiEventDraft[] = [];
  if (after.desired !== before.desired) out.push({ time: at, key, kind: 'desired', tone: 'info', text: `desired ${before.desired ?? '-'} → ${after.desired ?? '-'}` });
  if (after.revision !== null && before.revision !== null && after.revision !== before.revision) {
    out.push({ time: at, key, kind: 'migrated', tone: 'info', text: `migrated to revision ${after.revision}` });
  }
  if (after.transition > before.transition && after.lastTransition !== null) {
    out.push(transitionEvent(after, after.transition - before.transition));
  }
  const op = after.operation;
  const was = before.operation;
  if (op !== null) {
    const fresh = was === null || was.id !== op.id;
    const finished = FINISHED_PHASES.has(op.phase);
    if (finished && (fresh || !FINISHED_PHASES.has(was!.phase))) {
      const detail = op.phase === 'Succeeded' ? (op.events?.length ? `raised [${op.events.join(', ')}]` : '') : [op.reason, op.message].filter(Boolean).join(': ');
      out.push({ time: op.finishedAt ?? at, key, kind: 'action', tone: op.phase === 'Failed' ? 'bad' : op.phase === 'Succeeded' ? 'good' : 'info', text: `action of ${op.node} ${op.phase.toLowerCase()}${detail ? ` (${detail})` : ''}` });
    } else if (!finished && fresh) {
      out.push({ time: op.startedAt ?? at, key, kind: 'action', tone: 'info', text: `action of ${op.node} started` });
    }
  }
  if (after.health === 'stalled' && before.health !== 'stalled') out.push({ time: at, key, kind: 'stalled', tone: 'bad', text: `stalled: ${after.reason}${after.message ? ` — ${after.message}` : ''}` });
  else if (before.health === 'stalled' && after.health !== 'stalled') out.push({ time: at, key, kind: 'recovered', tone: 'good', text: 'no longer stalled' });
  if (after.health === 'ready' && (before.health !== 'ready' || before.state !== after.state)) out.push({ time: at, key, kind: 'ready', tone: 'good', text: `ready at ${after.state}` });
  return out;
}

function transitionEvent(cr: CrView, count: number): UiEventDraft {
  const t = cr.lastTransition!;
  const missed = count > 1 ? ` (${count} transitions since the last sight)` : '';
  return { time: t.time, key: cr.key, kind: 'transition', tone: 'info', text: `${t.from} → ${t.to} on [${t.events.join(', ')}]${missed}` };
}

/** The events to start with: each CR's last transition, oldest first. */
export function initialEvents(crs: readonly CrView[]): UiEventDraft[] {
  return crs
    .filter((cr) => cr.lastTransition !== null)
    .map((cr) => transitionEvent(cr, 1))
    .sort((a, b) => a.time.localeCompare(b.time));
}
