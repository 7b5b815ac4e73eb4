// What the API server keeps of okt's writes in a CR's managedFields: one entry, by manager `okt`
// (not "unknown"), with status tracked as one field (the CRD makes status an atomic map): before, the
// status entry listed every field of every condition and was 1.4 KB of a 4.4 KB CR at rest.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { e2eKubeConfig } from './helpers/index.ts';
import { conditionOf, DATABASES, installDatabaseCrd, lifecycleObjects, startLocalOperator, waitForObject, type LocalOperator } from './helpers/lifecycle.ts';

const kc = e2eKubeConfig();
const databases = lifecycleObjects(kc, DATABASES);
let local: LocalOperator;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  local = await startLocalOperator(kc, { graph: databaseGraph, resource: DATABASES, namespacePrefix: 'okt-managed' });
});

afterAll(async () => {
  await local?.stop();
});

test("a CR at rest: okt's writes are managed by `okt`, and its status is one field of managedFields", async () => {
  await databases.create(local.namespace, 'pg', { desiredState: 'Running' });
  const db = await waitForObject(databases, local.namespace, 'pg', 'Ready', (o) => conditionOf(o, 'Ready')?.status === 'True');
  const entries = (db.metadata as { managedFields?: { manager: string; fieldsV1: Record<string, unknown> }[] }).managedFields ?? [];
  expect(entries.map((e) => e.manager).sort()).toEqual(['kubernetes-client-javascript', 'okt']);
  const okt = entries.find((e) => e.manager === 'okt')!;
  expect(okt.fieldsV1['f:status']).toEqual({});
  expect(Buffer.byteLength(JSON.stringify(okt))).toBeLessThan(300);
});
