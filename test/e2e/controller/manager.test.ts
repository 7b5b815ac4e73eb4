import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Controller, createLogger, Informer, Manager, microTime, type Lease } from '../../../src/controller/index.ts';
import { LEASES, splitKey, type KubeTransport, type ResourceRef } from '../../../src/kube/transport/index.ts';
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
      // two's first read of the Lease runs beside its informer's list, not before it: wait for that read.
      const readyTwo = await waitFor('two to see who leads', async () => {
        const report = JSON.parse((await fetchText(two.manager.healthPort as number, '/readyz')).body) as Record<string, unknown>;
        return report.currentLeader ? report : undefined;
      }, 10_000, 20);
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

  it('a replica that loses its Lease starts no reconcile after the loss: the running one finishes, the queued keys are dropped', async () => {
    const own = await createNamespace(e2eKubeConfig(), 'usurped');
    const names = ['k0', 'k1', 'k2', 'k3', 'k4'];
    for (const name of names) await transport.create(resource, own, gadget(group, own, name));
    const logger = createLogger({ level: 'silent' });
    let lost = (): void => undefined;
    const leadershipLost = new Promise<void>((resolve) => (lost = resolve));
    const manager = new Manager({
      transport, logger, health: false, onLeadershipLost: () => lost(),
      leaderElection: { namespace, name: 'usurped', identity: 'victim', leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 250 },
    });
    const informer = new Informer<Gadget>({ transport, resource, namespace: own, logger });
    // One worker, held by its first reconcile until the test lets it go: the other keys wait in the queue.
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const started: string[] = [];
    const finished: string[] = [];
    const controller = new Controller({
      name: 'usurped', logger, workers: 1,
      reconcile: async (key) => {
        started.push(key);
        await held;
        finished.push(key);
      },
    });
    controller.watch(informer);
    manager.addInformer(informer);
    manager.addController(controller);
    await manager.start();
    try {
      await waitFor('the first reconcile to hold the only worker, four keys queued', async () =>
        started.length === 1 && controller.queue.length === names.length - 1 ? true : undefined, 10_000, 20);

      // Another replica takes the Lease over (as after a partition healed): the victim's next renewal
      // conflicts, the read after it shows the new holder.
      const lease = await transport.get<Lease>(LEASES, namespace, 'usurped');
      const now = microTime(new Date());
      await transport.replace<Lease>(LEASES, namespace, 'usurped', {
        ...lease, spec: { ...lease.spec, holderIdentity: 'usurper', acquireTime: now, renewTime: now, leaseTransitions: (lease.spec?.leaseTransitions ?? 0) + 1 },
      });
      await waitFor('the victim to know it lost', async () => (!manager.isLeader ? true : undefined), 10_000, 20);
      expect(controller.queue.length).toBe(0);

      release();
      await leadershipLost;
      expect(started).toHaveLength(1);
      expect(finished).toEqual(started);
      expect((await transport.get<Lease>(LEASES, namespace, 'usurped')).spec?.holderIdentity).toBe('usurper');
    } finally {
      release();
      await manager.stop();
    }
    // Nor during the stop that followed.
    expect(started).toHaveLength(1);
  });
});
