// The objects a node makes are awaited, on a real API server with no node (no controller writes their
// status: the test does, through the /status subresource, as an admin): a node's action starts only
// once its objects are ready (read from okt's caches: waiting costs no request, a status change wakes the CR), Ready=False naming the object and kstatus's message meanwhile; a failed
// Job is the failure of Backup's action (its retry policy runs it again, then the CR stalls); a Job
// never done meets Restore's deadline, whose timeout edge is taken.
import { BatchV1Api, CoreV1Api, CustomObjectsApi, Watch, type V1ConfigMap, type V1PersistentVolumeClaim } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { isDeepStrictEqual } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { readyGraph } from '../fixtures/ready-graph.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { e2eKubeConfig, httpStatusOf, mergePatch, applyGraphCrd } from './helpers/index.ts';
import { waitFor } from './helpers/wait.ts';
import { conditionOf, lifecycleObjects, startLocalOperator, waitForObject, type LocalOperator, type LifecycleObject } from './helpers/lifecycle.ts';

const VAULTS = { group: 'okt.dev', version: 'v1alpha1', plural: 'vaults', kind: 'Vault' } as const;
const kc = e2eKubeConfig();
const core = kc.makeApiClient(CoreV1Api);
const batch = kc.makeApiClient(BatchV1Api);
const vaults = lifecycleObjects(kc, VAULTS);
let local: LocalOperator;

beforeAll(async () => {
  await applyGraphCrd(kc, readyGraph, VAULTS);
  local = await startLocalOperator(kc, { graph: readyGraph, resource: VAULTS, namespacePrefix: 'okt-ready' });
});
afterAll(async () => local?.stop());

const readyAt = (state: string) => (o: LifecycleObject) => o.status?.state === state && conditionOf(o, 'Ready')?.status === 'True';
const waitingFor = (state: string, message: string) => (o: LifecycleObject) =>
  o.status?.state === state && conditionOf(o, 'Ready')?.reason === 'ObjectsNotReady' && conditionOf(o, 'Ready')?.message === message;
/** The sidecar was asked to run the operation the CR holds. */
const started = (o: LifecycleObject) => local.sidecar.sidecar.operations.get(o.status?.operation?.id ?? '') !== undefined;

async function bind(namespace: string, name: string): Promise<void> {
  await core.patchNamespacedPersistentVolumeClaimStatus({ namespace, name, body: { status: { phase: 'Bound' } } }, mergePatch);
}

/** The Job's end as its controller would write it (the conditions a Job's status must carry to end so). */
async function endJob(namespace: string, name: string, end: 'Complete' | 'Failed'): Promise<void> {
  const now = new Date().toISOString();
  const condition = (type: string) => ({ type, status: 'True', reason: end === 'Failed' ? 'BackoffLimitExceeded' : 'Completed', message: `marked ${end} by the test`, lastProbeTime: now, lastTransitionTime: now });
  const status = end === 'Complete'
    ? { startTime: now, completionTime: now, succeeded: 1, conditions: [condition('SuccessCriteriaMet'), condition('Complete')] }
    : { startTime: now, failed: 1, conditions: [condition('FailureTarget'), condition('Failed')] };
  await batch.patchNamespacedJobStatus({ namespace, name, body: { status } }, mergePatch);
}

