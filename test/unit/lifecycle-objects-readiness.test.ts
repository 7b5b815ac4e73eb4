// Readiness of the objects a node makes: kstatus's rules per kind, a declaration's predicate instead,
// a node's verdict from its objects; and the gate in step(): the node's action starts only once its
// objects are ready, and a failed object is the action's failure (retry policy, timeout edge).
import type { KubernetesObject, V1ConfigMap, V1Job } from '@kubernetes/client-node';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { defineGraph, renderObjects, type ObjectOwner } from '../../src/graph/index.ts';
import { planObjects } from '../../src/controller/lifecycle/objects/inventory.ts';
import type { Cached } from '../../src/controller/lifecycle/objects/owned.ts';
import type { KubeObject } from '../../src/kube/transport/index.ts';
import { readNodeReadiness } from '../../src/controller/lifecycle/objects/read-readiness.ts';
import { kstatusReadiness, nodeReadiness, objectReadiness, type NodeReadiness, type Readiness } from '../../src/controller/lifecycle/objects/readiness.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

const live = (apiVersion: string, kind: string, body: { spec?: object; status?: object; generation?: number } = {}): KubernetesObject =>
  ({ apiVersion, kind, metadata: { name: 'x', generation: body.generation ?? 1 }, spec: body.spec, status: body.status }) as KubernetesObject;
const conditions = (...list: [string, string, string?][]) => list.map(([type, status, reason]) => ({ type, status, reason, message: `${type} says ${reason ?? status}` }));
const ready: Readiness = { kind: 'ready' };

describe('kstatusReadiness', () => {
  test('Deployment: observed generation, updated, available and ready replicas against spec.replicas; past its progress deadline it failed', () => {
    const rolled = { replicas: 2, updatedReplicas: 2, availableReplicas: 2, readyReplicas: 2, observedGeneration: 3, conditions: conditions(['Progressing', 'True', 'NewReplicaSetAvailable'], ['Available', 'True']) };
    const deployment = (status: object) => live('apps/v1', 'Deployment', { generation: 3, spec: { replicas: 2 }, status: { ...rolled, ...status } });
    expect(kstatusReadiness(deployment({}))).toEqual(ready);
    expect(kstatusReadiness(deployment({ observedGeneration: 2 }))).toEqual({ kind: 'inProgress', message: 'Deployment generation is 3, but latest observed generation is 2' });
    expect(kstatusReadiness(deployment({ updatedReplicas: 1 }))).toEqual({ kind: 'inProgress', message: 'Updated: 1/2' });
    expect(kstatusReadiness(deployment({ availableReplicas: 1 }))).toEqual({ kind: 'inProgress', message: 'Available: 1/2' });
    expect(kstatusReadiness(deployment({ conditions: conditions(['Progressing', 'False', 'ProgressDeadlineExceeded']) }))).toEqual({ kind: 'failed', message: 'Progress deadline exceeded' });
    // spec.replicas defaults to 1.
    expect(kstatusReadiness(live('apps/v1', 'Deployment', { spec: {}, status: {} }))).toEqual({ kind: 'inProgress', message: 'Updated: 0/1' });
  });

  test('StatefulSet: ready and current replicas, and its revision rolled out', () => {
    const set = (status: object) => live('apps/v1', 'StatefulSet', { spec: { replicas: 3 }, status: { replicas: 3, readyReplicas: 3, currentReplicas: 3, updatedReplicas: 3, currentRevision: 'a', updateRevision: 'a', ...status } });
    expect(kstatusReadiness(set({}))).toEqual(ready);
    expect(kstatusReadiness(set({ readyReplicas: 2 }))).toEqual({ kind: 'inProgress', message: 'Ready: 2/3' });
    expect(kstatusReadiness(set({ updateRevision: 'b' })).kind).toBe('inProgress');
  });

  test('Job: Complete=True is ready, Failed=True failed (with its message), otherwise in progress', () => {
    const job = (...list: [string, string, string?][]) => live('batch/v1', 'Job', { status: { conditions: conditions(...list) } });
    expect(kstatusReadiness(job(['Complete', 'True']))).toEqual(ready);
    expect(kstatusReadiness(job(['Failed', 'True', 'BackoffLimitExceeded']))).toEqual({ kind: 'failed', message: 'Job Failed: Failed says BackoffLimitExceeded' });
    expect(kstatusReadiness(job())).toEqual({ kind: 'inProgress', message: 'Job in progress' });
  });

  test('PVC: Bound; Pod: Running and Ready, or Succeeded, and Failed failed; Service: ready, a LoadBalancer once it has an ingress', () => {
    expect(kstatusReadiness(live('v1', 'PersistentVolumeClaim', { status: { phase: 'Bound' } }))).toEqual(ready);
    expect(kstatusReadiness(live('v1', 'PersistentVolumeClaim', { status: { phase: 'Pending' } }))).toEqual({ kind: 'inProgress', message: 'PVC is not Bound. phase: Pending' });
    expect(kstatusReadiness(live('v1', 'Pod', { status: { phase: 'Running', conditions: conditions(['Ready', 'True']) } }))).toEqual(ready);
    expect(kstatusReadiness(live('v1', 'Pod', { status: { phase: 'Succeeded' } }))).toEqual(ready);
    expect(kstatusReadiness(live('v1', 'Pod', { status: { phase: 'Running', conditions: conditions(['Ready', 'False']) } }))).toEqual({ kind: 'inProgress', message: 'Pod phase is Running' });
    expect(kstatusReadiness(live('v1', 'Pod', { status: { phase: 'Failed', message: 'OOMKilled' } }))).toEqual({ kind: 'failed', message: 'Pod has failed: OOMKilled' });
    expect(kstatusReadiness(live('v1', 'Service', { spec: { type: 'ClusterIP' } }))).toEqual(ready);
    expect(kstatusReadiness(live('v1', 'Service', { spec: { type: 'LoadBalancer' }, status: { loadBalancer: {} } }))).toEqual({ kind: 'inProgress', message: 'LoadBalancer has no ingress yet' });
    expect(kstatusReadiness(live('v1', 'Service', { spec: { type: 'LoadBalancer' }, status: { loadBalancer: { ingress: [{ ip: '10.0.0.1' }] } } }))).toEqual(ready);
  });

  test('any other kind: its Ready condition when it has one (its message said), kstatus\'s Stalled/Reconciling pair, else ready', () => {
    expect(kstatusReadiness(live('example.com/v1', 'Database', { status: { conditions: conditions(['Ready', 'False', 'Provisioning']) } }))).toEqual({ kind: 'inProgress', message: 'Ready says Provisioning' });
    expect(kstatusReadiness(live('example.com/v1', 'Database', { status: { conditions: conditions(['Stalled', 'True', 'QuotaExceeded']) } }))).toEqual({ kind: 'failed', message: 'Stalled says QuotaExceeded' });
    expect(kstatusReadiness(live('example.com/v1', 'Database', { status: { conditions: conditions(['Ready', 'True']) } }))).toEqual(ready);
    expect(kstatusReadiness(live('v1', 'ConfigMap'))).toEqual(ready);
  });

  test('whatever a live object\'s status holds, a verdict and no throw (property)', () => {
    const kinds = ['apps/v1 Deployment', 'apps/v1 StatefulSet', 'batch/v1 Job', 'v1 PersistentVolumeClaim', 'v1 Pod', 'v1 Service', 'example.com/v1 Thing'];
    fc.assert(fc.property(fc.constantFrom(...kinds), fc.anything(), fc.anything(), (kind, spec, status) => {
      const [apiVersion, name] = kind.split(' ') as [string, string];
      const verdict = kstatusReadiness({ apiVersion, kind: name, metadata: { name: 'x' }, spec, status } as KubernetesObject);
      expect(['ready', 'inProgress', 'failed']).toContain(verdict.kind);
    }), { numRuns: fcRuns(300) });
  });
});

