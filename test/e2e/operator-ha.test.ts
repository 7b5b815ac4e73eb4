import { CoordinationV1Api, CustomObjectsApi } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createNamespace, e2eKubeConfig, mergePatch, waitFor } from './helpers/index.ts';
import { conditionOf, DATABASES, databases, installDatabaseCrd, startNoopSidecar, waitForDatabase } from './helpers/lifecycle.ts';
import { killHard, spawnOperator } from './helpers/operator-process.ts';
import { createLifecycleEventReceiver, type LifecycleEvent } from '../../src/events/index.ts';
import { EVENTS_DELIVERED_BEFORE } from '../../src/controller/lifecycle/index.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
let namespace: string;
let sidecar: Awaited<ReturnType<typeof startNoopSidecar>>;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-ha');
  sidecar = await startNoopSidecar();
});
afterAll(async () => sidecar?.close());

describe('the operator beside other writers and replicas', () => {
  test('409 conflicts from a concurrent writer: the operator retries on fresh data and still takes every transition once', async () => {
    const operator = spawnOperator({ namespace, sidecarUrl: sidecar.url, token: sidecar.token });
    const objects = kc.makeApiClient(CustomObjectsApi);
    let writing = true;
    let writes = 0;
    // A second writer bumps resourceVersion as fast as it can, so the operator's writes keep meeting 409.
    const rival = (async () => {
      while (writing) {
        try {
          await objects.patchNamespacedCustomObject({ group: DATABASES.group, version: DATABASES.version, plural: DATABASES.plural, namespace, name: 'contested', body: { metadata: { labels: { rival: String(writes++) } } } }, mergePatch);
        } catch {
          await sleep(5);
        }
      }
    })();
    try {
      await api.create(namespace, 'contested', { desiredState: 'Running', onLeaf: 'Keep' });
      for (const desired of ['Servicing', 'Running', 'Stopping']) {
        await waitForDatabase(kc, namespace, 'contested', 'Ready', (o) => conditionOf(o, 'Ready')?.status === 'True' && o.status?.observedGeneration === o.metadata.generation, 60_000);
        await api.patchSpec(namespace, 'contested', { desiredState: desired });
      }
      const db = await waitForDatabase(kc, namespace, 'contested', 'Ready at Stopping', (o) => o.status?.state === 'Stopping' && conditionOf(o, 'Ready')?.status === 'True', 60_000);
      expect(db.status?.path).toEqual(['Start', 'Running', 'Servicing', 'Running', 'Stopping']);
      expect(db.status?.transition).toBe(4);
      expect(writes).toBeGreaterThan(20);
    } finally {
      writing = false;
      await rival;
      await killHard(operator);
    }
  });

  test('two replicas with leader election: one leads; when it is killed the other takes over and the CR still converges', async () => {
    const lease = ['--leader-elect', '--leader-election-namespace', namespace, '--leader-election-id', 'okt-db', '--lease-duration', '3', '--renew-deadline', '2', '--retry-period', '0.5'];
    const first = spawnOperator({ namespace, sidecarUrl: sidecar.url, token: sidecar.token, extra: [...lease, '--leader-election-identity', 'first'] });
    const second = spawnOperator({ namespace, sidecarUrl: sidecar.url, token: sidecar.token, extra: [...lease, '--leader-election-identity', 'second'] });
    const coordination = kc.makeApiClient(CoordinationV1Api);
    try {
      const holder = await waitFor('a leader', async () => {
        try {
          return (await coordination.readNamespacedLease({ name: 'okt-db', namespace })).spec?.holderIdentity || undefined;
        } catch {
          return undefined;
        }
      });
      await api.create(namespace, 'replicated', { desiredState: 'Running', onLeaf: 'Keep' });
      await waitForDatabase(kc, namespace, 'replicated', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
      const [leader, standby] = holder === 'first' ? [first, second] : [second, first];
      await killHard(leader);
      await api.patchSpec(namespace, 'replicated', { desiredState: 'Servicing' });
      const db = await waitForDatabase(kc, namespace, 'replicated', 'Ready at Servicing', (o) => o.status?.state === 'Servicing' && conditionOf(o, 'Ready')?.status === 'True', 60_000);
      expect(db.status?.path).toEqual(['Start', 'Running', 'Servicing']);
      const next = (await coordination.readNamespacedLease({ name: 'okt-db', namespace })).spec?.holderIdentity;
      expect(next).toBe(holder === 'first' ? 'second' : 'first');
      expect(standby.exitCode).toBeNull();
    } finally {
      await killHard(first);
      await killHard(second);
    }
  });

  test('a new leader does not send again what its predecessor delivered (the mark in the Lease), and sends what it did not', async () => {
    const received: LifecycleEvent[] = [];
    const receiver = await createLifecycleEventReceiver({ dedupe: 0, onEvent: (event) => void received.push(event) });
    const lease = ['--leader-elect', '--leader-election-namespace', namespace, '--leader-election-id', 'okt-mark', '--lease-duration', '3', '--renew-deadline', '2', '--retry-period', '0.5', '--sink', receiver.url];
    const coordination = kc.makeApiClient(CoordinationV1Api);
    const readLease = () => coordination.readNamespacedLease({ name: 'okt-mark', namespace }).catch(() => undefined);
    const names = ['marked-a', 'marked-b', 'marked-c'];
    const first = spawnOperator({ namespace, sidecarUrl: sidecar.url, token: sidecar.token, extra: [...lease, '--leader-election-identity', 'first'] });
    let second: ReturnType<typeof spawnOperator> | undefined;
    try {
      for (const name of names) await api.create(namespace, name, { desiredState: 'Running', onLeaf: 'Keep' });
      const sequences = new Map<string, number>();
      for (const name of names) {
        const db = await waitForDatabase(kc, namespace, name, 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
        sequences.set(db.metadata.uid!, db.status!.sequence!);
      }
      const deliveredAll = () => [...sequences].every(([uid, sequence]) => received.some((e) => e.partitionkey === uid && Number(e.sequence) === sequence));
      await waitFor('every event delivered', async () => deliveredAll() || undefined);
      const newest = Math.max(...received.map((e) => Date.parse(e.time)));
      // The leader's renewals carry the mark past every delivered event.
      await waitFor('the mark past the last delivery', async () => (Date.parse((await readLease())?.metadata?.annotations?.[EVENTS_DELIVERED_BEFORE] ?? '') > newest) || undefined);
      const before = received.length;
      // A crash: no release, the next leader waits out the lease.
      await killHard(first);
      second = spawnOperator({ namespace, sidecarUrl: sidecar.url, token: sidecar.token, extra: [...lease, '--leader-election-identity', 'second'] });
      await waitFor('the second replica leads', async () => ((await readLease())?.spec?.holderIdentity === 'second') || undefined, 20_000);
      await api.patchSpec(namespace, 'marked-a', { desiredState: 'Servicing' });
      await waitForDatabase(kc, namespace, 'marked-a', 'Ready at Servicing', (o) => o.status?.state === 'Servicing' && conditionOf(o, 'Ready')?.status === 'True', 60_000);
      const uid = [...sequences.keys()][0]!;
      const servicing = await waitFor('the move to Servicing delivered', async () => received.slice(before).find((e) => e.partitionkey === uid && e.data.to === 'Servicing'));
      // Let the new leader look at every CR, then: nothing delivered before the crash came again.
      await sleep(2_000);
      const ids = received.map((e) => e.id);
      expect(new Set(ids).size, `redelivered after the new leader took over: ${ids.filter((id, i) => ids.indexOf(id) !== i).join(', ')}`).toBe(ids.length);
      expect(received.slice(before).every((e) => e.partitionkey === uid), 'only the moved CR sends after the takeover').toBe(true);
      expect(servicing.type).toBe('dev.okt.lifecycle.transition.v1');
    } finally {
      await killHard(first);
      if (second) await killHard(second);
      await receiver.close();
    }
  });
});
