import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, Informer } from '../../../src/controller/index.ts';
import { connectionFromKubeConfig, isNotFound, KubeTransport, type ResourceRef } from '../../../src/kube/transport/index.ts';
import { applyCrd, createNamespace, deleteCrd, e2eKubeConfig, waitFor } from '../helpers/index.ts';
import { startTcpProxy } from '../helpers/tcp-proxy.ts';
import { gadget, gadgetCrd, setUpGadgets, type Gadget } from './fixture.ts';

const group = 'informer.controller.okt.dev';
const quiet = createLogger({ level: 'silent' });
const CRDS: ResourceRef = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', namespaced: false };
let transport: KubeTransport;
let resource: ResourceRef;

beforeAll(async () => {
  ({ transport, resource } = await setUpGadgets(group));
});
afterAll(async () => {
  await transport?.close();
});

function record(informer: Informer<Gadget>): string[] {
  const events: string[] = [];
  informer.addHandler({
    onAdd: (obj) => events.push(`add ${obj.metadata.name}`),
    onUpdate: (old, obj) => events.push(`update ${obj.metadata.name} ${old.status?.state ?? ''}>${obj.status?.state ?? ''}`),
    onDelete: (obj) => events.push(`delete ${obj.metadata.name}`),
  });
  return events;
}

describe('Informer against a real API server', () => {
  it('lists what exists, then follows adds, updates and deletes; the cache drops managedFields', async () => {
    const namespace = await createNamespace(e2eKubeConfig(), 'informer');
    for (const name of ['a', 'b', 'c']) await transport.create(resource, namespace, gadget(group, namespace, name));
    const informer = new Informer<Gadget>({ transport, resource, namespace, logger: quiet });
    const events = record(informer);
    // A handler that does not need the old object: given the new one on each update.
    const changes: string[] = [];
    informer.addHandler({ onChange: (obj) => changes.push(`${obj.metadata.name} ${obj.status?.state ?? ''}`) });
    informer.start();
    try {
      await informer.waitForSync();
      expect(informer.store.size).toBe(3);
      expect(events.sort()).toEqual(['add a', 'add b', 'add c']);
      expect(informer.store.get(`${namespace}/a`)?.metadata.managedFields).toBeUndefined();
      events.length = 0;

      await transport.create(resource, namespace, gadget(group, namespace, 'd'));
      await transport.patchStatus(resource, namespace, 'a', { state: 'Running' });
      await transport.delete(resource, namespace, 'b');
      await waitFor('the three events', async () => (events.length >= 3 ? true : undefined), 10_000);
      expect(events).toEqual(['add d', 'update a >Running', 'delete b']);
      expect([...informer.store.keys()].sort()).toEqual([`${namespace}/a`, `${namespace}/c`, `${namespace}/d`]);
      expect(informer.store.get(`${namespace}/a`)?.status?.state).toBe('Running');
      expect(changes).toEqual(['a Running']);
      expect(informer.stats.lists).toBe(1);
    } finally {
      await informer.stop();
    }
  });

  it('resumes from its last resourceVersion when the server ends the stream, without relisting', async () => {
    const namespace = await createNamespace(e2eKubeConfig(), 'informer');
    const informer = new Informer<Gadget>({ transport, resource, namespace, logger: quiet, watchTimeoutSeconds: 1 });
    informer.start();
    try {
      await informer.waitForSync();
      const firstWatches = informer.stats.watches;
      for (let i = 0; i < 3; i += 1) {
        await transport.create(resource, namespace, gadget(group, namespace, `g${i}`));
        // Let at least one stream end between creates (each lasts 1 s).
        const watches = informer.stats.watches;
        await waitFor('the watch to be re-opened', async () => (informer.stats.watches > watches ? true : undefined), 10_000);
      }
      await waitFor('all three in the cache', async () => (informer.store.size === 3 ? true : undefined), 10_000);
      expect(informer.stats.watches).toBeGreaterThan(firstWatches + 2);
      expect(informer.stats.lists).toBe(1);
      expect(informer.stats.relists).toBe(0);
    } finally {
      await informer.stop();
    }
  });

  it('relists after 410 Gone: the CRD is deleted and re-created, so its old resourceVersions expire', async () => {
    // Its own group: deleting the CRD must not disturb the other tests.
    const ownGroup = 'relist.controller.okt.dev';
    const kc = e2eKubeConfig();
    const { manifest, resource: own } = gadgetCrd(ownGroup);
    await applyCrd(kc, manifest);
    const namespace = await createNamespace(kc, 'relist');
    await transport.create(own, namespace, gadget(ownGroup, namespace, 'before'));
    // kube-apiserver keeps serving open watches from a deleted CRD's old storage for a while: short
    // streams make the informer come back soon.
    const informer = new Informer<Gadget>({
      transport, resource: own, namespace, logger: quiet, watchTimeoutSeconds: 2, backoff: { initialMs: 100, maxMs: 1000 },
    });
    const events = record(informer);
    informer.start();
    try {
      await informer.waitForSync();
      expect([...informer.store.keys()]).toEqual([`${namespace}/before`]);

      await deleteCrd(kc, manifest.metadata.name);
      // The CRD itself, not just its served endpoint: re-created while still terminating, it would vanish after.
      await waitFor('the CRD to be gone', async () => {
        try {
          await transport.get(CRDS, undefined, manifest.metadata.name);
          return undefined;
        } catch (err) {
          return isNotFound(err) ? true : undefined;
        }
      }, 60_000, 200);
      // Its open watch may still be served by the old storage, which can skip ahead with a bookmark:
      // wait until a re-watch has hit the missing CRD, so the next one carries the pre-deletion version.
      await waitFor('a watch of the missing CRD to fail', async () => (informer.stats.failures > 0 ? true : undefined), 30_000, 50);
      await applyCrd(kc, manifest);
      await transport.create(own, namespace, gadget(ownGroup, namespace, 'after'));

      await waitFor('the informer to relist', async () => (informer.stats.relists > 0 && informer.store.has(`${namespace}/after`) ? true : undefined), 60_000, 200);
      expect([...informer.store.keys()]).toEqual([`${namespace}/after`]);
      expect(informer.stats.lists).toBeGreaterThanOrEqual(2);
      expect(events).toContain('delete before');
      expect(events).toContain('add after');
    } finally {
      await informer.stop();
      await deleteCrd(kc, manifest.metadata.name);
    }
  });
});

