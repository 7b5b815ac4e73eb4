// Random graphs, each with two random revisions of its objects (ids kept, dropped or added; kind, name,
// lifetime and deletion policy changed or not): for a CR at any node holding the first revision's
// objects, what `okt graph check` says its objects do (objectsOutlook) is what the operator's plan
// does (planObjects over the second revision's render), and what `okt graph diff` says of each
// declaration (objectFates) agrees with both.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { objectsOutlook, planObjects } from '../../src/controller/lifecycle/objects/inventory.ts';
import { diffGraphs, loadGraph, renderObjects, type ObjectData, type ObjectOwner } from '../../src/graph/index.ts';
import type { InventoryEntry } from '../../src/kube/lifecycle-resource.ts';
import { graphArb } from '../fixtures/graph-arbitrary.ts';

const declarationArb = (nodes: readonly string[]) => fc.record({
  present: fc.boolean(),
  kind: fc.constantFrom('ConfigMap', 'Secret'),
  name: fc.constantFrom('a', 'b', undefined),
  during: fc.option(fc.constantFrom(...nodes), { nil: undefined }),
  keep: fc.boolean(),
});

const scenarioArb = graphArb.chain((graph) => fc.record({
  graph: fc.constant(graph),
  before: fc.array(declarationArb(graph.nodeNames), { minLength: 4, maxLength: 4 }),
  after: fc.array(declarationArb(graph.nodeNames), { minLength: 4, maxLength: 4 }),
}));

type Declared = fc.Arbitrary<{ present: boolean; kind: string; name: string | undefined; during: string | undefined; keep: boolean }> extends fc.Arbitrary<infer T> ? T : never;

/** The declarations present, ids o0..o3; two of one kind and name are made distinct by their id in the name. */
function objectsOf(declared: readonly Declared[]): ObjectData[] {
  return declared.flatMap((d, i) => (d.present ? [{
    id: `o${i}`, apiVersion: 'v1', kind: d.kind, name: `${d.name ?? 'x'}-${i}`,
    ...(d.during === undefined ? {} : { during: d.during }),
    ...(d.keep ? { deletion: 'Keep' as const } : {}),
    render: () => ({ apiVersion: 'v1', kind: d.kind }),
  }] : []));
}

const key = (e: InventoryEntry) => `${e.id} ${e.kind} ${e.name}`;
const keys = (entries: readonly InventoryEntry[]) => entries.map(key).sort();

test('okt graph check says of a CR\'s objects what the operator then does, and okt graph diff agrees per declaration', () => {
  fc.assert(
    fc.property(scenarioArb, ({ graph: shape, before, after }) => {
      const old = loadGraph({ ...shape.toData(), objects: objectsOf(before) });
      const next = loadGraph({ ...shape.toData(), objects: objectsOf(after) });
      const owner: ObjectOwner = { apiVersion: 'okt.dev/v1', kind: 'Thing', metadata: { name: 'cr', namespace: 'ns', uid: 'u' } };
      const fates = diffGraphs(old, next).objectFates ?? [];
      for (const node of shape.nodeNames) {
        const inventory = planObjects([], renderObjects(old, owner, node).objects).settled;
        const outlook = objectsOutlook(next, 'cr', node, inventory);
        const plan = planObjects(inventory, renderObjects(next, owner, node).objects);
        expect(keys(outlook.pruned)).toEqual(keys(plan.prune));
        expect(keys(outlook.made)).toEqual(keys((plan.record ?? inventory).slice(inventory.length)));
        expect(keys([...outlook.kept, ...outlook.pruned])).toEqual(keys(inventory));
        const said = (list: 'kept' | 'made' | 'pruned') => fates.filter((f) => f[list].some((m) => m.from === node)).map((f) => f.id).sort();
        expect(said('kept')).toEqual(outlook.kept.map((e) => e.id).sort());
        expect(said('made')).toEqual(outlook.made.map((e) => e.id).sort());
        expect(said('pruned')).toEqual(outlook.pruned.map((e) => e.id).sort());
        // A prune lets go as the diff says: disowned where the policy is Keep.
        for (const entry of outlook.pruned) expect(entry.deletion ?? 'Delete').toBe(fates.find((f) => f.id === entry.id)!.deletion);
      }
    }),
  );
});
