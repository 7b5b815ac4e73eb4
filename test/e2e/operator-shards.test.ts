import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { createLogger } from '../../src/controller/index.ts';
import { SHARD_KEY_LABEL, shardKeyOf, shardOf, startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { waitFor } from './helpers/index.ts';
import { LIFECYCLE_FINALIZER } from '../../src/kube/lifecycle-resource.ts';
import { createNamespace, e2eKubeConfig } from './helpers/index.ts';
import { conditionOf, DATABASES, databases, installDatabaseCrd, lifecycleObjects, startNoopSidecar, waitForDatabase, waitForObject } from './helpers/lifecycle.ts';
import { startNoopSidecar as startGraphSidecar } from '../../sidecar/noop.ts';
import { siteGraph } from '../fixtures/object-graph.ts';
import { applyGraphCrd } from './helpers/index.ts';
import { OBJECT_LABELS } from '../../src/graph/index.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
let namespace: string;
let sidecar: Awaited<ReturnType<typeof startNoopSidecar>>;
const operators: RunningOperator[] = [];

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-shards');
  sidecar = await startNoopSidecar();
  for (const index of [0, 1]) {
    operators.push(
      await startOperator({
        kubeConfig: kc,
        graph: databaseGraph,
        resource: DATABASES,
        namespace,
        shard: { index, count: 2 },
        sidecar: { url: sidecar.url, token: sidecar.token },
        logger: createLogger({ level: 'silent' }),
      }),
    );
  }
});

afterAll(async () => {
  for (const operator of operators) await operator.stop();
  await sidecar?.close();
});

async function transitionsOf(operator: RunningOperator): Promise<number> {
  const metric = await operator.manager.metrics.transitionsTotal.get();
  return metric.values.reduce((sum, v) => sum + v.value, 0);
}