describe('objectReadiness and nodeReadiness', () => {
  test('a declaration\'s ready predicate replaces kstatus\'s rules', () => {
    const failedJob = live('batch/v1', 'Job', { status: { conditions: conditions(['Failed', 'True']) } });
    expect(objectReadiness({ ready: undefined }, failedJob).kind).toBe('failed');
    expect(objectReadiness({ ready: () => true }, failedJob)).toEqual(ready);
    expect(objectReadiness({ ready: () => false }, live('v1', 'ConfigMap'))).toEqual({ kind: 'inProgress', message: 'its ready predicate says not yet' });
  });

  test('a node is ready when every object is; otherwise it names the first failed one, else the first not ready (property)', () => {
    const verdict = fc.oneof(fc.constant<Readiness>(ready), fc.constantFrom<Readiness>({ kind: 'inProgress', message: 'wait' }, { kind: 'failed', message: 'broken' }));
    fc.assert(fc.property(fc.array(verdict, { maxLength: 6 }), (verdicts) => {
      const objects = verdicts.map((readiness, i) => ({ name: `o${i}`, readiness }));
      const node = nodeReadiness(objects);
      const firstOf = (kind: string) => objects.find((o) => o.readiness.kind === kind);
      const named = firstOf('failed') ?? firstOf('inProgress');
      if (named === undefined) expect(node).toEqual(ready);
      else expect(node).toEqual({ kind: named.readiness.kind, object: named.name, message: (named.readiness as { message: string }).message });
    }), { numRuns: fcRuns(300) });
  });
});

