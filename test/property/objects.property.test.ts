// Random graphs declaring random objects (the graph's, a node's, spans between a node and one it
// reaches), rendered for a random CR at every node: the rendering is deterministic; every object
// carries the CR's owner reference (its one controller), okt's labels, its declared name and the CR's
// namespace; and exactly the declarations whose lifetime holds the node are rendered.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { loadGraph, OBJECT_LABELS, objectName, renderObjects, type Graph, type ObjectData, type ObjectOwner } from '../../src/graph/index.ts';
import { graphArb } from '../fixtures/graph-arbitrary.ts';

type Lifetime = { kind: 'graph' } | { kind: 'node'; node: string } | { kind: 'span'; from: string; until: string };

/** Nodes reachable from `start` (itself included) without going through `barrier` (which is reached, not passed). */
function reachable(graph: Graph, start: string, barrier?: string): Set<string> {
  const seen = new Set([start]);
  const stack = [start];
  while (stack.length > 0) {
    const at = stack.pop()!;
    if (at === barrier) continue;
    for (const child of graph.node(at).children) {
      if (!seen.has(child)) {
        seen.add(child);
        stack.push(child);
      }
    }
  }
  return seen;
}

/** The oracle: a span holds a node reached after its start without leaving its end, from which its end can still be reached. */
function holds(graph: Graph, lifetime: Lifetime, at: string): boolean {
  if (lifetime.kind === 'graph') return true;
  if (lifetime.kind === 'node') return lifetime.node === at;
  return reachable(graph, lifetime.from, lifetime.until).has(at) && reachable(graph, at).has(lifetime.until);
}

const scenarioArb = graphArb.chain((graph) => {
  const nodeArb = fc.constantFrom(...graph.nodeNames);
  const lifetimeArb: fc.Arbitrary<Lifetime> = fc.oneof(
    fc.constant({ kind: 'graph' as const }),
    nodeArb.map((node) => ({ kind: 'node' as const, node })),
    nodeArb.chain((from) => fc.constantFrom(...reachable(graph, from)).map((until) => ({ kind: 'span' as const, from, until }))),
  );
  return fc.record({
    graph: fc.constant(graph),
    lifetimes: fc.array(fc.tuple(lifetimeArb, fc.boolean()), { maxLength: 8 }),
    owner: fc.record({ name: fc.stringMatching(/^[a-z][a-z0-9-]{0,20}[a-z0-9]$/), namespace: fc.stringMatching(/^[a-z][a-z0-9]{0,10}$/), uid: fc.uuid() }),
    labels: fc.dictionary(fc.stringMatching(/^[a-z]{1,8}$/), fc.stringMatching(/^[a-z0-9]{0,8}$/), { maxKeys: 3 }),
  });
});

test('objects: rendered deterministically, owned and labelled, and only within their lifetime', () => {
  fc.assert(
    fc.property(scenarioArb, ({ graph: shape, lifetimes, owner: meta, labels }) => {
      const objects: ObjectData[] = lifetimes.map(([lifetime, named], i) => ({
        id: `o${i}`,
        apiVersion: 'v1',
        kind: 'ConfigMap',
        ...(named || i > 0 ? { name: `part-${i}` } : {}),
        ...(lifetime.kind === 'graph' ? {} : { during: lifetime.kind === 'node' ? lifetime.node : { from: lifetime.from, until: lifetime.until } }),
        render: ({ node, metadata }: { node: string; metadata: { uid: string } }) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { labels }, data: { node, owner: metadata.uid } }),
      }));
      const graph = loadGraph({ ...shape.toData(), objects });
      const owner: ObjectOwner = { apiVersion: 'okt.dev/v1', kind: 'Thing', metadata: meta };
      for (const at of graph.nodeNames) {
        const rendering = renderObjects(graph, owner, at);
        expect(rendering.problems).toEqual([]);
        expect(renderObjects(graph, owner, at)).toEqual(rendering);
        const expected = lifetimes.flatMap(([lifetime], i) => (holds(graph, lifetime, at) ? [`o${i}`] : []));
        expect(rendering.objects.map((o) => o.declaration.id)).toEqual(expected);
        for (const { declaration, object } of rendering.objects) {
          expect(object.metadata?.name).toBe(objectName(meta.name, declaration.name));
          expect(object.metadata?.namespace).toBe(meta.namespace);
          expect(object.metadata?.ownerReferences).toEqual([{ apiVersion: 'okt.dev/v1', kind: 'Thing', name: meta.name, uid: meta.uid, controller: true }]);
          expect(object.metadata?.labels).toEqual({ ...labels, [OBJECT_LABELS.ownerUid]: meta.uid, [OBJECT_LABELS.objectId]: declaration.id, [OBJECT_LABELS.graph]: graph.name });
        }
      }
      // A span holds both its ends.
      for (const [lifetime] of lifetimes) {
        if (lifetime.kind === 'span') expect([holds(graph, lifetime, lifetime.from), holds(graph, lifetime, lifetime.until)]).toEqual([true, true]);
      }
    }),
  );
});