test('two shards split the CRs by uid: each CR is driven by exactly the operator of its shard', async () => {
  const names = Array.from({ length: 12 }, (_, i) => `db-${i}`);
  const created = await Promise.all(names.map((name) => api.create(namespace, name, { desiredState: 'Running', onLeaf: 'Keep' })));
  await Promise.all(names.map((name) => waitForDatabase(kc, namespace, name, 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True')));
  const perShard = [0, 1].map((index) => created.filter((db) => shardOf(db.metadata.uid, 2) === index).length);
  expect(perShard[0]! + perShard[1]!).toBe(12);
  // One transition (Start -> Running) per CR, each taken by its own shard's operator only.
  expect(await transitionsOf(operators[0]!)).toBe(perShard[0]);
  expect(await transitionsOf(operators[1]!)).toBe(perShard[1]);
  // Each CR got its key from its shard with its finalizer, so the API server filters: each operator caches its share only.
  for (const name of names) {
    const db = await api.get(namespace, name);
    expect(db.metadata.labels?.[SHARD_KEY_LABEL]).toBe(String(shardKeyOf(db.metadata.uid)));
  }
  for (const [index, operator] of operators.entries()) {
    const own = created.filter((db) => shardOf(db.metadata.uid, 2) === index).map((db) => db.metadata.name).sort();
    const cached = () => operator.lifecycle.informer.store.list().map((db) => db.metadata.name).sort();
    await waitFor(`shard ${index} caches its own CRs only`, async () => (JSON.stringify(cached()) === JSON.stringify(own) ? true : undefined), 10_000, 20);
    // A newcomer leaves the unlabelled view once it is labelled.
    await waitFor(`shard ${index} holds no newcomer`, async () => (operator.lifecycle.newcomers?.store.list().length === 0 ? true : undefined), 10_000, 20);
  }
});

test('an unsharded operator leaves a CR unkeyed; shards started later label it by its uid, and its shard drives it', async () => {
  const ns = await createNamespace(kc, 'okt-shards-unkeyed');
  const log = createLogger({ level: 'silent' });
  const options = { kubeConfig: kc, graph: databaseGraph, resource: DATABASES, namespace: ns, sidecar: { url: sidecar.url, token: sidecar.token }, logger: log };
  const unsharded = await startOperator(options);
  let created: { metadata: { uid: string } };
  try {
    created = await api.create(ns, 'older', { desiredState: 'Running', onLeaf: 'Keep' });
    const taken = await waitForDatabase(kc, ns, 'older', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
    // The finalizer and no key: the label would cost every write of a CR no shard reads.
    expect(taken.metadata.finalizers).toEqual([LIFECYCLE_FINALIZER]);
    expect(taken.metadata.labels?.[SHARD_KEY_LABEL]).toBeUndefined();
  } finally {
    await unsharded.stop();
  }
  const shards = [];
  try {
    for (const index of [0, 1]) shards.push(await startOperator({ ...options, shard: { index, count: 2 } }));
    const db = await waitForDatabase(kc, ns, 'older', 'labelled with its key', (o) => o.metadata.labels?.[SHARD_KEY_LABEL] !== undefined);
    expect(db.metadata.labels?.[SHARD_KEY_LABEL]).toBe(String(shardKeyOf(created.metadata.uid)));
    const owner = shards[shardOf(created.metadata.uid, 2)]!;
    await waitFor('the owner caches it', async () => (owner.lifecycle.informer.store.list().some((o) => o.metadata.name === 'older') ? true : undefined), 10_000, 20);
    expect(shards.filter((o) => o.lifecycle.informer.store.list().some((x) => x.metadata.name === 'older'))).toHaveLength(1);
    // Driven by its shard from there.
    await api.patchSpec(ns, 'older', { desiredState: 'Servicing' });
    await waitForDatabase(kc, ns, 'older', 'Ready at Servicing', (o) => o.status?.state === 'Servicing' && conditionOf(o, 'Ready')?.status === 'True');
    expect(await transitionsOf(owner)).toBe(1);
    expect(await transitionsOf(shards[1 - shardOf(created.metadata.uid, 2)]!)).toBe(0);
  } finally {
    for (const operator of shards) await operator.stop();
  }
});

test('the objects a CR\'s graph makes carry its shard key: each shard caches only its own CRs\' objects', async () => {
  const SITES = { group: 'okt.dev', version: 'v1alpha1', plural: 'sites', kind: 'Site' } as const;
  const sites = lifecycleObjects(kc, SITES);
  await applyGraphCrd(kc, siteGraph, SITES);
  const ns = await createNamespace(kc, 'okt-shards-objects');
  const siteSidecar = await startGraphSidecar({ graph: siteGraph });
  const shards: RunningOperator[] = [];
  try {
    for (const index of [0, 1]) {
      shards.push(await startOperator({
        kubeConfig: kc, graph: siteGraph, resource: SITES, namespace: ns, shard: { index, count: 2 },
        sidecar: { url: siteSidecar.url, token: siteSidecar.token }, logger: createLogger({ level: 'silent' }),
      }));
    }
    const names = Array.from({ length: 8 }, (_, i) => `site-${i}`);
    const created = await Promise.all(names.map((name) => sites.create(ns, name, { desiredState: 'Start', onLeaf: 'Keep' })));
    await Promise.all(names.map((name) => waitForObject(sites, ns, name, 'Ready at Start', (o) => o.status?.state === 'Start' && conditionOf(o, 'Ready')?.status === 'True' && conditionOf(o, 'ObjectsApplied')?.status === 'True')));
    for (const [index, operator] of shards.entries()) {
      const own = created.filter((site) => shardOf(site.metadata.uid, 2) === index);
      // A Service and a Secret per CR: each in the cache of its kind, of its CR's shard only.
      const expected = own.flatMap((site) => ['service', 'keys'].map((id) => `${id} ${site.metadata.uid} ${shardKeyOf(site.metadata.uid)}`)).sort();
      const labelsOf = (labels: Record<string, string> = {}) => `${labels[OBJECT_LABELS.objectId]} ${labels[OBJECT_LABELS.ownerUid]} ${labels[SHARD_KEY_LABEL]}`;
      const cached = () => operator.lifecycle.owned!.informers.flatMap((informer) => informer.store.list().map((o) => labelsOf(o.metadata.labels))).sort();
      await waitFor(`shard ${index} caches its own CRs' objects only`, async () => (JSON.stringify(cached()) === JSON.stringify(expected) ? true : undefined), 10_000, 20);
    }
  } finally {
    for (const operator of shards) await operator.stop();
    await siteSidecar.close();
  }
});