const backupGraph = (deadline?: { after: string; then: 'Failed' }) => defineGraph({
  name: 'backup',
  entry: 'Start',
  nodes: {
    Start: { children: ['Backup'] },
    Backup: { children: ['Done', 'Failed'], retry: { attempts: 2, backoffMs: 1000 }, ...(deadline === undefined ? {} : { deadline }) },
    Done: {},
    Failed: {},
  },
  objects: [
    { id: 'settings', apiVersion: 'v1', kind: 'ConfigMap', render: (): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', data: {} }) },
    { id: 'job', apiVersion: 'batch/v1', kind: 'Job', during: 'Backup', render: (): V1Job => ({ apiVersion: 'batch/v1', kind: 'Job', spec: { template: { spec: { containers: [] } } } }) },
  ],
});
describe('readNodeReadiness: a node\'s objects judged from okt\'s caches', () => {
  const owner: ObjectOwner = { apiVersion: 'okt.dev/v1', kind: 'App', metadata: { name: 'x', namespace: 'team', uid: 'uid-1' } };
  const rendering = renderObjects(backupGraph(), owner, 'Backup');
  const applied = planObjects([], rendering.objects).settled;
  const cachedAs = (object: KubernetesObject): Cached => ({ kind: 'live', object: object as KubeObject });
  const settings = cachedAs(live('v1', 'ConfigMap'));
  const judge = (job: Cached, inventory = applied) => {
    const asked: string[] = [];
    const { readiness: verdict, objects } = readNodeReadiness((apiVersion, kind, namespace, name) => {
      asked.push(`${kind} ${namespace}/${name}`);
      return kind === 'Job' ? job : settings;
    }, 'team', rendering, inventory);
    expect(objects).toEqual([{ id: 'settings', kind: 'ConfigMap', name: 'x' }, { id: 'job', kind: 'Job', name: 'x' }]);
    return { verdict, asked };
  };
  const jobIs = (message: string) => ({ kind: 'inProgress', object: 'Job x (object "job")', message, ref: { id: 'job', kind: 'Job', name: 'x' } });

  test('every object of the node looked up in the cache of its kind, in the CR\'s namespace, and judged by kstatus', () => {
    expect(judge(cachedAs(live('batch/v1', 'Job', { status: { conditions: conditions(['Complete', 'True']) } })))).toEqual({ verdict: ready, asked: ['ConfigMap team/x', 'Job team/x'] });
    expect(judge(cachedAs(live('batch/v1', 'Job', { status: {} }))).verdict).toEqual(jobIs('Job in progress'));
  });

  test('not ready: one the cache lacks, one whose kind\'s cache has not synced, and one not applied as rendered (not looked up)', () => {
    expect(judge({ kind: 'absent' }).verdict).toEqual(jobIs('not found'));
    expect(judge({ kind: 'unseen' }).verdict).toEqual(jobIs('okt\'s cache of its kind has not synced yet'));
    const unapplied = judge(cachedAs(live('batch/v1', 'Job', { status: { conditions: conditions(['Complete', 'True']) } })), applied.map((e) => (e.id === 'job' ? { ...e, hash: 'an older render' } : e)));
    expect(unapplied).toEqual({ verdict: jobIs('not applied yet'), asked: ['ConfigMap team/x'] });
  });
});

const notReady: NodeReadiness = { kind: 'inProgress', object: 'Job x-job (object "job")', message: 'Job in progress' };
const jobFailed: NodeReadiness = { kind: 'failed', object: 'Job x-job (object "job")', message: 'Job Failed' };

describe('the gate: a node\'s action starts once its objects are ready', () => {
  test('entering the node starts nothing; while its objects are not ready Ready=False names the object, no look on a clock (a change of one wakes the CR); then the action starts', () => {
    const sim = new LifecycleSim(backupGraph(), 'Backup');
    let verdict: NodeReadiness = notReady;
    sim.objectsAt = (node) => (node === 'Backup' ? verdict : { kind: 'ready' });
    const entered = sim.reconcile(); // first sight: the entry node is left with the first move
    expect(sim.status?.state).toBe('Backup');
    expect(entered.startOperation).toBeUndefined();
    expect(entered.again).toBe(true);
    expect(entered.poll).toBeUndefined();
    const waiting = sim.reconcile();
    expect(waiting.startOperation).toBeUndefined();
    expect(waiting.requeueAfterMs).toBeUndefined();
    expect(waiting.again).toBeUndefined();
    expect(findCondition(sim.status!.conditions, 'Ready')).toMatchObject({ status: 'False', reason: 'ObjectsNotReady', message: 'the action of Backup waits for its objects: Job x-job (object "job"): Job in progress' });
    expect(sim.started.size).toBe(0);
    verdict = { kind: 'ready' };
    const started = sim.reconcile();
    expect(started.startOperation?.node).toBe('Backup');
    expect(sim.started.size).toBe(1);
  });

  test('objects not read (no verdict for this node) start nothing either, and are not looked at again on a clock', () => {
    const sim = new LifecycleSim(backupGraph(), 'Backup');
    sim.reconcile();
    const waiting = sim.reconcile();
    expect(sim.status?.state).toBe('Backup');
    expect(waiting.requeueAfterMs).toBeUndefined();
    expect(waiting.again).toBeUndefined();
    expect(sim.started.size).toBe(0);
    expect(findCondition(sim.status!.conditions, 'Ready')?.reason).toBe('ObjectsNotReady');
  });

  test('a failed object is the action\'s failure: the retry policy runs it again, then the CR stalls naming the object', () => {
    const sim = new LifecycleSim(backupGraph(), 'Backup');
    sim.objectsAt = (node) => (node === 'Backup' ? jobFailed : { kind: 'ready' });
    sim.reconcile();
    sim.reconcile();
    expect(sim.status?.operation).toMatchObject({ phase: 'Failed', reason: 'ObjectFailed', message: 'never started: Job x-job (object "job"): Job Failed' });
    expect(findCondition(sim.status!.conditions, 'Ready')?.reason).toBe('ActionRetrying');
    for (let i = 0; i < 6; i++) sim.reconcile();
    expect(sim.started.size).toBe(0);
    expect(sim.status?.operation?.retries).toBe(1);
    expect(findCondition(sim.status!.conditions, 'Stalled')).toMatchObject({ status: 'True', reason: 'ActionFailed' });
    expect(findCondition(sim.status!.conditions, 'Stalled')?.message).toContain('Job x-job (object "job"): Job Failed');
  });

  test('an object never ready meets the node\'s deadline: its timeout edge is taken', () => {
    const sim = new LifecycleSim(backupGraph({ after: '5s', then: 'Failed' }), 'Backup');
    sim.objectsAt = (node) => (node === 'Backup' ? notReady : { kind: 'ready' });
    for (let i = 0; i < 10 && sim.status?.state !== 'Failed'; i++) sim.reconcile();
    expect(sim.status?.state).toBe('Failed');
    expect(sim.started.size).toBe(0);
  });
});

describe('condition ObjectsReady and its events', () => {
  const eventsOf = (sim: LifecycleSim, type: string) => sim.events.filter((e) => e.type === `dev.okt.lifecycle.objects.${type}.v1`);

  test('objects ready: one objects.ready event, in the write that sets ObjectsReady=True, naming the objects; not again while it stays so', () => {
    const sim = new LifecycleSim(backupGraph(), 'Backup');
    let verdict: NodeReadiness = notReady;
    const objects = [{ id: 'settings', kind: 'ConfigMap', name: 'x-settings' }, { id: 'job', kind: 'Job', name: 'x-job' }];
    sim.objectsAt = (node) => (node === 'Backup' ? verdict : { kind: 'ready' });
    sim.reconcile();
    sim.reconcile();
    expect(findCondition(sim.status!.conditions, 'ObjectsReady')).toMatchObject({ status: 'False', reason: 'ObjectsNotReady' });
    expect(eventsOf(sim, 'ready')).toEqual([]);
    verdict = { kind: 'ready' };
    sim.objectRefsAt = () => objects;
    sim.reconcile();
    expect(findCondition(sim.status!.conditions, 'ObjectsReady')).toMatchObject({ status: 'True', reason: 'Ready' });
    expect(eventsOf(sim, 'ready')).toMatchObject([{ subject: 'Backup', data: { objects, to: 'Backup' } }]);
    const sequence = sim.status!.sequence;
    sim.delivered = sequence;
    sim.reconcile();
    expect(sim.events.filter((e) => e.sequence > sequence && e.type.includes('objects'))).toEqual([]);
  });

  test('a failed object: one objects.failed event naming it, reason ObjectFailed, in the write that ends the operation', () => {
    const sim = new LifecycleSim(backupGraph(), 'Backup');
    sim.objectsAt = (node) => (node === 'Backup' ? { ...jobFailed, ref: { id: 'job', kind: 'Job', name: 'x-job' } } : { kind: 'ready' });
    sim.reconcile();
    sim.reconcile();
    expect(findCondition(sim.status!.conditions, 'ObjectsReady')).toMatchObject({ status: 'False', reason: 'ObjectFailed', message: 'Job x-job (object "job"): Job Failed' });
    const failed = eventsOf(sim, 'failed');
    expect(failed).toMatchObject([{ subject: 'Backup', data: { objects: [{ id: 'job', kind: 'Job', name: 'x-job' }], reason: 'ObjectFailed', message: 'Job x-job (object "job"): Job Failed' } }]);
    expect(sim.events.find((e) => e.type === 'dev.okt.lifecycle.action.failed.v1')?.sequence).toBe(failed[0]!.sequence + 1);
  });
});
