// The cycles a graph lets its actions' events drive with no spec edit: every edge out of a node with an
// action can be taken on an event that action raises (the child's name, a trigger, DefaultState). The
// operator brakes a CR that turns one fast (docs/operator.md#the-cycle-brake); `okt graph validate`
// warns about them. A deadline's self-loop (a periodic timer, its `then` the node itself) is left out:
// it turns at the deadline's pace.
import type { Graph } from './graph.ts';

/** Nodes that can reach one another through edges actions can drive, and the shortest cycle through the first. */
export interface ActionCycle {
  /** The nodes on such cycles together, in the graph's order. */
  readonly nodes: readonly string[];
  /** A shortest cycle through the first of them, as entered: `[Provisioning, Failed, Provisioning]`. */
  readonly example: readonly string[];
}

export function actionDrivenCycles(graph: Graph): ActionCycle[] {
  const next = (node: string): string[] => {
    const n = graph.node(node);
    if (!n.hasAction) return [];
    return n.children.filter((child) => !(child === node && n.deadline?.then === node));
  };
  const reach = new Map(graph.nodeNames.map((node) => [node, reachable(node, next)]));
  const cycles: ActionCycle[] = [];
  const placed = new Set<string>();
  for (const node of graph.nodeNames) {
    if (placed.has(node) || !reach.get(node)!.has(node)) continue;
    const nodes = graph.nodeNames.filter((other) => reach.get(node)!.has(other) && reach.get(other)!.has(node));
    for (const member of nodes) placed.add(member);
    cycles.push({ nodes, example: shortestCycle(node, next) });
  }
  return cycles;
}

/** The nodes reachable from `from` by one edge or more. */
function reachable(from: string, next: (node: string) => string[]): Set<string> {
  const seen = new Set<string>();
  const queue = [...next(from)];
  for (let node = queue.shift(); node !== undefined; node = queue.shift()) {
    if (seen.has(node)) continue;
    seen.add(node);
    queue.push(...next(node));
  }
  return seen;
}

/** A shortest walk from `node` back to itself (breadth first; it is on a cycle). */
function shortestCycle(node: string, next: (node: string) => string[]): string[] {
  const parent = new Map<string, string>();
  const queue = [node];
  for (let at = queue.shift(); at !== undefined; at = queue.shift()) {
    for (const child of next(at)) {
      if (child === node) {
        const walk = [at];
        while (walk[0] !== node) walk.unshift(parent.get(walk[0]!)!);
        return [...walk, node];
      }
      if (!parent.has(child) && child !== node) {
        parent.set(child, at);
        queue.push(child);
      }
    }
  }
  throw new Error(`${node} is on no cycle`);
}