describe('the objects a node makes are awaited', () => {
  test('the action waits while a PVC is not Bound, the condition naming it; starts once it is; a Job that completes lets Backup\'s action start', async () => {
    const { namespace } = local;
    await vaults.create(namespace, 'a', { desiredState: 'Running', onLeaf: 'Keep' });
    const waiting = await waitForObject(vaults, namespace, 'a', 'Ready=False, waiting for the PVC',
      waitingFor('Running', 'the action of Running waits for its objects: PersistentVolumeClaim a-data (object "data"): PVC is not Bound. phase: Pending'));
    expect(conditionOf(waiting, 'ObjectsApplied')?.status).toBe('True');
    // Waiting costs no API request: the PVC is read from okt's cache of PVCs, and no look runs on a clock.
    const { counters } = local.operator.transport;
    const before = counters.snapshot();
    await sleep(3_000);
    const during = counters.snapshot();
    expect({ reads: during.reads - before.reads, writes: during.writes - before.writes }).toEqual({ reads: 0, writes: 0 });
    expect(started(waiting)).toBe(false);
    // The PVC's status change (its controller's, here the test's) wakes the CR, judged from the cache: not a GET.
    const gets = counters.byVerb.get;
    await bind(namespace, 'a-data');
    const running = await waitForObject(vaults, namespace, 'a', 'Ready at Running', readyAt('Running'));
    expect(counters.byVerb.get - gets).toBe(0);
    expect(running.status?.operation).toMatchObject({ id: waiting.status?.operation?.id, node: 'Running', phase: 'Succeeded' });
    expect(started(running)).toBe(true);

    await vaults.patchSpec(namespace, 'a', { desiredState: 'Backup' });
    const backup = await waitForObject(vaults, namespace, 'a', 'waiting for the Job', waitingFor('Backup', 'the action of Backup waits for its objects: Job a-backup (object "backup"): Job in progress'));
    expect(started(backup)).toBe(false);
    await endJob(namespace, 'a-backup', 'Complete');
    const done = await waitForObject(vaults, namespace, 'a', 'Ready at Backup', readyAt('Backup'));
    expect(done.status?.operation).toMatchObject({ id: backup.status?.operation?.id, phase: 'Succeeded' });
    expect(started(done)).toBe(true);
  });

  test('a failed Job is the failure of its node\'s action: the retry policy runs it again, then the CR stalls naming the Job; the action never ran', async () => {
    const { namespace } = local;
    await vaults.create(namespace, 'b', { desiredState: 'Running', onLeaf: 'Keep' });
    await waitForObject(vaults, namespace, 'b', 'waiting for the PVC', (o) => conditionOf(o, 'Ready')?.reason === 'ObjectsNotReady');
    await bind(namespace, 'b-data');
    await waitForObject(vaults, namespace, 'b', 'Ready at Running', readyAt('Running'));
    await vaults.patchSpec(namespace, 'b', { desiredState: 'Backup' });
    await waitForObject(vaults, namespace, 'b', 'waiting for the Job', (o) => o.status?.state === 'Backup' && conditionOf(o, 'Ready')?.reason === 'ObjectsNotReady');
    await endJob(namespace, 'b-backup', 'Failed');
    const stalled = await waitForObject(vaults, namespace, 'b', 'Stalled at Backup', (o) => conditionOf(o, 'Stalled')?.status === 'True');
    expect(conditionOf(stalled, 'Stalled')?.reason).toBe('ActionFailed');
    expect(conditionOf(stalled, 'Stalled')?.message).toContain('after 2 runs: never started: Job b-backup (object "backup"): Job Failed: marked Failed by the test');
    expect(stalled.status?.operation).toMatchObject({ node: 'Backup', phase: 'Failed', reason: 'ObjectFailed', retries: 1 });
    // Neither run was given to the sidecar: the first, nor the retry (`<id>.1`).
    const first = stalled.status!.operation!.id.replace(/\.1$/, '');
    expect(local.sidecar.sidecar.operations.get(first)).toBeUndefined();
    expect(started(stalled)).toBe(false);
  });

  test('an object never ready meets its node\'s deadline: the timeout edge is taken, the action never started', async () => {
    const { namespace } = local;
    await vaults.create(namespace, 'c', { desiredState: 'Running', onLeaf: 'Keep' });
    await waitForObject(vaults, namespace, 'c', 'waiting for the PVC', (o) => conditionOf(o, 'Ready')?.reason === 'ObjectsNotReady');
    await bind(namespace, 'c-data');
    await waitForObject(vaults, namespace, 'c', 'Ready at Running', readyAt('Running'));
    await vaults.patchSpec(namespace, 'c', { desiredState: 'Restore' });
    const waiting = await waitForObject(vaults, namespace, 'c', 'waiting for the restore Job', waitingFor('Restore', 'the action of Restore waits for its objects: Job c-restore (object "restore"): Job in progress'));
    const timedOut = await waitForObject(vaults, namespace, 'c', 'at RestoreTimedOut by the timeout edge', (o) => o.status?.state === 'RestoreTimedOut');
    expect(timedOut.status?.lastTransition).toMatchObject({ from: 'Restore', events: ['RestoreTimedOut'] });
    expect(local.sidecar.sidecar.operations.get(waiting.status?.operation?.id ?? '')).toBeUndefined();
    // Pruned on leaving Restore, and gone: deleted with batch/v1's default propagation, a Job would wait
    // for the garbage collector to orphan its Pods (here, with none running, for ever).
    let finalizers: string[] | undefined;
    await waitFor('Job c-restore gone, pruned on leaving Restore', async () => {
      try {
        finalizers = (await batch.readNamespacedJob({ namespace, name: 'c-restore' })).metadata?.finalizers;
        return undefined;
      } catch (error) {
        return httpStatusOf(error) === 404 ? true : undefined;
      }
    }, 10_000, 100).catch((error: unknown) => {
      throw new Error(`${String(error)}; its finalizers: ${finalizers?.join(', ')}`);
    });
  });
});

