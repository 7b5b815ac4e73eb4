import { graphTable, type Graph, type GraphTable } from '../graph/index.ts';

export type PlanStep<S extends string = string> =
  | { readonly kind: 'arrived' }
  /** Raise `event` (the name of the next node, `to`) now; `remaining` moves are left after this one. */
  | { readonly kind: 'move'; readonly event: S; readonly to: S; readonly remaining: number }
  | { readonly kind: 'unreachable'; readonly from: S; readonly to: S };

export interface Planner<S extends string = string> {
  /** The event to raise now so that repeated reconciles reach `desired` by the shortest route. */
  next(current: S, desired: S): PlanStep<S>;
  /** The number of decisions from `from` to `to`, or undefined when `to` cannot be reached. */
  distance(from: S, to: S): number | undefined;
  /** The nodes entered on the way from `from` to `to` (excluding `from`), or undefined when unreachable. */
  route(from: S, to: S): S[] | undefined;
  /** Computes the tables of every desired node now instead of on first use. */
  precompute(): void;
}

/**
 * What is kept per desired node: its distance from every node (-1: unreachable) and the next hop on
 * the shortest route (ties broken by child priority). Computed on first use by one reverse BFS,
 * O(nodes + edges), then cached: 8 bytes per node per desired node queried (8 MB at most for a
 * 1,000-node graph, only if every node is ever desired).
 */
interface Toward {
  readonly distance: Int32Array;
  readonly nextHop: Int32Array;
}

/** A planner over `graph`; its per-destination tables are computed lazily and cached. */
export function createPlanner<S extends string>(graph: Graph<S>): Planner<S> {
  const table = graphTable(graph);
  const size = table.names.length;
  const parentStart = new Int32Array(size + 1);
  const parents = new Int32Array(table.children.length);
  fillParents(table, parentStart, parents);
  const towards: (Toward | undefined)[] = new Array(size).fill(undefined);

  const idOf = (name: S): number => {
    const id = table.ids.get(name);
    if (id === undefined) throw new RangeError(`graph "${graph.name}" has no node "${name}"`);
    return id;
  };
  const toward = (target: number): Toward => (towards[target] ??= computeToward(table, parentStart, parents, target));
  const name = (id: number) => table.names[id] as S;

  return {
    next(current, desired) {
      const from = idOf(current);
      const to = idOf(desired);
      if (from === to) return { kind: 'arrived' };
      const t = toward(to);
      const hop = t.nextHop[from]!;
      if (hop < 0) return { kind: 'unreachable', from: current, to: desired };
      return { kind: 'move', event: name(hop), to: name(hop), remaining: t.distance[hop]! };
    },
    distance(from, to) {
      const d = toward(idOf(to)).distance[idOf(from)]!;
      return d < 0 ? undefined : d;
    },
    route(from, to) {
      const target = idOf(to);
      const t = toward(target);
      let at = idOf(from);
      if (t.distance[at]! < 0) return undefined;
      const nodes: S[] = [];
      while (at !== target) {
        at = t.nextHop[at]!;
        nodes.push(name(at));
      }
      return nodes;
    },
    precompute() {
      for (let target = 0; target < size; target++) toward(target);
    },
  };
}

function fillParents(table: GraphTable, parentStart: Int32Array, parents: Int32Array): void {
  const size = table.names.length;
  for (const child of table.children) parentStart[child + 1]!++;
  for (let i = 0; i < size; i++) parentStart[i + 1]! += parentStart[i]!;
  const cursor = parentStart.slice(0, size);
  for (let from = 0; from < size; from++) {
    for (let i = table.childStart[from]!; i < table.childStart[from + 1]!; i++) {
      const child = table.children[i]!;
      parents[cursor[child]!++] = from;
    }
  }
}

function computeToward(table: GraphTable, parentStart: Int32Array, parents: Int32Array, target: number): Toward {
  const size = table.names.length;
  const distance = new Int32Array(size).fill(-1);
  const queue = new Int32Array(size);
  distance[target] = 0;
  queue[0] = target;
  let tail = 1;
  for (let head = 0; head < tail; head++) {
    const node = queue[head]!;
    for (let i = parentStart[node]!; i < parentStart[node + 1]!; i++) {
      const parent = parents[i]!;
      if (distance[parent] === -1) {
        distance[parent] = distance[node]! + 1;
        queue[tail++] = parent;
      }
    }
  }
  // The next hop is the first child, in priority order, one step closer: ties go to priority.
  const nextHop = new Int32Array(size).fill(-1);
  for (let node = 0; node < size; node++) {
    const d = distance[node]!;
    if (d <= 0) continue;
    for (let i = table.childStart[node]!; i < table.childStart[node + 1]!; i++) {
      const child = table.children[i]!;
      if (distance[child] === d - 1) {
        nextHop[node] = child;
        break;
      }
    }
  }
  return { distance, nextHop };
}
