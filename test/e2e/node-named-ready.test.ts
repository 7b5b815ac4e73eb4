// A user's first graph names a node Ready, the most common state name there is. On a real API server
// okt's own Ready (kstatus) and the node's condition (node.okt.dev/Ready) live side by side, and
// `kubectl wait` waits for either, the way docs/operator.md says (Conditions).
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { defineGraph } from '../../src/graph/index.ts';
import { e2eKubeConfig, kubectlWait, mergePatch } from './helpers/index.ts';
import { applyGraphCrd } from './helpers/crd.ts';
import { waitFor } from './helpers/wait.ts';
import { startLocalOperator, type DatabaseObject, type LocalOperator } from './helpers/lifecycle.ts';

const kc = e2eKubeConfig();
const SERVICES = { group: 'apps.example.com', version: 'v1', plural: 'webapps', kind: 'WebApp' } as const;
const graph = defineGraph({
  name: 'webapp',
  entry: 'Start',
  nodes: { Start: { children: ['Ready'] }, Ready: { children: ['Stopping'] }, Stopping: { children: ['End'] }, End: {} },
});
let namespace: string;
let local: LocalOperator;

beforeAll(async () => {
  await applyGraphCrd(kc, graph, SERVICES);
  local = await startLocalOperator(kc, { graph, resource: SERVICES, namespacePrefix: 'okt-ready-node' });
  namespace = local.namespace;
});

afterAll(async () => {
  await local?.stop();
});

describe('a node named Ready', () => {
  test('is driven like any node; kubectl waits for the node (node.okt.dev/Ready) and for okt\'s Ready, which stay apart', async () => {
    const api = kc.makeApiClient(CustomObjectsApi);
    const ref = { group: SERVICES.group, version: SERVICES.version, plural: SERVICES.plural, namespace };
    await api.createNamespacedCustomObject({ ...ref, body: { apiVersion: `${SERVICES.group}/${SERVICES.version}`, kind: SERVICES.kind, metadata: { name: 'web' }, spec: { desiredState: 'Ready' } } });
    expect(await kubectlWait(`${SERVICES.plural}.${SERVICES.group}/web`, 'node.okt.dev/Ready', namespace)).toContain('condition met');
    expect(await kubectlWait(`${SERVICES.plural}.${SERVICES.group}/web`, 'Ready', namespace)).toContain('condition met');
    const obj = (await api.getNamespacedCustomObject({ ...ref, name: 'web' })) as DatabaseObject;
    expect(obj.status?.state).toBe('Ready');
    expect(obj.status?.graphRevision).toBe(graph.revision);
    const types = Object.fromEntries(obj.status!.conditions.map((c) => [c.type, [c.status, c.reason]]));
    expect(types).toEqual({
      Start: ['False', 'Left'],
      'node.okt.dev/Ready': ['True', 'Entered'],
      Ready: ['True', 'DesiredStateReached'],
      Reconciling: ['False', 'DesiredStateReached'],
      Stalled: ['False', 'DesiredStateReached'],
    });
    // A spec edit that leaves it there (a pause, on and off): kubectl answers for both again, at the new generation.
    for (const paused of [true, false]) await api.patchNamespacedCustomObject({ ...ref, name: 'web', body: { spec: { paused } } }, mergePatch);
    expect(await kubectlWait(`${SERVICES.plural}.${SERVICES.group}/web`, 'node.okt.dev/Ready', namespace)).toContain('condition met');
    expect(await kubectlWait(`${SERVICES.plural}.${SERVICES.group}/web`, 'Ready', namespace)).toContain('condition met');
    // Leaving the node: its condition turns False, okt's Ready follows the new desired node.
    await api.patchNamespacedCustomObject({ ...ref, name: 'web', body: { spec: { desiredState: 'Stopping' } } }, mergePatch);
    await waitFor('web at Stopping, Ready', async () => {
      const now = (await api.getNamespacedCustomObject({ ...ref, name: 'web' })) as DatabaseObject;
      const ready = now.status?.conditions.find((c) => c.type === 'Ready');
      return now.status?.state === 'Stopping' && ready?.status === 'True' ? now : undefined;
    }, 30_000, 50).then((now) => {
      expect(now.status?.conditions.find((c) => c.type === 'node.okt.dev/Ready')).toMatchObject({ status: 'False', reason: 'Left' });
      expect(now.status?.conditions.find((c) => c.type === 'Start')).toBeUndefined();
    });
  });
});
