// The objects a node makes, shown, on a real API server: CloudEvents say when a node's objects were
// applied, became ready, or failed (each once, from the status write that records it); the metrics
// count applies and prunes; at the end of the deletion path an object a finalizer holds is named on
// the CR; `okt status` lists each object with its readiness.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api, type V1ConfigMap } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { defineGraph } from '../../src/graph/index.ts';
import { HOLD_FINALIZER, siteGraph } from '../fixtures/object-graph.ts';
import { okt } from '../fixtures/okt-process.ts';
import { applyGraphCrd, e2eKubeConfig, e2eKubeconfigPath, mergePatch } from './helpers/index.ts';
import { conditionOf, lifecycleObjects, startLocalOperator, waitForObject, waitForObjectGone, type LifecycleObject, type LocalOperator } from './helpers/lifecycle.ts';

// A group of its own: no other test's operator of the site graph looks at these CRs.
const SITES = { group: 'shown.okt.dev', version: 'v1alpha1', plural: 'sites', kind: 'Site' } as const;
const HOLDS = { group: 'shown.okt.dev', version: 'v1alpha1', plural: 'holds', kind: 'Hold' } as const;
/** Two ConfigMaps for the CR's whole life, the later one held by a finalizer once deleted: at the end of the deletion path it is deleted first, and waited for. */
const holdGraph = defineGraph({
  name: 'hold',
  entry: 'Start',
  nodes: { Start: { children: ['Running'] }, Running: { children: ['End'] }, End: {} },
  objects: [
    { id: 'config', apiVersion: 'v1', kind: 'ConfigMap', name: 'config', render: (): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', data: { a: 'b' } }) },
    { id: 'held', apiVersion: 'v1', kind: 'ConfigMap', name: 'held', render: (): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { finalizers: [HOLD_FINALIZER] }, data: { a: 'b' } }) },
  ],
});
const kc = e2eKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const sites = lifecycleObjects(kc, SITES);
const holds = lifecycleObjects(kc, HOLDS);
let local: LocalOperator;
let holding: LocalOperator;
let sink: Server;
let sinkUrl: string;

interface Received {
  type: string;
  subject: string;
  resource: string;
  data: { objects?: { id: string; kind: string; name: string }[]; reason?: string; message?: string };
}
/** The CloudEvents the sink received, in order. */
const received: Received[] = [];

beforeAll(async () => {
  sink = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const source = String(request.headers['ce-source']);
      received.push({ type: String(request.headers['ce-type']), subject: String(request.headers['ce-subject']), resource: source.slice(source.lastIndexOf('/') + 1), data: JSON.parse(body) as Received['data'] });
      response.writeHead(202).end();
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
  await applyGraphCrd(kc, siteGraph, SITES);
  local = await startLocalOperator(kc, { graph: siteGraph, resource: SITES, namespacePrefix: 'okt-objects-shown' });
  await applyGraphCrd(kc, holdGraph, HOLDS);
  holding = await startLocalOperator(kc, { graph: holdGraph, resource: HOLDS, namespacePrefix: 'okt-objects-held' });
});
afterAll(async () => {
  await local?.stop();
  await holding?.stop();
  sink?.close();
});

const readyAt = (state: string) => (o: LifecycleObject) => o.status?.state === state && conditionOf(o, 'Ready')?.status === 'True' && conditionOf(o, 'ObjectsApplied')?.status === 'True';
const objectEvents = (resource: string) => received.filter((e) => e.resource === resource && e.type.startsWith('dev.okt.lifecycle.objects.')).map((e) => [e.type.split('.')[4], e.subject]);