describe('one render per look', () => {
  let renders = 0;
  const countedGraph = defineGraph({
    name: 'counted',
    entry: 'Start',
    nodes: { Start: { children: ['Running'] }, Running: { children: ['End'] }, End: {} },
    objects: [{
      id: 'data', apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'data', during: 'Running',
      render: (): V1PersistentVolumeClaim => {
        renders += 1;
        return { apiVersion: 'v1', kind: 'PersistentVolumeClaim', spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } };
      },
    }],
  });
  const COUNTEDS = { group: 'okt.dev', version: 'v1alpha1', plural: 'counteds', kind: 'Counted' } as const;
  const counteds = lifecycleObjects(kc, COUNTEDS);
  let counted: LocalOperator | undefined;
  afterAll(async () => counted?.stop());

  test('a look while an action waits for its objects renders them once, for the readiness and the apply alike', async () => {
    await applyGraphCrd(kc, countedGraph, COUNTEDS);
    counted = await startLocalOperator(kc, { graph: countedGraph, resource: COUNTEDS, namespacePrefix: 'okt-render-once' });
    const { namespace, operator } = counted;
    await counteds.create(namespace, 'a', { desiredState: 'Running', onLeaf: 'Keep' });
    await waitForObject(counteds, namespace, 'a', 'waiting for the PVC', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.reason === 'ObjectsNotReady');
    await sleep(500);
    const looks = async () => (await operator.manager.metrics.reconcileTotal.get()).values.reduce((sum, v) => sum + v.value, 0);
    const [looksBefore, rendersBefore] = [await looks(), renders];
    // Each label edit wakes the CR: a look that reads the PVC's readiness, then applies (nothing: its render is unchanged).
    const custom = kc.makeApiClient(CustomObjectsApi);
    for (const n of [1, 2, 3]) {
      await custom.patchNamespacedCustomObject({ ...COUNTEDS, namespace, name: 'a', body: { metadata: { labels: { look: String(n) } } } }, mergePatch);
      await sleep(300);
    }
    const looked = (await looks()) - looksBefore;
    expect(looked).toBeGreaterThanOrEqual(3);
    expect(renders - rendersBefore).toBe(looked);
  });
});

