// The objects of CRs an operator rolled to a new graph revision migrates, on a real API server:
// a CR at a node the revision renames keeps its objects (the same object, applied again only because
// its render names the node), and a CR at a node the revision removes, once it stands at the node
// that one maps to and that node's objects are applied, has the removed node's objects pruned (a
// kept one disowned and left in place), declarations the revision dropped included. A CR the Manual
// policy keeps on its revision is driven there with that revision's objects until it migrates.
import { CoreV1Api, CustomObjectsApi, type V1ConfigMap, type V1ObjectMeta } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startNoopSidecar, type NoopSidecar } from '../../sidecar/noop.ts';
import { createLogger } from '../../src/controller/index.ts';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { defineGraph, type Graph } from '../../src/graph/index.ts';
import { relayRevision1, relayRevision2 } from '../fixtures/object-revisions.ts';
import { applyGraphCrd, createNamespace, e2eKubeConfig, httpStatusOf, mergePatch } from './helpers/index.ts';
import { conditionOf, lifecycleObjects, waitForObject, type LifecycleObject } from './helpers/lifecycle.ts';

const RELAYS = { group: 'okt.dev', version: 'v1alpha1', plural: 'relays', kind: 'Relay' } as const;
const kc = e2eKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const relays = lifecycleObjects(kc, RELAYS);
const v2 = relayRevision2();
/**
 * What the sidecar runs: the actions of both revisions' nodes, as a user expands a sidecar's config
 * before rolling the operator (see graph-upgrade.test.ts). Only its node names matter.
 */
const bothRevisionsActions = defineGraph({
  name: 'relay',
  entry: 'Start',
  nodes: { Start: { children: ['Running'] }, Running: { children: ['Servicing', 'Stopping', 'Backup', 'Draining'] }, Servicing: { children: ['End'] }, Stopping: { children: ['End'] }, Backup: { children: ['End'] }, Draining: { children: ['End'] }, End: {} },
});
let namespace: string;
let sidecar: NoopSidecar;
let operator: RunningOperator | undefined;

function start(graph: Graph): Promise<RunningOperator> {
  return startOperator({ kubeConfig: kc, graph, resource: RELAYS, namespace, sidecar: { url: sidecar.url, token: sidecar.token }, logger: createLogger({ level: (process.env.OKT_TEST_LOG ?? 'silent') as 'silent' }) });
}

beforeAll(async () => {
  // Revision 2's CRD: it takes both revisions' names in spec.desiredState.
  await applyGraphCrd(kc, v2, RELAYS);
  namespace = await createNamespace(kc, 'okt-object-migration');
  sidecar = await startNoopSidecar({ graph: bothRevisionsActions });
});
afterAll(async () => {
  await operator?.stop();
  await sidecar?.close();
});

const restsAt = (state: string, revision: string) => (o: LifecycleObject) =>
  o.status?.state === state && o.status.graphRevision === revision && conditionOf(o, 'Ready')?.status === 'True' && conditionOf(o, 'ObjectsApplied')?.status === 'True';

async function readOrUndefined<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (error) {
    if (httpStatusOf(error) === 404) return undefined;
    throw error;
  }
}
const configMap = (name: string) => readOrUndefined(() => core.readNamespacedConfigMap({ namespace, name }));
const secretMetadata = async (name: string): Promise<V1ObjectMeta | undefined> => (await readOrUndefined(() => core.readNamespacedSecret({ namespace, name })))?.metadata;

test('rolled to a revision that renames one node and removes another: the renamed node\'s object kept (same uid), the removed node\'s pruned once the CR stands at the node it maps to (a kept one disowned)', async () => {
  operator = await start(relayRevision1);
  await relays.create(namespace, 'renamed', { desiredState: 'Servicing', onLeaf: 'Keep' });
  await relays.create(namespace, 'removed', { desiredState: 'Stopping', onLeaf: 'Keep' });
  await waitForObject(relays, namespace, 'renamed', 'at Servicing on revision 1, its objects applied', restsAt('Servicing', relayRevision1.revision));
  const removedBefore = await waitForObject(relays, namespace, 'removed', 'at Stopping on revision 1, its objects applied', restsAt('Stopping', relayRevision1.revision));
  const work: V1ConfigMap = (await configMap('renamed-work'))!;
  expect(work.data).toEqual({ node: 'Servicing' });
  expect(await configMap('removed-stop')).toBeDefined();
  expect((await secretMetadata('removed-keys'))?.ownerReferences?.map((ref) => ref.uid)).toEqual([removedBefore.metadata.uid]);
  await operator.stop();

  operator = await start(v2);
  const renamed = await waitForObject(relays, namespace, 'renamed', 'migrated to Backup, its objects applied', restsAt('Backup', v2.revision));
  expect(renamed.status?.objects?.map((o) => o.id)).toEqual(['service', 'work']);
  const kept = (await configMap('renamed-work'))!;
  // The same object, neither deleted nor made again: applied over, its render now naming Backup.
  expect(kept.metadata?.uid).toBe(work.metadata?.uid);
  expect(kept.data).toEqual({ node: 'Backup' });

  const removed = await waitForObject(relays, namespace, 'removed', 'moved to Draining, Stopping\'s objects pruned', (o) => restsAt('Draining', v2.revision)(o) && o.status?.objects?.length === 2);
  expect(removed.status?.objects?.map((o) => o.id)).toEqual(['service', 'drain']);
  expect(await configMap('removed-drain')).toBeDefined();
  // No garbage collector runs here (no kube-controller-manager): what is gone, okt deleted.
  expect(await configMap('removed-stop')).toBeUndefined();
  // Revision 2 no longer declares it: let go of as it was declared (Keep), disowned and left in place.
  const keys = await secretMetadata('removed-keys');
  expect(keys?.labels?.['okt.dev/object-id']).toBe('keys');
  expect(keys?.ownerReferences ?? []).toEqual([]);
});

test('a CR the Manual policy keeps on revision 1 gets revision 1\'s objects as it walks there; asked to migrate, it keeps them under the new name', async () => {
  await operator?.stop();
  operator = await start(relayRevision1);
  await relays.create(namespace, 'manual', { desiredState: 'Running', onLeaf: 'Keep' });
  await waitForObject(relays, namespace, 'manual', 'at Running on revision 1', restsAt('Running', relayRevision1.revision));
  await operator.stop();

  operator = await start(relayRevision2('Manual'));
  await relays.patchSpec(namespace, 'manual', { desiredState: 'Servicing' });
  const walked = await waitForObject(relays, namespace, 'manual', 'at Servicing, still on revision 1, its objects applied', restsAt('Servicing', relayRevision1.revision));
  expect(walked.status?.objects?.map((o) => o.id)).toEqual(['service', 'work']);
  const work = (await configMap('manual-work'))!;
  expect(work.data).toEqual({ node: 'Servicing' });

  await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject({ ...RELAYS, namespace, name: 'manual', body: { metadata: { annotations: { 'okt.dev/migrate': 'true' } } } }, mergePatch);
  await waitForObject(relays, namespace, 'manual', 'migrated to Backup, its objects applied', restsAt('Backup', v2.revision));
  const kept = (await configMap('manual-work'))!;
  expect(kept.metadata?.uid).toBe(work.metadata?.uid);
  expect(kept.data).toEqual({ node: 'Backup' });
});
