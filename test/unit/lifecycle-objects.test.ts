// The objects a node makes, the operator's pure part: the inventory against what the node wants
// (recorded before created, unchanged renders not applied again, pruned what is no longer wanted),
// the order the deletion path's end lets go of them in, their resources, and the RBAC they need.
import type { V1ConfigMap, V1Secret, V1Service } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, test, vi } from 'vitest';
import { defineGraph, renderObjects, type ObjectDeclaration, type ObjectOwner } from '../../src/graph/index.ts';
import { planObjects, renderHash } from '../../src/controller/lifecycle/objects/inventory.ts';
import { reverseDeclarationOrder } from '../../src/controller/lifecycle/objects/prune.ts';
import { FIGHT_BACKOFF_MS, FIGHT_REPAIRS, FIGHT_WINDOW_MS, OwnedObjects, type Drift } from '../../src/controller/lifecycle/objects/owned.ts';
import type { InventoryEntry } from '../../src/kube/lifecycle-resource.ts';
import { lifecycleStatusSchema } from '../../src/kube/lifecycle-resource.ts';
import { generateManifests } from '../../src/kube/manifests.ts';
import { loadGraphFile } from '../../src/cli/graph-module.ts';
import { kindResource, type KubeObject, type KubeTransport, type WatchEvent } from '../../src/kube/transport/index.ts';