/** The value of one sample of the operator's metrics, 0 when absent. */
async function sample(name: string, labels: Record<string, string>, of: LocalOperator = local): Promise<number> {
  const text = await of.operator.manager.metrics.registry.metrics();
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && wanted.every((w) => l.includes(w)));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('the objects a node makes, shown', () => {
  test('events: objects applied at each node that makes new ones, ready before the action starts, an apply refused failed (once); metrics count applies and prunes; okt status lists them', async () => {
    const { namespace } = local;
    await sites.create(namespace, 'web', { desiredState: 'Running', onLeaf: 'Keep', eventSink: sinkUrl });
    await waitForObject(sites, namespace, 'web', 'Ready at Running, its objects applied', readyAt('Running'));
    await waitForObject(sites, namespace, 'web', 'its events delivered', () => objectEvents('web').length >= 2);
    // Its first look moved it on from Start (which has no action) before any object was applied: Running's are applied at once.
    expect(objectEvents('web')).toEqual([['applied', 'Running'], ['ready', 'Running']]);
    const [applied, ready] = received.filter((e) => e.resource === 'web' && e.type.includes('.objects.'));
    const all = [{ id: 'service', kind: 'Service', name: 'web' }, { id: 'keys', kind: 'Secret', name: 'web-keys' }, { id: 'config', kind: 'ConfigMap', name: 'web-config' }];
    expect(applied!.data.objects).toEqual(all);
    expect(ready!.data.objects).toEqual(all);
    // Events of one CR come in sequence order: the action succeeded after its objects were ready.
    const succeeded = received.findIndex((e) => e.resource === 'web' && e.type === 'dev.okt.lifecycle.action.succeeded.v1' && e.subject === 'Running');
    expect(succeeded).toBeGreaterThan(received.indexOf(ready!));

    const shown = await okt(['status', `sites.${SITES.group}/web`, '-n', namespace], { env: { KUBECONFIG: e2eKubeconfigPath() } });
    expect(shown.stderr).toBe('');
    const lines = shown.stdout.split('\n');
    expect(lines).toContain('  OBJECT   KIND       NAME        READY  MESSAGE');
    expect(lines).toContain('  service  Service    web         Ready  ');
    expect(lines).toContain('  config   ConfigMap  web-config  Ready  ');

    const graph = 'site';
    expect(await sample('okt_object_applies_total', { graph, kind: 'Service', outcome: 'applied' })).toBe(1);
    expect(await sample('okt_object_applies_total', { graph, kind: 'ConfigMap', outcome: 'applied' })).toBe(1);
    await sites.patchSpec(namespace, 'web', { desiredState: 'Servicing' });
    await waitForObject(sites, namespace, 'web', 'Ready at Servicing, the ConfigMap pruned', (o) => readyAt('Servicing')(o) && o.status?.objects?.length === 2);
    expect(await sample('okt_object_prunes_total', { graph, kind: 'ConfigMap', outcome: 'deleted' })).toBe(1);
    // Servicing makes nothing new: no applied event; its objects (those of the whole life) were ready.
    await waitForObject(sites, namespace, 'web', 'the ready event of Servicing', () => objectEvents('web').length >= 3);
    expect(objectEvents('web').slice(2)).toEqual([['ready', 'Servicing']]);

    await sites.create(namespace, 'refused', { desiredState: 'Stopping', onLeaf: 'Keep', eventSink: sinkUrl });
    await waitForObject(sites, namespace, 'refused', 'its objects.failed event', () => objectEvents('refused').some(([type]) => type === 'failed'));
    // Tried again with backoff, the same failure: said once.
    await sleep(2_000);
    const failed = received.filter((e) => e.resource === 'refused' && e.type === 'dev.okt.lifecycle.objects.failed.v1');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ subject: 'Stopping', data: { objects: [{ id: 'refused', kind: 'ConfigMap', name: 'refused-refused' }], reason: 'ApplyFailed' } });
    expect(failed[0]!.data.message).toContain('ConfigMap refused-refused (object "refused") was not applied: ');
    expect(await sample('okt_object_applies_total', { graph, kind: 'ConfigMap', outcome: 'refused' })).toBeGreaterThanOrEqual(1);
  });

  test('at the end of the deletion path, an object a finalizer holds is named on the CR, whose finalizer waits for it; okt status says it is being deleted', async () => {
    const { namespace } = holding;
    await holds.create(namespace, 'app', { desiredState: 'Running' });
    await waitForObject(holds, namespace, 'app', 'Ready at Running, its objects applied', (o) => readyAt('Running')(o) && o.status?.objects?.length === 2);
    await holds.remove(namespace, 'app');
    const held = await waitForObject(holds, namespace, 'app', 'ObjectsApplied=False ObjectsDeleting', (o) => conditionOf(o, 'ObjectsApplied')?.reason === 'ObjectsDeleting');
    expect(conditionOf(held, 'ObjectsApplied')).toMatchObject({
      status: 'False',
      message: `ConfigMap app-held (object "held") is deleted and waits for its finalizers (${HOLD_FINALIZER}); okt's finalizer stays on the resource until it is gone`,
    });
    expect(held.metadata.finalizers).toContain('okt.dev/lifecycle');
    expect(await sample('okt_object_prunes_total', { graph: 'hold', kind: 'ConfigMap', outcome: 'held' }, holding)).toBeGreaterThanOrEqual(1);

    const shown = await okt(['status', `holds.${HOLDS.group}/app`, '-n', namespace], { env: { KUBECONFIG: e2eKubeconfigPath() } });
    expect(shown.stderr).toBe('');
    const lines = shown.stdout.split('\n');
    expect(lines).toContain(`  held    ConfigMap  app-held    Deleting  being deleted, held by its finalizers: ${HOLD_FINALIZER}`);
    // The one before it in order of declaration waits for it: still there.
    expect(lines).toContain('  config  ConfigMap  app-config  Ready     ');

    await core.patchNamespacedConfigMap({ namespace, name: 'app-held', body: { metadata: { finalizers: null } } }, mergePatch);
    await waitForObjectGone(holds, namespace, 'app');
    expect(await sample('okt_object_prunes_total', { graph: 'hold', kind: 'ConfigMap', outcome: 'deleted' }, holding)).toBe(1);
  });

  test('an abandoned deletion asks for its objects\' deletions and waits for none: okt.dev/abandon releases the CR while a finalizer still holds one', async () => {
    const { namespace } = holding;
    await holds.create(namespace, 'left', { desiredState: 'Running' });
    await waitForObject(holds, namespace, 'left', 'Ready at Running, its objects applied', (o) => readyAt('Running')(o) && o.status?.objects?.length === 2);
    await holds.remove(namespace, 'left');
    await waitForObject(holds, namespace, 'left', 'ObjectsApplied=False ObjectsDeleting', (o) => conditionOf(o, 'ObjectsApplied')?.reason === 'ObjectsDeleting');
    await holds.annotate(namespace, 'left', { 'okt.dev/abandon': 'true' });
    await waitForObjectGone(holds, namespace, 'left');
    // Both deletions were asked for: the held one is still being deleted, the other is gone.
    const held = await core.readNamespacedConfigMap({ namespace, name: 'left-held' });
    expect(held.metadata?.deletionTimestamp).toBeDefined();
    await expect(core.readNamespacedConfigMap({ namespace, name: 'left-config' })).rejects.toMatchObject({ code: 404 });
    await core.patchNamespacedConfigMap({ namespace, name: 'left-held', body: { metadata: { finalizers: null } } }, mergePatch);
  });
});
