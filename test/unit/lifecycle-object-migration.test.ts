// A graph revision under CRs that have objects, the pure part: which graph makes a CR's objects (the
// revision it is on, while the operator serves it), what a revision does to each declaration's
// objects (`okt graph diff`) and to one CR's inventory (`okt graph check --against-cluster`), and how
// an object a revision no longer declares is let go of (as declared when recorded: a kept one disowned).
import { describe, expect, test } from 'vitest';
import { formatGraphDiff } from '../../src/cli/graph-diff.ts';
import { NO_COLORS } from '../../src/cli/output.ts';
import { createLifecycleModel, objectsGraph } from '../../src/controller/lifecycle/model.ts';
import { deletionPolicy, objectsOutlook, planObjects } from '../../src/controller/lifecycle/objects/inventory.ts';
import { defineGraph, diffGraphs, loadGraph, renderObjects, type ObjectOwner } from '../../src/graph/index.ts';
import type { InventoryEntry } from '../../src/kube/lifecycle-resource.ts';
import { generateManifests } from '../../src/kube/manifests.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { RELAY_OBJECT_FATES, relayRevision1, relayRevision2 } from '../fixtures/object-revisions.ts';

const v1 = relayRevision1;
const v2 = relayRevision2();
const owner: ObjectOwner = { apiVersion: 'okt.dev/v1', kind: 'Relay', metadata: { name: 'r', namespace: 'team', uid: 'uid-1' } };
/** The inventory of a CR at `node` of revision 1 once its objects were applied. */
const inventoryAt = (node: string): InventoryEntry[] => planObjects([], renderObjects(v1, owner, node).objects).settled;

describe('the graph that makes a CR\'s objects', () => {
  test('the revision the CR is on while the operator serves it (its own, or an earlier one it lists); else none: its objects stay as they are until it migrates', () => {
    const served = createLifecycleModel(v2);
    expect(objectsGraph(served, { graphRevision: v2.revision, state: 'Backup' })).toBe(v2);
    // Under the Manual policy a CR stays on revision 1, still driven there: revision 1's objects.
    expect(objectsGraph(served, { graphRevision: v1.revision, state: 'Stopping' })).toBe(v2.previous[0]);
    const notServed = createLifecycleModel(loadGraph({ ...v2.toData(), previous: [], objects: [] }));
    // Waiting for its action to end before it migrates, or stranded: nothing applied, nothing pruned.
    expect(objectsGraph(notServed, { graphRevision: v1.revision, state: 'Stopping' })).toBeUndefined();
    expect(objectsGraph(served, { graphRevision: v2.revision, state: 'Stopping' })).toBeUndefined();
  });
});

test('a CR the Manual policy keeps on revision 1 waits there for revision 1\'s objects before its action starts, as the operator makes them', () => {
  const sim = new LifecycleSim(relayRevision1, 'Running');
  sim.objectsAt = () => ({ kind: 'ready' });
  sim.settle();
  sim.upgrade(relayRevision2('Manual'));
  sim.objectsAt = (node) => (node === 'Servicing' ? { kind: 'inProgress', object: 'ConfigMap r-work (object "work")', message: 'not applied yet' } : { kind: 'ready' });
  sim.setDesired('Servicing');
  const started = sim.started.size;
  const entered = sim.reconcile();
  expect(sim.status).toMatchObject({ state: 'Servicing', graphRevision: v1.revision });
  // Revision 2 has no Servicing, revision 1 makes `work` there: the start waits for it.
  expect(entered.startOperation).toBeUndefined();
  expect(entered.again).toBe(true);
  sim.reconcile();
  expect(sim.started.size).toBe(started);
  sim.objectsAt = () => ({ kind: 'ready' });
  expect(sim.reconcile().startOperation?.node).toBe('Servicing');
});