const appGraph = (more: ObjectDeclaration<'Start' | 'Running' | 'Stopped'>[] = []) => defineGraph({
  name: 'app',
  entry: 'Start',
  nodes: { Start: { children: ['Running'] }, Running: { children: ['Stopped'] }, Stopped: {} },
  objects: [...more,
    { id: 'service', apiVersion: 'v1', kind: 'Service', render: (): V1Service => ({ apiVersion: 'v1', kind: 'Service', spec: { ports: [{ port: 80 }] } }) },
    { id: 'config', apiVersion: 'v1', kind: 'ConfigMap', name: 'config', during: 'Running', render: ({ node }): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', data: { node } }) },
    { id: 'secret', apiVersion: 'v1', kind: 'Secret', name: 'keys', deletion: 'Keep', render: (): V1Secret => ({ apiVersion: 'v1', kind: 'Secret', stringData: { key: 'k' } }) },
  ],
});
const graph = appGraph();
const owner: ObjectOwner = { apiVersion: 'okt.dev/v1', kind: 'App', metadata: { name: 'db', namespace: 'team', uid: 'uid-1' } };
const at = (node: string) => renderObjects(graph, owner, node).objects;
/** The inventory once `node`'s objects were applied. */
const settledAt = (node: string, inventory: InventoryEntry[] = []) => planObjects(inventory, at(node)).settled;

describe('planObjects', () => {
  test('a first look records every object without a hash before applying any of them', () => {
    const plan = planObjects([], at('Running'));
    expect(plan.record).toEqual([
      { id: 'service', apiVersion: 'v1', kind: 'Service', name: 'db' },
      { id: 'config', apiVersion: 'v1', kind: 'ConfigMap', name: 'db-config' },
      { id: 'secret', apiVersion: 'v1', kind: 'Secret', name: 'db-keys', deletion: 'Keep' },
    ]);
    expect(plan.apply.map((w) => w.entry.id)).toEqual(['service', 'config', 'secret']);
    expect(plan.settled.every((e) => e.hash === renderHash(at('Running').find((r) => r.declaration.id === e.id)!.object))).toBe(true);
  });

  test('an unchanged render is neither recorded nor applied again; a changed one is applied, not recorded again', () => {
    const running = settledAt('Running');
    expect(planObjects(running, at('Running'))).toMatchObject({ record: undefined, apply: [], prune: [], settled: running, unchanged: [{ entry: { id: 'service' } }, { entry: { id: 'config' } }, { entry: { id: 'secret' } }] });
    const changed = renderObjects(graph, { ...owner, metadata: { ...owner.metadata, labels: { tier: 'gold' } } }, 'Running').objects;
    expect(planObjects(running, changed)).toMatchObject({ record: undefined, apply: [], prune: [] });
    const edited = running.map((e) => (e.id === 'config' ? { ...e, hash: 'an older render' } : e));
    expect(planObjects(edited, at('Running'))).toMatchObject({ record: undefined, prune: [], apply: [{ entry: { id: 'config' } }] });
  });

  test('okt\'s fields recorded by an apply are kept while the render is unchanged, dropped with a changed render (its apply records them anew)', () => {
    const applied = settledAt('Running').map((e) => ({ ...e, fields: `fields of ${e.id}` }));
    const again = planObjects(applied, at('Running'));
    expect(again.settled).toEqual(applied);
    expect(again.unchanged.map((w) => w.entry.fields)).toEqual(['fields of service', 'fields of config', 'fields of secret']);
    const edited = applied.map((e) => (e.id === 'config' ? { ...e, hash: 'an older render' } : e));
    const plan = planObjects(edited, at('Running'));
    expect(plan.apply.map((w) => [w.entry.id, w.entry.fields])).toEqual([['config', undefined]]);
    expect(plan.settled.map((e) => e.fields)).toEqual(['fields of service', undefined, 'fields of secret']);
  });

  test('an object recorded but never applied (the operator stopped between the two) is applied at the next look', () => {
    const recorded = planObjects([], at('Running')).record!;
    expect(planObjects(recorded, at('Running')).apply.map((w) => w.entry.id)).toEqual(['service', 'config', 'secret']);
  });

  test('leaving a node prunes its objects, and only those; the graph\'s stay unapplied', () => {
    const plan = planObjects(settledAt('Running'), at('Stopped'));
    expect(plan.record).toBeUndefined();
    expect(plan.apply).toEqual([]);
    expect(plan.prune.map((e) => e.name)).toEqual(['db-config']);
    expect(plan.settled.map((e) => e.id)).toEqual(['service', 'secret']);
  });

  test('invariants: what is applied was recorded first, a settled inventory needs nothing more, nothing is both pruned and wanted, okt\'s fields go with their render', () => {
    const nodes = fc.constantFrom('Start', 'Running', 'Stopped');
    fc.assert(fc.property(fc.array(nodes, { minLength: 1, maxLength: 6 }), fc.array(fc.boolean(), { minLength: 6, maxLength: 6 }), (walk, stopsAfterRecord) => {
      let inventory: InventoryEntry[] = [];
      walk.forEach((node, i) => {
        const plan = planObjects(inventory, at(node));
        const recorded = plan.record ?? inventory;
        for (const w of plan.apply) expect(recorded.some((e) => e.id === w.entry.id && e.name === w.entry.name)).toBe(true);
        for (const p of plan.prune) expect(plan.settled.some((e) => e.id === p.id && e.name === p.name)).toBe(false);
        // okt's fields are kept only with the render they were recorded with; one applied gets them anew.
        for (const e of plan.settled) {
          const applied = plan.apply.some((w) => w.entry.id === e.id);
          expect(e.fields).toBe(applied ? undefined : inventory.find((known) => known.id === e.id && known.hash === e.hash)?.fields);
        }
        // An operator stopped after the record leaves the recorded inventory; else the settled one, each applied object's fields recorded.
        inventory = stopsAfterRecord[i] ? recorded : plan.settled.map((e) => ({ ...e, fields: e.fields ?? `fields of ${e.hash}` }));
      });
      const last = walk.at(-1)!;
      const settled = planObjects(planObjects(inventory, at(last)).settled, at(last));
      expect(settled.record === undefined && settled.apply.length === 0 && settled.prune.length === 0).toBe(true);
    }));
  });
});

test('the deletion path\'s end lets go in reverse order of declaration, an id no longer declared first', () => {
  const inventory = [...settledAt('Running'), { id: 'gone', apiVersion: 'v1', kind: 'ConfigMap', name: 'db-old' }];
  expect(reverseDeclarationOrder(graph, inventory).map((e) => e.id)).toEqual(['gone', 'secret', 'config', 'service']);
});

test('a status of an earlier okt, without status.objects, still parses; one with it keeps it', () => {
  const status = { state: 'Start', observedGeneration: 1, transition: 0, sequence: 0, path: ['Start'], conditions: [] };
  expect(lifecycleStatusSchema.parse(status).objects).toBeUndefined();
  expect(lifecycleStatusSchema.parse({ ...status, objects: settledAt('Running') }).objects).toEqual(settledAt('Running'));
});

test('a graph module loaded as okt run loads it keeps its objects\' render functions (the operator renders with them)', async () => {
  const { graph: loaded } = await loadGraphFile(fileURLToPath(new URL('../fixtures/object-graph.ts', import.meta.url)));
  expect(loaded.objects.length).toBeGreaterThan(0);
  expect(loaded.objects.every((o) => typeof o.render === 'function')).toBe(true);
  expect(renderObjects(loaded, owner, 'Running').problems).toEqual([]);
});

test('kindResource: the plural Kubernetes guesses for a kind, in its group and version', () => {
  expect(kindResource('v1', 'ConfigMap')).toEqual({ group: '', version: 'v1', plural: 'configmaps' });
  expect(kindResource('networking.k8s.io/v1', 'Ingress')).toEqual({ group: 'networking.k8s.io', version: 'v1', plural: 'ingresses' });
  expect(kindResource('networking.k8s.io/v1', 'NetworkPolicy').plural).toBe('networkpolicies');
  expect(kindResource('v1', 'PersistentVolumeClaim').plural).toBe('persistentvolumeclaims');
});

test('okt manifests grants the kinds the graph makes, one rule per API group, and nothing for a graph that makes none', () => {
  const names = { group: 'okt.dev', version: 'v1', kind: 'App' };
  const options = { namespace: 'ops', createNamespace: false, image: 'okt:test', sidecarToken: { name: 'tok', key: 'k' } };
  const rules = (docs: Record<string, unknown>[]) => (docs.find((d) => d.kind === 'ClusterRole') as { rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[] }).rules;
  const withJob = appGraph([{ id: 'job', apiVersion: 'batch/v1', kind: 'Job', render: () => ({ apiVersion: 'batch/v1', kind: 'Job' }) }]);
  expect(rules(generateManifests(withJob, names, options)).slice(-2)).toEqual([
    { apiGroups: ['batch'], resources: ['jobs'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
    { apiGroups: [''], resources: ['configmaps', 'secrets', 'services'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
  ]);
  const none = defineGraph({ name: 'bare', entry: 'Start', nodes: { Start: {} } });
  expect(rules(generateManifests(none, names, options)).at(-1)).toEqual({ apiGroups: [''], resources: ['namespaces'], verbs: ['get'] });
});

describe('a fight over an object okt puts back', () => {
  const fightGraph = defineGraph({ name: 'fight', entry: 'A', nodes: { A: {} } });
  const drift = { kind: 'changed', manager: 'fighter' } as const;

  test('FIGHT_REPAIRS re-applies within the window, then none for FIGHT_BACKOFF_MS, naming the manager; a restart\'s first check counts for none', () => {
    let now = 1_000_000;
    const owned = new OwnedObjects({ graph: fightGraph, transport: {} as KubeTransport, owner: { apiVersion: 'okt.dev/v1', kind: 'Site' }, enqueue: () => undefined, now: () => now });
    const repair = (d: Drift = drift) => owned.mayRepair('ns/web', 'v1', 'ConfigMap', 'ns', 'web-config', d);
    expect(repair({ kind: 'changed', manager: undefined })).toBeUndefined();
    for (let i = 0; i < FIGHT_REPAIRS; i++) {
      expect(repair()).toBeUndefined();
      now += 1_000;
    }
    expect(repair()).toEqual({ manager: 'fighter', until: now + FIGHT_BACKOFF_MS });
    now += FIGHT_BACKOFF_MS - 1;
    expect(repair()?.manager).toBe('fighter');
    now += 1;
    expect(repair()).toBeUndefined();
    // Re-applies further apart than the window are no fight, however many.
    for (let i = 0; i < 3 * FIGHT_REPAIRS; i++) {
      now += FIGHT_WINDOW_MS / (FIGHT_REPAIRS - 1);
      expect(repair({ kind: 'deleted' })).toBeUndefined();
    }
    owned.close();
  });
});

describe('the owned objects\' cache after okt\'s own apply', () => {
  test('an object okt applied is judged as the apply returned it until the cache\'s watch brings that write, then as the cache holds it', async () => {
    const configGraph = defineGraph({
      name: 'cfg',
      entry: 'A',
      nodes: { A: {} },
      objects: [{ id: 'config', apiVersion: 'v1', kind: 'ConfigMap', name: 'config', render: ({ node }): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', data: { node } }) }],
    });
    const configMap = (resourceVersion: string, node: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'ns', name: 'db-config', resourceVersion }, data: { node } });
    // The watch stream: events the test sends, until the informer stops.
    const sent: WatchEvent[] = [];
    let wake: (() => void) | undefined;
    const send = (event: WatchEvent) => {
      sent.push(event);
      wake?.();
    };
    const transport = {
      list: async () => ({ items: [configMap('5', 'A')], metadata: { resourceVersion: '5' } }),
      async *watch(_resource: unknown, { signal }: { signal: AbortSignal }) {
        while (!signal.aborted) {
          const event = sent.shift();
          if (event !== undefined) yield event;
          else await new Promise<void>((resolve) => { wake = resolve; signal.addEventListener('abort', () => resolve(), { once: true }); });
        }
      },
    } as unknown as KubeTransport;
    const owned = new OwnedObjects({ graph: configGraph, transport, owner: { apiVersion: 'okt.dev/v1', kind: 'App' }, enqueue: () => undefined });
    const [informer] = owned.informers;
    informer!.start();
    await informer!.waitForSync();
    const live = () => owned.cached('v1', 'ConfigMap', 'ns', 'db-config');
    expect(live()).toMatchObject({ kind: 'live', object: { data: { node: 'A' } } });
    owned.applied('v1', 'ConfigMap', configMap('7', 'B') as KubeObject);
    expect(live()).toMatchObject({ kind: 'live', object: { metadata: { resourceVersion: '7' }, data: { node: 'B' } } });
    // An older event (someone's write before okt's apply) does not take its place.
    send({ type: 'MODIFIED', object: configMap('6', 'C') as KubeObject });
    await vi.waitFor(() => expect(informer!.resourceVersion).toBe('6'));
    expect(live()).toMatchObject({ kind: 'live', object: { metadata: { resourceVersion: '7' } } });
    send({ type: 'MODIFIED', object: configMap('8', 'B') as KubeObject });
    await vi.waitFor(() => expect(informer!.resourceVersion).toBe('8'));
    expect(live()).toMatchObject({ kind: 'live', object: { metadata: { resourceVersion: '8' } } });
    await informer!.stop();
    owned.close();
  });
});