describe('the writes of a transition whose objects change', () => {
  const pacedGraph = defineGraph({
    name: 'paced',
    entry: 'Start',
    nodes: { Start: { children: ['Running'] }, Running: { children: ['Servicing', 'End'] }, Servicing: { children: ['Running'] }, End: {} },
    objects: [{ id: 'config', apiVersion: 'v1', kind: 'ConfigMap', name: 'config', render: ({ node }): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', data: { node } }) }],
  });
  const PACEDS = { group: 'okt.dev', version: 'v1alpha1', plural: 'paceds', kind: 'Paced' } as const;
  const paceds = lifecycleObjects(kc, PACEDS);
  /** A look while the action ran (a watch event woke the CR) records that it runs: the step's write, not the objects'. */
  const seenRunning = (o: LifecycleObject) => o.status?.operation?.phase === 'Running';
  let paced: LocalOperator | undefined;
  afterAll(async () => paced?.stop());

  test('three status writes and one apply: the commit, the objects recorded as applied with the ready verdict as the action starts, the action\'s end', async () => {
    await applyGraphCrd(kc, pacedGraph, PACEDS);
    paced = await startLocalOperator(kc, { graph: pacedGraph, resource: PACEDS, namespacePrefix: 'okt-paced' });
    const { namespace, operator } = paced;
    const restsAt = (state: string) => (o: LifecycleObject) => readyAt(state)(o) && o.status?.operation?.node === state && o.status.operation.phase === 'Succeeded';
    await paceds.create(namespace, 'a', { desiredState: 'Running', onLeaf: 'Keep' });
    const atRest = await waitForObject(paceds, namespace, 'a', 'Ready at Running', restsAt('Running'));
    await sleep(500);
    // Every version of the CR from here on (the operator's transport also renews its Lease, with PUTs too).
    const versions: LifecycleObject[] = [];
    const path = `/apis/${PACEDS.group}/${PACEDS.version}/namespaces/${namespace}/${PACEDS.plural}`;
    const watch = await new Watch(kc).watch(path, { resourceVersion: atRest.metadata?.resourceVersion ?? '', fieldSelector: 'metadata.name=a' }, (_phase, o: LifecycleObject) => versions.push(o), () => undefined);
    const applies = operator.transport.counters.byVerb.patch;
    await paceds.patchSpec(namespace, 'a', { desiredState: 'Servicing' });
    const servicing = await waitForObject(paceds, namespace, 'a', 'Ready at Servicing', restsAt('Servicing'));
    await sleep(500);
    watch.abort();
    // Each version but the spec edit's is a status write; the ConfigMap's server-side apply is a PATCH.
    const statusWrites = versions.filter((o, i) => !isDeepStrictEqual(o.status, (versions[i - 1] ?? atRest).status) && !seenRunning(o)).length;
    expect({ statusWrites, applies: operator.transport.counters.byVerb.patch - applies }).toEqual({ statusWrites: 3, applies: 1 });
    expect(conditionOf(servicing, 'ObjectsApplied')).toMatchObject({ status: 'True', message: 'every object the graph makes at Servicing is applied' });
    expect(conditionOf(servicing, 'ObjectsReady')).toMatchObject({ status: 'True', message: `every object of Servicing is ready: its action starts (operation ${servicing.status?.operation?.id ?? ''})` });
    expect(servicing.status?.objects?.[0]).toMatchObject({ id: 'config', hash: expect.any(String), fields: expect.any(String) });
  });

  test('a CR\'s first transition records the object it makes in its commit, before creating it: three status writes there too', async () => {
    const { namespace } = paced!;
    const versions: LifecycleObject[] = [];
    const path = `/apis/${PACEDS.group}/${PACEDS.version}/namespaces/${namespace}/${PACEDS.plural}`;
    const watch = await new Watch(kc).watch(path, { fieldSelector: 'metadata.name=b' }, (_phase, o: LifecycleObject) => versions.push(o), () => undefined);
    await paceds.create(namespace, 'b', { desiredState: 'Running', onLeaf: 'Keep' });
    await waitForObject(paceds, namespace, 'b', 'Ready at Running', (o) => readyAt('Running')(o) && o.status?.operation?.phase === 'Succeeded');
    await sleep(500);
    watch.abort();
    const statusWrites = versions.filter((o, i) => i > 0 && !isDeepStrictEqual(o.status, versions[i - 1]!.status) && !seenRunning(o));
    // The commit names the ConfigMap without a hash (not applied yet); the next write, its apply recorded, starts the action.
    expect(statusWrites.map((o) => ({ phase: o.status?.operation?.phase, objects: o.status?.objects?.map(({ id, hash }) => ({ id, applied: hash !== undefined })) }))).toEqual([
      { phase: 'Pending', objects: [{ id: 'config', applied: false }] },
      { phase: 'Pending', objects: [{ id: 'config', applied: true }] },
      { phase: 'Succeeded', objects: [{ id: 'config', applied: true }] },
    ]);
  });
});
