// A pruned object's dependents go with it: okt deletes with propagationPolicy Background, where a
// Job's default (orphan) would leave its Pods behind. This API server runs no garbage collector, so an
// orphaning delete would leave the Job itself, held by the `orphan` finalizer; a background delete
// removes it at once (the collector, on a real cluster, then deletes its Pods: the in-cluster demo).
import { BatchV1Api, CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readyGraph } from '../fixtures/ready-graph.ts';
import { applyGraphCrd, e2eKubeConfig, httpStatusOf, mergePatch } from './helpers/index.ts';
import { conditionOf, lifecycleObjects, startLocalOperator, waitForObject, type LocalOperator, type LifecycleObject } from './helpers/lifecycle.ts';
import { waitFor } from './helpers/wait.ts';

const VAULTS = { group: 'okt.dev', version: 'v1alpha1', plural: 'vaults', kind: 'Vault' } as const;
const kc = e2eKubeConfig();
const batch = kc.makeApiClient(BatchV1Api);
const core = kc.makeApiClient(CoreV1Api);
const vaults = lifecycleObjects(kc, VAULTS);
let local: LocalOperator;

beforeAll(async () => {
  await applyGraphCrd(kc, readyGraph, VAULTS);
  local = await startLocalOperator(kc, { graph: readyGraph, resource: VAULTS, namespacePrefix: 'okt-prune-job' });
});
afterAll(async () => local?.stop());

const readyAt = (state: string) => (o: LifecycleObject) => o.status?.state === state && conditionOf(o, 'Ready')?.status === 'True';

describe('a pruned Job', () => {
  test('is gone once its node is left, not held for its Pods to be orphaned', async () => {
    const { namespace } = local;
    await vaults.create(namespace, 'a', { desiredState: 'Running', onLeaf: 'Keep' });
    await waitForObject(vaults, namespace, 'a', 'waiting for the PVC', (o) => conditionOf(o, 'Ready')?.reason === 'ObjectsNotReady');
    await core.patchNamespacedPersistentVolumeClaimStatus({ namespace, name: 'a-data', body: { status: { phase: 'Bound' } } }, mergePatch);
    await waitForObject(vaults, namespace, 'a', 'Ready at Running', readyAt('Running'));
    await vaults.patchSpec(namespace, 'a', { desiredState: 'Backup' });
    await waitForObject(vaults, namespace, 'a', 'at Backup, waiting for its Job', (o) => o.status?.state === 'Backup' && conditionOf(o, 'Ready')?.reason === 'ObjectsNotReady');
    const now = new Date().toISOString();
    const condition = (type: string) => ({ type, status: 'True', reason: 'Completed', message: 'marked Complete by the test', lastProbeTime: now, lastTransitionTime: now });
    await batch.patchNamespacedJobStatus({ namespace, name: 'a-backup', body: { status: { startTime: now, completionTime: now, succeeded: 1, conditions: [condition('SuccessCriteriaMet'), condition('Complete')] } } }, mergePatch);
    await waitForObject(vaults, namespace, 'a', 'Ready at Backup', readyAt('Backup'));

    await vaults.patchSpec(namespace, 'a', { desiredState: 'Running' });
    await waitForObject(vaults, namespace, 'a', 'back at Running, the Job pruned', (o) => readyAt('Running')(o) && !(o.status?.objects ?? []).some((entry) => entry.id === 'backup'));
    const left = await waitFor('the Job gone', async () => {
      try {
        const job = await batch.readNamespacedJob({ namespace, name: 'a-backup' });
        return job.metadata?.deletionTimestamp === undefined ? undefined : job.metadata.finalizers;
      } catch (error) {
        if (httpStatusOf(error) === 404) return 'gone';
        throw error;
      }
    }, 10_000);
    expect(left).toBe('gone');
  });
});
