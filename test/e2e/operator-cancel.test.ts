// A cancellable backup on a real API server and a real sidecar: cancelled by a change of
// spec.desiredState (the CR then reaches the new desired node, no ActionFailed), and by a deletion.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { defineGraph } from '../../src/graph/index.ts';
import { e2eKubeConfig, waitFor, applyGraphCrd } from './helpers/index.ts';
import { conditionOf, lifecycleObjects, startLocalOperator, waitForObject, waitForObjectGone, type LocalOperator } from './helpers/lifecycle.ts';

const graph = defineGraph({
  name: 'vaults',
  entry: 'Start',
  nodes: {
    Start: { children: ['Running'] },
    Running: { children: ['Backup', 'Stopping'] },
    Backup: { children: ['Running', 'Stopping'], cancellable: true, description: 'A backup that takes an hour.' },
    Stopping: { children: ['End'] },
    End: {},
  },
});
const VAULTS = { group: 'cancel.okt.dev', version: 'v1alpha1', plural: 'vaults', kind: 'Vault' } as const;
const kc = e2eKubeConfig();
const vaults = lifecycleObjects(kc, VAULTS);
let namespace: string;
let local: LocalOperator;

beforeAll(async () => {
  await applyGraphCrd(kc, graph, VAULTS);
  // Backup sleeps an hour: only a cancellation ends it within the test.
  local = await startLocalOperator(kc, { graph, resource: VAULTS, namespacePrefix: 'okt-cancel', hang: ['Backup'], maxActiveOperations: 4 });
  namespace = local.namespace;
});

afterAll(async () => {
  await local?.stop();
});

/** Creates a CR sent to Backup and waits until the sidecar runs its backup; the backup's operation id. */
async function backupRunning(name: string): Promise<string> {
  await vaults.create(namespace, name, { desiredState: 'Backup', onLeaf: 'Keep' });
  const db = await waitForObject(vaults, namespace, name, 'at Backup', (o) => o.status?.state === 'Backup' && o.status.operation?.node === 'Backup');
  const id = db.status!.operation!.id;
  await waitFor(`${name}: backup ${id} running on the sidecar`, async () => (local.sidecar.sidecar.operations.active().includes(id) ? true : undefined), 30_000, 20);
  return id;
}

test('a change of spec.desiredState cancels the running backup; the CR reaches the new desired node, Ready, not stalled', async () => {
  const id = await backupRunning('mind');
  await vaults.patchSpec(namespace, 'mind', { desiredState: 'Stopping' });
  const db = await waitForObject(vaults, namespace, 'mind', 'Ready at Stopping', (o) => o.status?.state === 'Stopping' && conditionOf(o, 'Ready')?.status === 'True' && o.status.observedGeneration === o.metadata.generation);
  expect(local.sidecar.sidecar.operations.get(id)).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled' });
  expect(local.sidecar.sidecar.operations.active()).toEqual([]);
  expect(db.status?.path).toEqual(['Start', 'Running', 'Backup', 'Stopping']);
  // Left by the planner's move once the backup ended Cancelled: a failed backup would have held it there (ActionFailed).
  expect(db.status?.lastTransition).toMatchObject({ from: 'Backup', to: 'Stopping', events: ['Stopping'] });
  expect(conditionOf(db, 'Stalled')?.status).toBe('False');
});

test('deleting a CR whose cancellable backup runs cancels it, then goes down to a leaf', async () => {
  const id = await backupRunning('doomed');
  await vaults.remove(namespace, 'doomed');
  expect(await waitForObjectGone(vaults, namespace, 'doomed')).toBe(true);
  expect(local.sidecar.sidecar.operations.get(id)).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled' });
  expect(local.sidecar.sidecar.operations.active()).toEqual([]);
});