describe('Informer behind a connection that goes silent', () => {
  it('abandons a watch that hears nothing for watchIdleTimeoutMs and catches up from its last resourceVersion', async () => {
    const kc = e2eKubeConfig();
    const apiServer = new URL(kc.getCurrentCluster()?.server as string);
    const proxy = await startTcpProxy({ host: apiServer.hostname, port: Number(apiServer.port) });
    // The informer reaches the API server only through the proxy; the test writes to it directly.
    const settings = await connectionFromKubeConfig(kc);
    const proxied = new KubeTransport({ ...settings, origin: `https://127.0.0.1:${proxy.port}` });
    const namespace = await createNamespace(kc, 'silent');
    const idleMs = 3000;
    const informer = new Informer<Gadget>({ transport: proxied, resource, namespace, logger: quiet, watchIdleTimeoutMs: idleMs });
    informer.start();
    try {
      await informer.waitForSync();
      await transport.create(resource, namespace, gadget(group, namespace, 'before'));
      await waitFor('the watch through the proxy to bring "before"', async () => (informer.store.has(`${namespace}/before`) ? true : undefined), 10_000, 20);
      const watches = informer.stats.watches;
      const idleTimeouts = informer.stats.idleTimeouts;

      expect(proxy.blackHoleOpenLinks()).toBeGreaterThan(0);
      const blackHoledAt = performance.now();
      await transport.create(resource, namespace, gadget(group, namespace, 'after'));
      await transport.patchStatus(resource, namespace, 'before', { state: 'Running' });
      await waitFor('the informer to catch up', async () =>
        informer.store.has(`${namespace}/after`) && informer.store.get(`${namespace}/before`)?.status?.state === 'Running' ? true : undefined, 30_000, 20);
      const caughtUpMs = performance.now() - blackHoledAt;

      // idleMs to notice, then a fresh connection at once: well before the 2 x idleMs it would take
      // if the next watch waited for undici's PING probe of the silent HTTP/2 connection. The
      // server's own end of the stream (timeoutSeconds) was black-holed too.
      expect(caughtUpMs).toBeLessThan(idleMs + 2500);
      expect(proxy.swallowedBytes).toBeGreaterThan(0);
      expect(informer.stats.idleTimeouts).toBeGreaterThan(idleTimeouts);
      expect(informer.stats.watches).toBeGreaterThan(watches);
      expect(proxy.connections).toBeGreaterThan(1);
      expect(informer.stats.lists).toBe(1);
      expect(informer.stats.relists).toBe(0);
    } finally {
      await informer.stop();
      await proxied.close();
      await proxy.close();
    }
  });
});
