// The objects a node makes, on a real API server (objects that need no node: Service, Secret,
// ConfigMap): applied server-side under okt's field manager with okt's labels and the CR as their
// controller, recorded in status.objects, not written again while their render is unchanged, pruned
// on leaving their node, deleted (or, kept, disowned) at the end of the deletion path before the CR
// goes, a refused apply said on the CR, and an operator killed mid-walk leaving no orphan.
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, CustomObjectsApi, type V1ObjectMeta } from '@kubernetes/client-node';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startNoopSidecar, type NoopSidecar } from '../../sidecar/noop.ts';
import { siteGraph } from '../fixtures/object-graph.ts';
import { fcRuns } from '../fixtures/fast-check.ts';
import { e2eKubeConfig, httpStatusOf, kubectl, mergePatch, applyGraphCrd } from './helpers/index.ts';
import { generateRbac } from '../../src/kube/rbac.ts';
import type { KubeTransport } from '../../src/kube/transport/index.ts';
import { createLogger } from '../../src/controller/index.ts';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { conditionOf, lifecycleObjects, startLocalOperator, waitForObject, waitForObjectGone, type LocalOperator, type LifecycleObject } from './helpers/lifecycle.ts';
import { killHard, spawnOperator } from './helpers/operator-process.ts';
import { waitFor } from './helpers/wait.ts';

const SITES = { group: 'okt.dev', version: 'v1alpha1', plural: 'sites', kind: 'Site' } as const;
const kc = e2eKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const sites = lifecycleObjects(kc, SITES);
let local: LocalOperator;

beforeAll(async () => {
  await applyGraphCrd(kc, siteGraph, SITES);
  local = await startLocalOperator(kc, { graph: siteGraph, resource: SITES, namespacePrefix: 'okt-objects' });
});
afterAll(async () => local?.stop());

const readyAt = (state: string) => (o: LifecycleObject) => o.status?.state === state && conditionOf(o, 'Ready')?.status === 'True' && conditionOf(o, 'ObjectsApplied')?.status === 'True';

/** The metadata of an object, or undefined when it does not exist. */
async function metadataOf(kind: 'Service' | 'Secret' | 'ConfigMap', namespace: string, name: string): Promise<V1ObjectMeta | undefined> {
  try {
    const read = { Service: () => core.readNamespacedService({ namespace, name }), Secret: () => core.readNamespacedSecret({ namespace, name }), ConfigMap: () => core.readNamespacedConfigMap({ namespace, name }) }[kind];
    return (await read()).metadata;
  } catch (error) {
    if (httpStatusOf(error) === 404) return undefined;
    throw error;
  }
}

/** Every Service, Secret and ConfigMap of the namespace that okt made for the CR of `uid`. */
async function madeFor(namespace: string, uid: string): Promise<string[]> {
  const labelSelector = `okt.dev/owner-uid=${uid}`;
  const lists = await Promise.all([core.listNamespacedService({ namespace, labelSelector }), core.listNamespacedSecret({ namespace, labelSelector }), core.listNamespacedConfigMap({ namespace, labelSelector })]);
  // List items carry no kind: each list says its own.
  const kinds = ['Service', 'Secret', 'ConfigMap'];
  return lists.flatMap((list, i) => list.items.map((item) => `${kinds[i]}${item.metadata?.name}`)).sort();
}

