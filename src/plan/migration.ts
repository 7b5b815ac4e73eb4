// What a graph revision does to a CR recorded on another one: the one prediction the operator acts on
// and `okt graph check --against-cluster` reports, so that the check says exactly what will happen.
import { fateOf, strandedReason, type Graph, type NodeFate } from '../graph/index.ts';
import type { Planner } from './planner.ts';

/** Where a CR stands, as its status and spec say. */
export interface RecordedPosition {
  /** status.graphRevision; undefined when an okt without revisions wrote the status. */
  readonly revision: string | undefined;
  readonly state: string;
  /** spec.desiredState as written (it may be a former name). */
  readonly desired: string;
  /** The node of the CR's operation while it is not over. */
  readonly runningAction?: string | undefined;
  /** The CR is annotated okt.dev/migrate=true (what the Manual policy waits for). */
  readonly migrateRequested?: boolean;
}

export type MigrationPrediction =
  /** On this revision already (or written without one, and every name it holds is a node here). */
  | { readonly kind: 'current' }
  /** The Manual policy keeps it on its own revision, which this graph still serves, until it is asked to move. */
  | { readonly kind: 'stays'; readonly revision: string }
  /** It cannot move: its state or its desired state has no place here, or its revision is not served. */
  | { readonly kind: 'stranded'; readonly reason: string }
  /** Its running action belongs to a node removed here, or one that lost its action: it moves once the action ends. */
  | { readonly kind: 'waits'; readonly reason: string }
  | {
      readonly kind: 'migrates';
      /** What becomes of its state: kept, renamed (no transition), or moved (a transition into `node`, whose action then starts). */
      readonly state: Extract<NodeFate, { node: string }>;
      readonly desired: string;
      /** Its running action, kept under its operation id, now the action of this node. */
      readonly operation?: { readonly from: string; readonly to: string };
      /** Set when the desired node cannot be reached from where it lands: it will stall there. */
      readonly unreachable?: string;
    };

/** spec.desiredState in this revision's words: a node, or why it has none. */
export function resolveDesired(graph: Graph, desired: string): { node: string } | { stranded: string } {
  const fate = fateOf(graph, desired);
  if ('node' in fate) return { node: fate.node };
  return { stranded: `spec.desiredState: ${strandedReason(graph, desired, fate) ?? desired}` };
}

/** What `graph` (with its planner) does to a CR at `at`: one answer for the operator and for `okt graph check`. */
export function predictMigration(graph: Graph, planner: Planner, at: RecordedPosition): MigrationPrediction {
  if (at.revision === graph.revision && !graph.has(at.state)) {
    return { kind: 'stranded', reason: `status.state "${at.state}" is not a node of graph "${graph.name}" (revision ${graph.revision})` };
  }
  const onCurrent = at.revision === graph.revision || (at.revision === undefined && graph.has(at.state));
  const desired = resolveDesired(graph, at.desired);
  if ('stranded' in desired) return { kind: 'stranded', reason: desired.stranded };
  if (onCurrent) return { kind: 'current' };
  if (graph.migrations.policy === 'Manual' && at.migrateRequested !== true) {
    const served = graph.previous.some((g) => g.revision === at.revision);
    if (served) return { kind: 'stays', revision: at.revision ?? '' };
    return {
      kind: 'stranded',
      reason: `revision ${at.revision ?? '(unrecorded)'} is not served by graph "${graph.name}" (revision ${graph.revision}, policy Manual): list it in previous, or annotate the CR okt.dev/migrate=true to move it`,
    };
  }
  const state = fateOf(graph, at.state);
  if (!('node' in state)) return { kind: 'stranded', reason: `status.state: ${strandedReason(graph, at.state, state) ?? at.state}` };
  let operation: { from: string; to: string } | undefined;
  if (at.runningAction !== undefined) {
    const action = fateOf(graph, at.runningAction);
    if (!('node' in action) || action.kind === 'moved' || !graph.node(action.node).hasAction) {
      const lost = 'node' in action && action.kind !== 'moved' ? `node ${action.node} has no action in revision ${graph.revision}` : `node ${at.runningAction} is not in revision ${graph.revision}`;
      return { kind: 'waits', reason: `the action of ${at.runningAction} still runs and ${lost}: the CR migrates once it ends` };
    }
    if (action.node !== at.runningAction) operation = { from: at.runningAction, to: action.node };
  }
  const route = planner.distance(state.node, desired.node);
  return {
    kind: 'migrates',
    state,
    desired: desired.node,
    ...(operation === undefined ? {} : { operation }),
    ...(route === undefined ? { unreachable: `${desired.node} cannot be reached from ${state.node}` } : {}),
  };
}
