import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { createLogger } from '../../src/controller/index.ts';
import { shardOf, startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { createNamespace, e2eKubeConfig } from './helpers/index.ts';
import { conditionOf, DATABASES, databases, installDatabaseCrd, startNoopSidecar, waitForDatabase } from './helpers/lifecycle.ts';

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
});
