import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { diffGraphs, loadGraph, type Graph } from '../../src/graph/index.ts';
import { graphArb, graphPairArb } from '../fixtures/graph-arbitrary.ts';

/** A random graph and a random subset of its nodes to rename. */
const renameCaseArb = graphArb.chain((graph) =>
  fc.record({
    graph: fc.constant(graph),
    renamed: fc.subarray([...graph.nodeNames]),
  }),
);

/** The same graph with `renamed` nodes under new names (`formerly` the old ones), every reference followed. */
function renameNodes(graph: Graph, renamed: readonly string[]): Graph {
  // "-r" keeps a valid condition type (it ends with an alphanumeric) that no generated name has.
  const to = (name: string) => (renamed.includes(name) ? `${name}-r` : name);
  const data = graph.toData();
  return loadGraph({
    ...data,
    entry: to(graph.entry),
    nodes: data.nodes.map((node) => ({
      ...node,
      name: to(node.name),
      ...(node.children === undefined ? {} : { children: node.children.map(to) }),
      ...(node.triggers === undefined ? {} : { triggers: node.triggers.map(to) }),
      ...(renamed.includes(node.name) ? { formerly: [node.name] } : {}),
    })),
  });
}

describe('diffGraphs over random valid graphs', () => {
  test('a graph against itself, or its own plain data loaded again, is the same', () => {
    fc.assert(
      fc.property(graphArb, (graph) => {
        for (const next of [graph, loadGraph(JSON.parse(JSON.stringify(graph.toData())))]) {
          const diff = diffGraphs(graph, next);
          expect(diff.same).toBe(true);
          expect(diff.nodes).toEqual({ added: [], removed: [], renamed: [] });
          expect(diff.changed).toEqual([]);
          expect(diff.entry).toBeUndefined();
        }
      }),
    );
  });

  test('renaming nodes reports exactly those renames and nothing else', () => {
    fc.assert(
      fc.property(renameCaseArb, ({ graph, renamed }) => {
        const next = renameNodes(graph, renamed);
        const diff = diffGraphs(graph, next);
        const expected = graph.nodeNames.filter((name) => renamed.includes(name)).map((name) => ({ from: name, to: `${name}-r` }));
        expect(diff.nodes).toEqual({ added: [], removed: [], renamed: expected });
        expect(diff.changed).toEqual([]);
        expect(diff.entry).toBeUndefined();
        expect(diff.same).toBe(renamed.length === 0);
      }),
    );
  });

  test('two graphs of the same nodes are the same exactly when their revisions are equal: no change goes unreported', () => {
    fc.assert(
      fc.property(graphPairArb, ([old, next]) => {
        const diff = diffGraphs(old, next);
        expect(diff.same).toBe(old.revision === next.revision);
        expect(diff.nodes).toEqual({ added: [], removed: [], renamed: [] });
      }),
    );
  });
});
