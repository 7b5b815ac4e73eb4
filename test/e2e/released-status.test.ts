// A CR the first okt (53058c0) stalled on a failed action, stored on a real API server as that okt
// left it (test/fixtures/released-status), in front of today's operator: it stays stalled, nothing
// runs, until spec.retry runs the action again.
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { createLogger } from '../../src/controller/index.ts';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { LIFECYCLE_FINALIZER } from '../../src/kube/lifecycle-resource.ts';
import { createNamespace, e2eKubeConfig, mergePatch } from './helpers/index.ts';
import { conditionOf, DATABASES, databases, installDatabaseCrd, startNoopSidecar, waitForDatabase } from './helpers/lifecycle.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
const objects = kc.makeApiClient(CustomObjectsApi);
const stored = (JSON.parse(readFileSync(new URL('../fixtures/released-status/2026-11-22-53058c0-full.json', import.meta.url), 'utf8')) as {
  resources: { 'stalled-on-failed-action': { spec: Record<string, unknown>; status: Record<string, unknown> } };
}).resources['stalled-on-failed-action'];
let namespace: string;
let sidecar: Awaited<ReturnType<typeof startNoopSidecar>>;
let operator: RunningOperator | undefined;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-released-status');
  sidecar = await startNoopSidecar();
});

afterAll(async () => {
  await operator?.stop();
  await sidecar?.close();
});

test('a CR the first okt stalled on a failed action stays stalled under today\'s operator, with no spec edit; spec.retry runs the action again', async () => {
  // As the first okt left it: its finalizer, its spec (onLeaf Keep, so that it stays to be read at End), its status.
  await objects.createNamespacedCustomObject({
    ...DATABASES,
    namespace,
    body: { apiVersion: `${DATABASES.group}/${DATABASES.version}`, kind: DATABASES.kind, metadata: { name: 'old', finalizers: [LIFECYCLE_FINALIZER] }, spec: { ...stored.spec, onLeaf: 'Keep' } },
  });
  await objects.patchNamespacedCustomObjectStatus({ ...DATABASES, namespace, name: 'old', body: { status: stored.status } }, mergePatch);
  const before = await api.get(namespace, 'old');
  expect(before.metadata.generation).toBe(stored.status.observedGeneration);
  expect(before.status?.operation).toMatchObject({ node: 'Running', phase: 'Failed' });
  expect(before.status?.operation?.desired).toBeUndefined();

  operator = await startOperator({
    kubeConfig: kc,
    graph: databaseGraph,
    resource: DATABASES,
    namespace,
    sidecar: { url: sidecar.url, token: sidecar.token },
    logger: createLogger({ level: (process.env.OKT_TEST_LOG ?? 'silent') as 'silent' }),
  });
  // Its one write: the failure is recorded for the node wanted then (End), the CR still stalled at Running.
  const looked = await waitForDatabase(kc, namespace, 'old', 'the failure recorded for End', (o) => o.status?.operation?.desired === 'End');
  expect([looked.status?.state, looked.status?.transition, looked.status?.operation?.id]).toEqual(['Running', 1, 'uid-1-1']);
  expect(conditionOf(looked, 'Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });
  // Time to move it on, were it to: it does not, and nothing is started.
  await sleep(3_000);
  const later = await api.get(namespace, 'old');
  expect([later.status?.state, later.status?.transition, later.metadata.resourceVersion]).toEqual(['Running', 1, looked.metadata.resourceVersion]);
  for (const id of [`${later.metadata.uid}-2`, `${later.metadata.uid}-1.1`]) expect(sidecar.sidecar.operations.get(id), id).toBeUndefined();

  await api.patchSpec(namespace, 'old', { retry: 'after-upgrade' });
  const done = await waitForDatabase(kc, namespace, 'old', 'at End, Ready', (o) => o.status?.state === 'End' && conditionOf(o, 'Ready')?.status === 'True');
  expect(sidecar.sidecar.operations.get(`${done.metadata.uid}-1.1`)).toMatchObject({ node: 'Running' });
  // From Running, two transitions to End, the first okt's one included: none was taken twice.
  expect(done.status?.transition).toBe(3);
});
