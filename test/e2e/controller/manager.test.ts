import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller, createLogger, Informer, Manager } from '../../../src/controller/index.ts';
import { splitKey, type KubeTransport, type ResourceRef } from '../../../src/kube/transport/index.ts';
import { createNamespace, e2eKubeConfig, waitFor } from '../helpers/index.ts';
import { gadget, setUpGadgets, type Gadget } from './fixture.ts';

const group = 'manager.controller.okt.dev';
let transport: KubeTransport;
let resource: ResourceRef;
let namespace = '';

beforeAll(async () => {
  ({ transport, resource } = await setUpGadgets(group));
  namespace = await createNamespace(e2eKubeConfig(), 'manager');
});
afterAll(async () => {
  await transport?.close();
});

/** A one-step operator: copy spec.desiredState into status.state, from the cache, with one write. */
function operator(leaderElection: { name: string; identity: string } | false): { manager: Manager; informer: Informer<Gadget> } {
  const logger = createLogger({ level: 'silent' });
  const manager = new Manager({
    transport, logger, health: { port: 0, host: '127.0.0.1' },
    leaderElection: leaderElection && { namespace, ...leaderElection, leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 250 },
  });
  const informer = new Informer<Gadget>({ transport, resource, namespace, logger });
  const controller = new Controller({
    name: 'gadgets', logger, metrics: manager.metrics, workers: 2,
    reconcile: async (key) => {
      const obj = informer.store.get(key);
      const desired = obj?.spec?.desiredState;
      if (!obj || !desired || obj.status?.state === desired) return;
      const { namespace: ns, name } = splitKey(key);
      await transport.patchStatus(resource, ns, name, { state: desired }, { resourceVersion: obj.metadata.resourceVersion as string });
      manager.metrics.transitionsTotal.labels('gadget', obj.status?.state ?? 'none', desired).inc();
    },
  });
  controller.watch(informer);
  manager.addInformer(informer);
  manager.addController(controller);
  return { manager, informer };
}

async function fetchText(port: number, path: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, body: await response.text() };
}

describe('Manager: informer + controller + health server', () => {
  it('reconciles from the cache with one write and no read per change, and serves /healthz, /readyz, /metrics', async () => {
    const { manager, informer } = operator(false);
    await manager.start();
    try {
      const port = manager.healthPort as number;
      expect(await fetchText(port, '/healthz')).toEqual({ status: 200, body: 'ok\n' });
      await informer.waitForSync();
      await waitFor('readyz 200', async () => ((await fetchText(port, '/readyz')).status === 200 ? true : undefined), 10_000);
      expect(JSON.parse((await fetchText(port, '/readyz')).body)).toEqual({ ready: true, cachesSynced: true, leaderElection: false });

      const before = transport.counters.snapshot();
      for (const name of ['x', 'y']) await transport.create(resource, namespace, gadget(group, namespace, name, 'Running'));
      await waitFor('both reconciled', async () =>
        ['x', 'y'].every((name) => informer.store.get(`${namespace}/${name}`)?.status?.state === 'Running') ? true : undefined, 10_000);
      const after = transport.counters.snapshot();
      // Two creates by the test, one status write per gadget by the controller, no reads.
      expect(after.writes - before.writes).toBe(4);
      expect(after.reads - before.reads).toBe(0);

      const metrics = (await fetchText(port, '/metrics')).body;
      expect(metrics).toMatch(/okt_transitions_total\{graph="gadget",from="none",to="Running"\} 2/);
      expect(metrics).toMatch(/okt_reconcile_total\{controller="gadgets",result="success"\} \d+/);
      expect(metrics).toMatch(/okt_kube_api_requests_total\{verb="patch"\} \d+/);
      expect(metrics).toContain('okt_workqueue_depth');
      expect(metrics).toContain('okt_reconcile_duration_seconds_bucket');
      expect(metrics).toContain('process_resident_memory_bytes');
    } finally {
      await manager.stop();
    }
  });

  it('with leader election, only the leader reconciles; /readyz says who leads; stop hands over', async () => {
    const one = operator({ name: 'gadget-operator', identity: 'one' });
    const two = operator({ name: 'gadget-operator', identity: 'two' });
    await one.manager.start();
    await waitFor('one to lead', async () => (one.manager.isLeader ? true : undefined), 10_000, 20);
    await two.manager.start();
    try {
      await two.informer.waitForSync();
      const readyTwo = JSON.parse((await fetchText(two.manager.healthPort as number, '/readyz')).body) as Record<string, unknown>;
      expect(readyTwo).toMatchObject({ ready: true, leaderElection: true, leader: false, identity: 'two', currentLeader: 'one' });

      await one.manager.stop();
      await waitFor('two to lead', async () => (two.manager.isLeader ? true : undefined), 10_000, 20);
      await transport.create(resource, namespace, gadget(group, namespace, 'z', 'Stopped'));
      await waitFor('z reconciled by two', async () => (two.informer.store.get(`${namespace}/z`)?.status?.state === 'Stopped' ? true : undefined), 10_000);
      const readyNow = JSON.parse((await fetchText(two.manager.healthPort as number, '/readyz')).body) as Record<string, unknown>;
      expect(readyNow).toMatchObject({ leader: true, currentLeader: 'two' });
    } finally {
      await two.manager.stop();
    }
  });
});