describe('what a revision does to the objects of the CRs it migrates', () => {
  test('a renamed node\'s objects are kept (the same object), a removed node\'s pruned, the node it maps to makes its own', () => {
    const { objectFates } = diffGraphs(v1, v2);
    const everyNode = [['Start', 'Start'], ['Running', 'Running'], ['Servicing', 'Backup'], ['Stopping', 'Draining'], ['End', 'End']].map(([from, to]) => ({ from, to }));
    expect(objectFates).toEqual([
      { id: 'service', declared: { id: 'service', apiVersion: 'v1', kind: 'Service' }, deletion: 'Delete', kept: everyNode, made: [], pruned: [] },
      { id: 'work', declared: { id: 'work', apiVersion: 'v1', kind: 'ConfigMap', name: 'work', during: 'Backup' }, deletion: 'Delete', kept: [{ from: 'Servicing', to: 'Backup' }], made: [], pruned: [] },
      { id: 'drain', declared: { id: 'drain', apiVersion: 'v1', kind: 'ConfigMap', name: 'drain', during: 'Draining' }, deletion: 'Delete', kept: [], made: [{ from: 'Stopping', to: 'Draining' }], pruned: [] },
      { id: 'stop', declared: null, deletion: 'Delete', kept: [], made: [], pruned: [{ from: 'Stopping', to: 'Draining' }] },
      { id: 'keys', declared: null, deletion: 'Keep', kept: [], made: [], pruned: [{ from: 'Stopping', to: 'Draining' }] },
    ]);
    expect(formatGraphDiff(diffGraphs(v1, v2), NO_COLORS).split('\n').filter((line) => line.startsWith('objects of') || line.startsWith('  object'))).toEqual(RELAY_OBJECT_FATES);
  });

  test('another name or kind under one id is another object (made, the old one pruned); another version of its group is the same one', () => {
    const graph = (apiVersion: string, kind: string, name: string) => defineGraph({
      name: 'g', entry: 'S', nodes: { S: { children: ['E'] }, E: {} },
      objects: [{ id: 'x', apiVersion, kind, name, render: () => ({ apiVersion, kind }) }],
    });
    const base = graph('example.com/v1', 'Widget', 'a');
    const moves = [{ from: 'S', to: 'S' }, { from: 'E', to: 'E' }];
    expect(diffGraphs(base, graph('example.com/v2', 'Widget', 'a')).objectFates).toMatchObject([{ kept: moves, made: [], pruned: [] }]);
    for (const other of [graph('example.com/v1', 'Widget', 'b'), graph('example.com/v1', 'Gadget', 'a'), graph('other.com/v1', 'Widget', 'a')]) {
      expect(diffGraphs(base, other).objectFates).toMatchObject([{ kept: [], made: moves, pruned: moves }]);
    }
    // The operator agrees: a new version of the group is applied over the recorded object, which is not pruned.
    const cr = { ...owner, metadata: { ...owner.metadata, name: 'w' } };
    const inventory = planObjects([], renderObjects(base, cr, 'S').objects).settled;
    const plan = planObjects(inventory, renderObjects(graph('example.com/v2', 'Widget', 'a'), cr, 'S').objects);
    expect(plan.apply.map((w) => w.entry.apiVersion)).toEqual(['example.com/v2']);
    expect(plan.prune).toEqual([]);
  });

  test('a graph without objects in either revision says nothing of them', () => {
    const plain = loadGraph({ ...v1.toData(), objects: [] });
    expect(diffGraphs(plain, plain)).not.toHaveProperty('objectFates');
  });
});

describe('what a CR\'s objects do where the migration puts it', () => {
  test('at a renamed node: all kept; at a removed one, once at the node it maps to: its objects made, the removed node\'s pruned (a kept one as kept)', () => {
    expect(objectsOutlook(v2, 'r', 'Backup', inventoryAt('Servicing'))).toEqual({ kept: inventoryAt('Servicing'), pruned: [], made: [] });
    const atStopping = inventoryAt('Stopping');
    expect(atStopping.map((e) => [e.id, e.deletion])).toEqual([['service', undefined], ['stop', undefined], ['keys', 'Keep']]);
    expect(objectsOutlook(v2, 'r', 'Draining', atStopping)).toEqual({
      kept: [atStopping[0]],
      pruned: [atStopping[1], atStopping[2]],
      made: [{ id: 'drain', apiVersion: 'v1', kind: 'ConfigMap', name: 'r-drain' }],
    });
  });

  test('an object a revision no longer declares goes as it was declared when recorded; one still declared, as declared now', () => {
    const [, stop, keys] = inventoryAt('Stopping');
    expect(deletionPolicy(v2, keys!)).toBe('Keep');
    expect(deletionPolicy(v2, stop!)).toBe('Delete');
    const keepsStop = loadGraph({ ...v1.toData(), objects: [{ id: 'stop', apiVersion: 'v1', kind: 'ConfigMap', name: 'stop', deletion: 'Keep' }] });
    expect(deletionPolicy(keepsStop, stop!)).toBe('Keep');
  });
});

test('okt manifests grants the kinds of the revisions the graph still serves too: their CRs\' objects are made, and pruned, with them', () => {
  const options = { namespace: 'ops', createNamespace: false, image: 'okt:test', sidecarToken: { name: 'tok', key: 'k' } };
  const docs = generateManifests(v2, { group: 'okt.dev', version: 'v1', kind: 'Relay' }, options);
  const rules = (docs.find((d) => d.kind === 'ClusterRole') as { rules: { apiGroups: string[]; resources: string[] }[] }).rules;
  // Revision 2 makes Services and ConfigMaps; revision 1, which it lists in previous, a Secret too.
  expect(rules.at(-1)).toMatchObject({ apiGroups: [''], resources: ['configmaps', 'secrets', 'services'] });
});
