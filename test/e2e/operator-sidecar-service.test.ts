// The sidecar of a CR that names none is reached at the Service the graph makes for it (its port
// named okt-sidecar): `http://<service>.<namespace>.svc:<port>`, with the operator-wide token though
// no --sidecar-url-allow names it; a CR cannot point it elsewhere (a URL of its own is judged by the
// allow-list, as always), and spec.sidecar.url still wins. This API server has no node nor cluster DNS:
// the operator's attempt at the Service's name (ENOTFOUND) shows where it calls; the in-cluster demo
// (test/in-cluster/demo.test.ts) walks a CR through such a Service on a real node.
import type { V1Service } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { createLogger } from '../../src/controller/index.ts';
import { startNoopSidecar, type NoopSidecar } from '../../sidecar/noop.ts';
import { applyGraphCrd, createNamespace, e2eKubeConfig } from './helpers/index.ts';
import { conditionOf, lifecycleObjects, waitForObject, type LifecycleObject } from './helpers/lifecycle.ts';

const SHOPS = { group: 'okt.dev', version: 'v1alpha1', plural: 'shops', kind: 'Shop' } as const;
const shopGraph = defineGraph({
  name: 'shop',
  entry: 'Start',
  nodes: { Start: { children: ['Running'] }, Running: { children: ['End'] }, End: {} },
  objects: [
    {
      id: 'service', apiVersion: 'v1', kind: 'Service',
      render: ({ name }): V1Service => ({ apiVersion: 'v1', kind: 'Service', spec: { selector: { app: name }, ports: [{ name: 'metrics', port: 9090 }, { name: 'okt-sidecar', port: 8479 }] } }),
    },
  ],
});

const kc = e2eKubeConfig();
const shops = lifecycleObjects(kc, SHOPS);
let namespace: string;
let sidecar: NoopSidecar;
let operator: RunningOperator;

beforeAll(async () => {
  await applyGraphCrd(kc, shopGraph, SHOPS);
  namespace = await createNamespace(kc, 'okt-sidecar-service');
  sidecar = await startNoopSidecar({ graph: shopGraph });
  // No --sidecar-url: the graph's Service is where its CRs' sidecars are; the local sidecar's URL is allowed for a CR naming it.
  operator = await startOperator({
    kubeConfig: kc, graph: shopGraph, resource: SHOPS, namespace,
    sidecar: { token: sidecar.token, allow: [sidecar.url] },
    logger: createLogger({ level: (process.env.OKT_TEST_LOG ?? 'silent') as 'silent' }),
  });
});
afterAll(async () => {
  await operator?.stop();
  await sidecar?.close();
});

const reason = (o: LifecycleObject) => conditionOf(o, 'Ready')?.reason;

describe('the sidecar URL from the graph\'s Service', () => {
  test('a CR naming no sidecar is driven at http://<its Service>.<namespace>.svc:<the okt-sidecar port>, with the operator-wide token', async () => {
    await shops.create(namespace, 'a', { desiredState: 'Running', onLeaf: 'Keep' });
    // The step's write says SidecarUnavailable; the objects are applied after it, in the same look.
    const waiting = await waitForObject(shops, namespace, 'a', 'SidecarUnavailable at the Service\'s name, the Service made', (o) =>
      reason(o) === 'SidecarUnavailable' && (conditionOf(o, 'Ready')?.message ?? '').includes(`a.${namespace}.svc`) && (o.status?.objects ?? []).length > 0);
    // Not refused: the operator-wide token may go there, so the CR holds okt's finalizer and its Service was made.
    expect(waiting.metadata.finalizers).toContain('okt.dev/lifecycle');
    expect(conditionOf(waiting, 'Stalled')?.status ?? 'False').toBe('False');
    expect(waiting.status?.objects?.map((o) => `${o.kind}/${o.name}`)).toEqual(['Service/a']);
  });

  test('a CR naming a URL of its own is judged by the allow-list: refused without a Secret, whatever the graph makes', async () => {
    await shops.create(namespace, 'b', { desiredState: 'Running', onLeaf: 'Keep', sidecar: { url: 'http://collector.elsewhere.example:8479' } });
    const refused = await waitForObject(shops, namespace, 'b', 'SidecarNotAllowed', (o) => conditionOf(o, 'Stalled')?.reason === 'SidecarNotAllowed');
    expect(conditionOf(refused, 'Stalled')?.message).toContain('http://collector.elsewhere.example:8479');
  });

  test('spec.sidecar.url wins over the graph\'s Service', async () => {
    await shops.create(namespace, 'c', { desiredState: 'Running', onLeaf: 'Keep', sidecar: { url: sidecar.url } });
    const running = await waitForObject(shops, namespace, 'c', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
    expect(running.status?.operation).toMatchObject({ node: 'Running', phase: 'Succeeded' });
  });
});