describe('the objects a node makes', () => {
  test('made with okt\'s labels, field manager and owner reference; unchanged ones not written again; a node\'s pruned on leaving it; all gone or disowned before the CR goes', async () => {
    const { namespace } = local;
    const created = await sites.create(namespace, 'web', { desiredState: 'Start', onLeaf: 'Keep' });
    const uid = created.metadata.uid;
    const atStart = await waitForObject(sites, namespace, 'web', 'Ready at Start, its objects applied', readyAt('Start'));
    // Each with the hash of its render and of the fields okt's apply owns in it.
    expect(atStart.status?.objects).toEqual([
      { id: 'service', apiVersion: 'v1', kind: 'Service', name: 'web', hash: expect.any(String), fields: expect.any(String) },
      { id: 'keys', apiVersion: 'v1', kind: 'Secret', name: 'web-keys', deletion: 'Keep', hash: expect.any(String), fields: expect.any(String) },
    ]);
    const service = (await metadataOf('Service', namespace, 'web'))!;
    expect(service.labels).toMatchObject({ 'okt.dev/owner-uid': uid, 'okt.dev/object-id': 'service', 'okt.dev/graph': 'site' });
    expect(service.ownerReferences).toEqual([{ apiVersion: 'okt.dev/v1alpha1', kind: 'Site', name: 'web', uid, controller: true }]);
    expect(service.managedFields?.map((f) => [f.manager, f.operation])).toEqual([['okt', 'Apply']]);

    await sites.patchSpec(namespace, 'web', { desiredState: 'Running' });
    const running = await waitForObject(sites, namespace, 'web', 'Ready at Running, its ConfigMap applied', (o) => readyAt('Running')(o) && o.status?.objects?.length === 3);
    expect((await metadataOf('ConfigMap', namespace, 'web-config'))?.labels?.['okt.dev/object-id']).toBe('config');
    // The Service's render did not change: it was not written again, whatever the looks in between.
    expect((await metadataOf('Service', namespace, 'web'))?.resourceVersion).toBe(service.resourceVersion);
    expect(running.status?.objects?.map((o) => o.id)).toEqual(['service', 'keys', 'config']);
    // Looks that change nothing (a label edit wakes the CR) apply nothing: no write per reconcile.
    const patches = local.operator.transport.counters.byVerb.patch;
    for (const n of [1, 2, 3]) await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject({ ...SITES, namespace, name: 'web', body: { metadata: { labels: { look: String(n) } } } }, mergePatch);
    await sleep(1_000);
    expect(local.operator.transport.counters.byVerb.patch).toBe(patches);

    await sites.patchSpec(namespace, 'web', { desiredState: 'Servicing' });
    await waitForObject(sites, namespace, 'web', 'Ready at Servicing, the ConfigMap pruned', (o) => readyAt('Servicing')(o) && o.status?.objects?.length === 2);
    expect(await metadataOf('ConfigMap', namespace, 'web-config')).toBeUndefined();

    await sites.remove(namespace, 'web');
    await waitForObjectGone(sites, namespace, 'web');
    // No garbage collector runs here (no kube-controller-manager): what is gone, okt deleted.
    expect(await metadataOf('Service', namespace, 'web')).toBeUndefined();
    const kept = await metadataOf('Secret', namespace, 'web-keys');
    expect(kept?.labels?.['okt.dev/object-id']).toBe('keys');
    expect(kept?.ownerReferences ?? []).toEqual([]);
  });

  test('leaving a node prunes every object of it, also past one a finalizer holds after its deletion', async () => {
    const { namespace } = local;
    await sites.create(namespace, 'drain', { desiredState: 'Draining', onLeaf: 'Keep' });
    await waitForObject(sites, namespace, 'drain', 'Ready at Draining, its objects applied', (o) => readyAt('Draining')(o) && o.status?.objects?.length === 4);
    await sites.patchSpec(namespace, 'drain', { desiredState: 'Running' });
    const running = await waitForObject(sites, namespace, 'drain', 'Ready at Running, Draining\'s objects pruned', (o) => readyAt('Running')(o) && o.status?.objects?.length === 3);
    expect(running.status?.objects?.map((o) => o.id)).toEqual(['service', 'keys', 'config']);
    // Pruned latest recorded first: the held one, then the other, which is not left behind for it.
    expect(await metadataOf('ConfigMap', namespace, 'drain-drain')).toBeUndefined();
    const held = await metadataOf('ConfigMap', namespace, 'drain-drain-held');
    expect(held?.deletionTimestamp).toBeDefined();
    await core.patchNamespacedConfigMap({ namespace, name: 'drain-drain-held', body: { metadata: { finalizers: null } } }, mergePatch);
  });

  test('an apply the API server refuses is said on the CR, naming the object and the API\'s message; the node\'s action waits', async () => {
    const { namespace, sidecar } = local;
    const created = await sites.create(namespace, 'refused', { desiredState: 'Stopping', onLeaf: 'Keep' });
    const refused = await waitForObject(sites, namespace, 'refused', 'ObjectsApplied=False', (o) => conditionOf(o, 'ObjectsApplied')?.status === 'False');
    // Tried again with the work queue's exponential backoff (client-go's: 5 ms, doubling), not in a loop at API-server speed.
    const applies = local.operator.transport.counters.byVerb.patch;
    await sleep(2_000);
    expect(local.operator.transport.counters.byVerb.patch - applies).toBeLessThan(12);
    const condition = conditionOf(refused, 'ObjectsApplied')!;
    expect(condition.reason).toBe('ApplyFailed');
    expect(condition.message).toContain('ConfigMap refused-refused (object "refused") was not applied: ');
    expect(condition.message).toContain('not a key!');
    // Recorded before the apply was tried: the inventory names it, without a hash (never applied).
    expect(refused.status?.objects?.find((o) => o.id === 'refused')).toEqual({ id: 'refused', apiVersion: 'v1', kind: 'ConfigMap', name: 'refused-refused' });
    expect(sidecar.sidecar.operations.get(`${created.metadata.uid}-${refused.status!.transition}`)).toBeUndefined();
    // Running's ConfigMap is not pruned while an apply of Stopping's objects fails.
    expect(refused.status?.objects?.map((o) => o.id)).toEqual(['service', 'keys', 'config', 'refused']);
    expect(await metadataOf('ConfigMap', namespace, 'refused-config')).toBeDefined();
  });
});

