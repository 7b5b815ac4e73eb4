import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  isConflict, isGone, isNotFound, KubeApiError, LEASES, type KubeTransport, type ResourceRef, type WatchEvent,
} from '../../../src/kube/transport/index.ts';
import { createNamespace, e2eKubeConfig } from '../helpers/index.ts';
import { gadget, setUpGadgets, type Gadget } from './fixture.ts';

const group = 'transport.controller.okt.dev';
let transport: KubeTransport;
let resource: ResourceRef;
let namespace = '';

beforeAll(async () => {
  ({ transport, resource } = await setUpGadgets(group));
  namespace = await createNamespace(e2eKubeConfig(), 'transport');
});
afterAll(async () => {
  await transport?.close();
});

async function caught(call: Promise<unknown>): Promise<KubeApiError> {
  try {
    await call;
  } catch (err) {
    if (err instanceof KubeApiError) return err;
    throw err;
  }
  throw new Error('expected a KubeApiError, the call succeeded');
}

describe('KubeTransport against a real API server', () => {
  it('creates, gets and lists with a resourceVersion', async () => {
    const created = await transport.create<Gadget>(resource, namespace, gadget(group, namespace, 'one'));
    expect(created.metadata.uid).toEqual(expect.any(String));
    const got = await transport.get<Gadget>(resource, namespace, 'one');
    expect(got.metadata.resourceVersion).toBe(created.metadata.resourceVersion);
    const list = await transport.list<Gadget>(resource, { namespace });
    expect(list.items.map((item) => item.metadata.name)).toContain('one');
    expect(Number(list.metadata.resourceVersion)).toBeGreaterThanOrEqual(Number(created.metadata.resourceVersion));
  });

  it('patches /status with a resourceVersion precondition: current wins, stale gets a typed 409', async () => {
    const created = await transport.create<Gadget>(resource, namespace, gadget(group, namespace, 'contended'));
    const rv = created.metadata.resourceVersion as string;
    const before = transport.counters.snapshot();
    const patched = await transport.patchStatus<Gadget>(resource, namespace, 'contended', { state: 'Running', transitions: 1 }, { resourceVersion: rv });
    expect(transport.counters.writes - before.writes).toBe(1);
    expect(transport.counters.reads - before.reads).toBe(0);
    expect(patched.status).toEqual({ state: 'Running', transitions: 1 });
    expect(patched.metadata.generation).toBe(created.metadata.generation);

    const err = await caught(transport.patchStatus(resource, namespace, 'contended', { state: 'Stale' }, { resourceVersion: rv }));
    expect(isConflict(err)).toBe(true);
    expect(err.reason).toBe('Conflict');
    expect(err.status?.message).toMatch(/modified/);
    expect((await transport.get<Gadget>(resource, namespace, 'contended')).status?.state).toBe('Running');
  });

  it('types the errors: 404 NotFound, 409 AlreadyExists, 410 on a watch from an expired resourceVersion', async () => {
    const missing = await caught(transport.get(resource, namespace, 'nobody'));
    expect(isNotFound(missing)).toBe(true);
    expect(missing.reason).toBe('NotFound');
    expect(missing.message).toContain('nobody');

    await transport.create(resource, namespace, gadget(group, namespace, 'twice'));
    const duplicate = await caught(transport.create(resource, namespace, gadget(group, namespace, 'twice')));
    expect(duplicate.statusCode).toBe(409);
    expect(duplicate.reason).toBe('AlreadyExists');

    const expired = await caught((async () => {
      for await (const _event of transport.watch(resource, { namespace, resourceVersion: '1' })) {
        // an expired resourceVersion ends the stream with an ERROR event before any object
      }
    })());
    expect(isGone(expired)).toBe(true);
  });

  it('merge-patches finalizers, and a delete then leaves the object terminating until they are gone', async () => {
    await transport.create(resource, namespace, gadget(group, namespace, 'final'));
    const withFinalizer = await transport.patchMetadata<Gadget>(resource, namespace, 'final', { finalizers: ['okt.dev/lifecycle'] });
    expect(withFinalizer.metadata.finalizers).toEqual(['okt.dev/lifecycle']);
    await transport.delete(resource, namespace, 'final');
    const terminating = await transport.get<Gadget>(resource, namespace, 'final');
    expect(terminating.metadata.deletionTimestamp).toEqual(expect.any(String));
    const stale = await caught(transport.patchMetadata(resource, namespace, 'final', { finalizers: null }, { resourceVersion: withFinalizer.metadata.resourceVersion as string }));
    expect(isConflict(stale)).toBe(true);
    await transport.patchMetadata(resource, namespace, 'final', { finalizers: null }, { resourceVersion: terminating.metadata.resourceVersion as string });
    expect(isNotFound(await caught(transport.get(resource, namespace, 'final')))).toBe(true);
  });

  it('streams watch events from a resourceVersion', async () => {
    const start = await transport.list(resource, { namespace });
    const abort = new AbortController();
    const seen: WatchEvent<Gadget>[] = [];
    const watching = (async () => {
      for await (const event of transport.watch<Gadget>(resource, { namespace, resourceVersion: start.metadata.resourceVersion, signal: abort.signal })) {
        if (event.type === 'BOOKMARK') continue;
        seen.push(event);
        if (seen.length === 3) break;
      }
    })();
    await transport.create(resource, namespace, gadget(group, namespace, 'watched'));
    await transport.patchStatus(resource, namespace, 'watched', { state: 'Servicing' });
    await transport.delete(resource, namespace, 'watched');
    await watching;
    abort.abort();
    expect(seen.map((event) => [event.type, event.object.metadata.name])).toEqual([
      ['ADDED', 'watched'], ['MODIFIED', 'watched'], ['DELETED', 'watched'],
    ]);
    expect(seen[1]?.object.status?.state).toBe('Servicing');
  });

  it('gets, creates and updates a Lease with optimistic concurrency', async () => {
    const lease = await transport.create(LEASES, namespace, {
      apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: 'l', namespace }, spec: { holderIdentity: 'a', leaseDurationSeconds: 15 },
    });
    const updated = await transport.replace(LEASES, namespace, 'l', { ...lease, spec: { holderIdentity: 'b', leaseDurationSeconds: 15 } });
    expect((updated.spec as { holderIdentity: string }).holderIdentity).toBe('b');
    expect(isConflict(await caught(transport.replace(LEASES, namespace, 'l', { ...lease, spec: { holderIdentity: 'c' } })))).toBe(true);
    expect(((await transport.get(LEASES, namespace, 'l')).spec as { holderIdentity: string }).holderIdentity).toBe('b');
  });
});