/** A failed wait says what the operator logged. */
async function withOutputOf<T>(operator: { output(): string }, wait: Promise<T>): Promise<T> {
  try {
    return await wait;
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}\noperator log (tail):\n${operator.output().slice(-4000)}`);
  }
}

describe('a CR whose sidecar okt refuses', () => {
  test('gets neither okt\'s finalizer nor any of its objects (nothing would wait to delete them)', async () => {
    const { namespace } = local;
    const { metadata: { uid } } = await sites.create(namespace, 'refused-sidecar', { desiredState: 'Running', sidecar: { url: 'http://127.0.0.1:9/' } });
    const seen = await waitForObject(sites, namespace, 'refused-sidecar', 'its sidecar refused', (o) => conditionOf(o, 'Ready')?.reason === 'SidecarNotAllowed');
    expect(seen.metadata.finalizers ?? []).toEqual([]);
    expect(await madeFor(namespace, uid)).toEqual([]);
    await sites.remove(namespace, 'refused-sidecar');
  });
});

/** Counts the operator's calls of `method` naming `name` from now on (the transport's own counters count every CR's: the refused CR above retries its own). */
function callsNaming(transport: KubeTransport, method: 'apply' | 'get', name: string): { count: number } {
  const seen = { count: 0 };
  const call = transport[method].bind(transport) as (...args: unknown[]) => Promise<unknown>;
  (transport as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
    if (JSON.stringify(args).includes(name)) seen.count += 1;
    return call(...args);
  };
  return seen;
}

describe('the objects kept as okt made them', () => {
  const owned = () => local.operator.lifecycle.owned!;

  test('one informer per kind the graph makes (a LIST and WATCH each), no GET per CR: an object deleted mid-walk, or at rest, is made again', async () => {
    const { namespace } = local;
    await sites.create(namespace, 'remade', { desiredState: 'Running', onLeaf: 'Keep' });
    // Mid-walk: the Service is deleted as soon as it is there, while the CR goes on to Running.
    await waitFor('the Service made', async () => ((await metadataOf('Service', namespace, 'remade')) === undefined ? undefined : true));
    await core.deleteNamespacedService({ namespace, name: 'remade' });
    await waitForObject(sites, namespace, 'remade', 'Ready at Running', (o) => readyAt('Running')(o) && o.status?.objects?.length === 3);
    await waitFor('the Service made again', async () => metadataOf('Service', namespace, 'remade'));
    // At rest (readiness reads nothing then): the ConfigMap deleted the way a user would, seen without a GET.
    const gets = callsNaming(local.operator.transport, 'get', 'remade');
    const before = (await metadataOf('ConfigMap', namespace, 'remade-config'))!;
    await kubectl(['delete', 'configmap', 'remade-config', '-n', namespace]);
    const again = await waitFor('the ConfigMap made again', async () => metadataOf('ConfigMap', namespace, 'remade-config'));
    expect(again.uid).not.toBe(before.uid);
    expect(again.labels?.['okt.dev/object-id']).toBe('config');
    // Seen by the caches, not asked for: ConfigMap, Secret and Service, one list each.
    expect(owned().informers.map((informer) => informer.stats.lists)).toEqual([1, 1, 1]);
    expect(gets.count).toBe(0);
    const ready = await waitForObject(sites, namespace, 'remade', 'ObjectsApplied=True', readyAt('Running'));
    expect(conditionOf(ready, 'ObjectsApplied')?.reason).toBe('Applied');
    // Put back, then left alone: no write per look.
    const applies = callsNaming(local.operator.transport, 'apply', 'remade');
    await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject({ ...SITES, namespace, name: 'remade', body: { metadata: { labels: { look: 'again' } } } }, mergePatch);
    await sleep(1_000);
    expect(applies.count).toBe(0);
    await sites.remove(namespace, 'remade');
  });

  test('a field okt renders, changed by `kubectl patch`, is put back; a field okt does not render stays its manager\'s', async () => {
    const { namespace } = local;
    await sites.create(namespace, 'edited', { desiredState: 'Running', onLeaf: 'Keep' });
    await waitForObject(sites, namespace, 'edited', 'Ready at Running', (o) => readyAt('Running')(o) && o.status?.objects?.length === 3);
    await kubectl(['patch', 'configmap', 'edited-config', '-n', namespace, '--type=merge', '-p', JSON.stringify({ data: { node: 'edited', theirs: 'kept' } })]);
    const put = await waitFor('data.node put back', async () => {
      const data = (await core.readNamespacedConfigMap({ namespace, name: 'edited-config' })).data;
      return data?.node === 'Running' ? data : undefined;
    });
    expect(put.theirs).toBe('kept');
    await sites.remove(namespace, 'edited');
  });

  test('another field manager writing a field okt owns back each time: a few re-applies, then a condition naming the object and the manager, not a loop of writes', async () => {
    const { namespace } = local;
    await sites.create(namespace, 'fought', { desiredState: 'Running', onLeaf: 'Keep' });
    await waitForObject(sites, namespace, 'fought', 'Ready at Running', (o) => readyAt('Running')(o) && o.status?.objects?.length === 3);
    // The fighter writes its value whenever it finds okt's: each of its writes after the first answers one of okt's.
    let writes = 0;
    let fighting = true;
    const fighter = (async () => {
      while (fighting) {
        const data = (await core.readNamespacedConfigMap({ namespace, name: 'fought-config' })).data;
        if (data?.node !== 'theirs') {
          await core.patchNamespacedConfigMap({ namespace, name: 'fought-config', fieldManager: 'fighter', body: { data: { node: 'theirs' } } }, mergePatch);
          writes += 1;
        }
        await sleep(50);
      }
    })();
    try {
      const contested = await waitForObject(sites, namespace, 'fought', 'ObjectsApplied=False, Contested', (o) => conditionOf(o, 'ObjectsApplied')?.reason === 'Contested', 30_000);
      expect(conditionOf(contested, 'ObjectsApplied')?.message).toContain('ConfigMap fought-config (object "config"): field manager "fighter" changes fields okt applies');
      await sleep(3_000);
      // okt put it back FIGHT_REPAIRS (3) times, then left it: the fighter wrote once more than that.
      expect(writes).toBe(4);
      expect((await core.readNamespacedConfigMap({ namespace, name: 'fought-config' })).data?.node).toBe('theirs');
    } finally {
      fighting = false;
      await fighter;
    }
    await sites.remove(namespace, 'fought');
  });
});

describe('the objects kept across a restart of the operator', () => {
  test('a restarted operator applies again only the object changed while it was down: okt\'s fields are compared with those the inventory recorded, not with a memory', async () => {
    const first = await startLocalOperator(kc, { graph: siteGraph, resource: SITES, namespacePrefix: 'okt-restart' });
    const { namespace } = first;
    let restarted: RunningOperator | undefined;
    try {
      await sites.create(namespace, 'again', { desiredState: 'Running', onLeaf: 'Keep' });
      const ready = await waitForObject(sites, namespace, 'again', 'Ready at Running, okt\'s fields recorded', (o) => readyAt('Running')(o) && o.status?.objects?.length === 3 && o.status.objects.every((e) => e.fields !== undefined));
      await first.operator.stop();
      await kubectl(['patch', 'configmap', 'again-config', '-n', namespace, '--type=merge', '-p', JSON.stringify({ data: { node: 'edited while okt was down' } })]);
      restarted = await startOperator({ kubeConfig: kc, graph: siteGraph, resource: SITES, namespace, sidecar: { url: first.sidecar.url, token: first.sidecar.token }, logger: createLogger({ level: 'silent' }) });
      await waitFor('data.node put back', async () => ((await core.readNamespacedConfigMap({ namespace, name: 'again-config' })).data?.node === 'Running' ? true : undefined));
      await sleep(1_000);
      // One apply (a PATCH), the ConfigMap's: the Service and the Secret, as okt left them, are not applied again.
      expect(restarted.transport.counters.byVerb.patch).toBe(1);
      expect((await sites.get(namespace, 'again')).status?.objects).toEqual(ready.status?.objects);
      // Deleted from Servicing, whose deletion path is short (Stopping's object is refused).
      await sites.patchSpec(namespace, 'again', { desiredState: 'Servicing' });
      await waitForObject(sites, namespace, 'again', 'Ready at Servicing', readyAt('Servicing'));
      await sites.remove(namespace, 'again');
      await waitForObjectGone(sites, namespace, 'again');
    } finally {
      await restarted?.stop();
      await first.stop();
    }
  });
});

describe('the operator killed with SIGKILL while it makes and prunes objects', () => {
  let sidecar: NoopSidecar | undefined;
  afterAll(async () => sidecar?.close());

  test('at moments fast-check chooses during a walk and a deletion: no object is left behind', async () => {
    sidecar = await startNoopSidecar({ graph: siteGraph });
    const live = sidecar;
    const { namespace } = local;
    const graphFile = fileURLToPath(new URL('../fixtures/object-graph.ts', import.meta.url));
    // The in-process operator watches this namespace too: it is stopped for this test, the spawned ones take over.
    await local.operator.stop();
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 3, maxLength: 3 }), async (killDelays) => {
        const name = `kill-${Math.random().toString(36).slice(2, 8)}`;
        const spawn = () => spawnOperator({ namespace, sidecarUrl: live.url, token: live.token, graphFile, resource: SITES });
        let operator = spawn();
        try {
          const { metadata: { uid } } = await sites.create(namespace, name, { desiredState: 'Servicing', onLeaf: 'Keep' });
          for (const delay of killDelays) {
            await sleep(delay);
            await killHard(operator);
            operator = spawn();
          }
          await withOutputOf(operator, waitForObject(sites, namespace, name, 'Ready at Servicing', readyAt('Servicing'), 30_000));
          expect(await madeFor(namespace, uid)).toEqual([`Secret${name}-keys`, `Service${name}`]);
          await sites.remove(namespace, name);
          await sleep(killDelays[0]!);
          await killHard(operator);
          operator = spawn();
          await withOutputOf(operator, waitForObjectGone(sites, namespace, name, 30_000));
          await waitFor('only the kept Secret left', async () => ((await madeFor(namespace, uid)).join() === `Secret${name}-keys` ? true : undefined), 10_000);
        } finally {
          await killHard(operator);
        }
      }),
      { numRuns: fcRuns(3) },
    );
  });
});

describe('the operator killed between an apply and the status write after it', () => {
  test('what it applied is in the inventory already, and goes with the CR: no orphan', async () => {
    const { namespace } = local;
    await local.operator.stop();
    const held = await startNoopSidecar({ graph: siteGraph });
    // An admission policy refuses every status write that records an applied hash: the operator
    // applies, then cannot write the status that follows, and is killed there.
    const policy = `okt-hold-${namespace}`;
    const hold = [
      {
        apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name: policy },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: { resourceRules: [{ apiGroups: [SITES.group], apiVersions: [SITES.version], operations: ['UPDATE'], resources: [`${SITES.plural}/status`] }] },
          validations: [{ expression: '!has(object.status.objects) || object.status.objects.all(o, !has(o.hash))', message: 'held by the test: no applied hash is recorded' }],
        },
      },
      {
        apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: policy },
        spec: { policyName: policy, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': namespace } } } },
      },
    ];
    await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: hold }));
    const custom = kc.makeApiClient(CustomObjectsApi);
    const probe = await sites.create(namespace, 'hold-probe', { desiredState: 'Start' });
    const recorded = { state: 'Start', observedGeneration: 1, transition: 0, sequence: 0, path: ['Start'], conditions: [], objects: [{ id: 'service', apiVersion: 'v1', kind: 'Service', name: 'hold-probe', hash: 'applied' }] };
    await waitFor('the policy in effect', () => custom.patchNamespacedCustomObjectStatus({ ...SITES, namespace, name: probe.metadata.name, body: { status: recorded } }, mergePatch).then(() => undefined, () => true), 15_000);
    await sites.remove(namespace, 'hold-probe');
    let operator = spawnOperator({ namespace, sidecarUrl: held.url, token: held.token, graphFile: fileURLToPath(new URL('../fixtures/object-graph.ts', import.meta.url)), resource: SITES });
    try {
      const { metadata: { uid } } = await sites.create(namespace, 'between', { desiredState: 'Start', onLeaf: 'Keep' });
      await withOutputOf(operator, waitFor('the graph\'s objects applied, their status write refused', async () => ((await madeFor(namespace, uid)).length === 2 ? true : undefined), 30_000));
      await killHard(operator);
      await kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', policy]);
      const between = await sites.get(namespace, 'between');
      // Every object it made is in the inventory, recorded before it was applied (no hash: the write after the apply never came).
      expect(between.status?.objects).toEqual([
        { id: 'service', apiVersion: 'v1', kind: 'Service', name: 'between' },
        { id: 'keys', apiVersion: 'v1', kind: 'Secret', name: 'between-keys', deletion: 'Keep' },
      ]);
      operator = spawnOperator({ namespace, sidecarUrl: held.url, token: held.token, graphFile: fileURLToPath(new URL('../fixtures/object-graph.ts', import.meta.url)), resource: SITES });
      await withOutputOf(operator, waitForObject(sites, namespace, 'between', 'its objects recorded as applied', (o) => o.status?.objects?.every((e) => e.hash !== undefined) === true && readyAt('Start')(o)));
      await sites.remove(namespace, 'between');
      await withOutputOf(operator, waitForObjectGone(sites, namespace, 'between'));
      expect(await madeFor(namespace, uid)).toEqual(['Secretbetween-keys']);
    } finally {
      await killHard(operator);
      await held.close();
      await kubectl(['delete', '--ignore-not-found', 'validatingadmissionpolicybinding,validatingadmissionpolicy', policy]);
    }
  });
});

describe('the RBAC okt manifests generates for the objects', () => {
  test('the operator\'s ServiceAccount may apply (create included), read, list, watch, patch and delete the kinds the graph makes, and nothing more of them or of others', async () => {
    const { namespace } = local;
    const name = `okt-site-${namespace}`;
    const wanted = new Set(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding']);
    const docs = generateRbac(SITES, { namespace, name, objectKinds: siteGraph.objects }).filter((doc) => wanted.has(doc.kind as string));
    await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: docs }));
    const as = [`--as=system:serviceaccount:${namespace}:${name}`, '-n', namespace];
    const probe = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'rbac-probe' }, data: { made: 'by okt' } };
    // RBAC is cached briefly by the authorizer: the first apply may come before the binding counts.
    await waitFor('the binding in effect', async () => kubectl([...as, 'apply', '--server-side', '--field-manager=okt', '--force-conflicts', '-f', '-'], JSON.stringify(probe)).then(() => true, () => undefined), 10_000);
    await kubectl([...as, 'get', 'configmap', 'rbac-probe']);
    await kubectl([...as, 'patch', 'configmap', 'rbac-probe', '--type=merge', '-p', '{"metadata":{"ownerReferences":[]}}']);
    await kubectl([...as, 'delete', 'configmap', 'rbac-probe']);
    // list and watch: okt's informer per kind the graph makes.
    await kubectl([...as, 'get', 'configmaps', '-l', 'okt.dev/graph=site']);
    expect((await kubectl([...as, 'auth', 'can-i', 'watch', 'configmaps'])).trim()).toBe('yes');
    await expect(kubectl([...as, 'auth', 'can-i', 'update', 'configmaps'])).rejects.toThrow(/exited 1/);
    await expect(kubectl([...as, 'get', 'pods'])).rejects.toThrow(/forbidden/);
    await expect(kubectl([...as, 'create', 'deployment', 'probe', '--image=probe'])).rejects.toThrow(/forbidden/);
    await expect(kubectl([...as, 'create', 'serviceaccount', 'probe'])).rejects.toThrow(/forbidden/);
  });
});
