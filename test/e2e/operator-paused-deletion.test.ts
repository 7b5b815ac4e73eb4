// Deletion under a pause and at the entry node, with a real operator, API server and sidecar: a CR
// that never left its entry node is released with nothing run, and a paused CR's deletion takes no
// transition until the pause is lifted (docs/operator.md, "Deletion").
import { Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { e2eKubeConfig } from './helpers/index.ts';
import { conditionOf, DATABASES, databases, installDatabaseCrd, startLocalOperator, waitForDatabase, waitForGone, type DatabaseObject, type LocalOperator } from './helpers/lifecycle.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
let namespace: string;
let local: LocalOperator;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  local = await startLocalOperator(kc, { graph: databaseGraph, resource: DATABASES, namespacePrefix: 'okt-paused-deletion' });
  namespace = local.namespace;
});

afterAll(async () => {
  await local?.stop();
});

/** Every version of the CR the API server sends after `since`, until it is gone. */
async function versionsUntilGone(name: string, since: string): Promise<DatabaseObject[]> {
  const seen: DatabaseObject[] = [];
  let controller: AbortController | undefined;
  try {
    await new Promise<void>((resolve, reject) => {
      const path = `/apis/${DATABASES.group}/${DATABASES.version}/namespaces/${namespace}/${DATABASES.plural}`;
      new Watch(kc)
        .watch(
          path,
          { resourceVersion: since, fieldSelector: `metadata.name=${name}` },
          (phase, object: DatabaseObject) => {
            seen.push(object);
            if (phase === 'DELETED') resolve();
          },
          (error: unknown) => reject(error instanceof Error ? error : new Error(`the watch of ${name} ended before it was gone: ${String(error)}`)),
        )
        .then((c) => (controller = c), reject);
      setTimeout(() => reject(new Error(`${name} not gone within 30 s; last seen: ${JSON.stringify(seen.at(-1)?.status)}`)), 30_000);
    });
  } finally {
    controller?.abort();
  }
  return seen;
}

test('a CR paused at its entry node and deleted is released with no action run and no transition (the database graph would start the server to stop it)', async () => {
  await api.create(namespace, 'never-started', { desiredState: 'Running', paused: true });
  const paused = await waitForDatabase(kc, namespace, 'never-started', 'paused at Start with its finalizer', (o) => conditionOf(o, 'Ready')?.reason === 'Paused' && (o.metadata.finalizers ?? []).includes('okt.dev/lifecycle'));
  expect(paused.status?.state).toBe('Start');
  const versions = versionsUntilGone('never-started', paused.metadata.resourceVersion);
  await api.remove(namespace, 'never-started');
  const seen = await versions;
  expect(seen.length).toBeGreaterThan(0);
  for (const version of seen) {
    expect(version.status?.state).toBe('Start');
    expect(version.status?.transition).toBe(0);
    expect(version.status?.operation).toBeUndefined();
  }
  // The operation the first transition would have started: the sidecar never heard of it.
  expect(local.sidecar.sidecar.operations.get(`${paused.metadata.uid}-1`)).toBeUndefined();
});

test('a paused CR being deleted waits at its node, saying so, until the pause is lifted; then it is driven down', async () => {
  await api.create(namespace, 'held', { desiredState: 'Running' });
  const ready = await waitForDatabase(kc, namespace, 'held', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
  await api.patchSpec(namespace, 'held', { paused: true });
  await waitForDatabase(kc, namespace, 'held', 'paused', (o) => conditionOf(o, 'Ready')?.reason === 'Paused');
  await api.remove(namespace, 'held');
  const waiting = await waitForDatabase(kc, namespace, 'held', 'the deletion held by the pause', (o) => o.metadata.deletionTimestamp !== undefined && conditionOf(o, 'Ready')?.message?.includes("the deletion's included") === true);
  expect(waiting.status?.state).toBe('Running');
  expect(waiting.status?.transition).toBe(ready.status?.transition);
  expect(conditionOf(waiting, 'Ready')?.message).toContain('set spec.paused to false to drive the application down to End');
  expect(local.sidecar.sidecar.operations.get(`${ready.metadata.uid}-2`)).toBeUndefined();
  await api.patchSpec(namespace, 'held', { paused: false });
  expect(await waitForGone(kc, namespace, 'held')).toBe(true);
  // Resumed, the deletion ran Stopping's action (the second transition's).
  expect(local.sidecar.sidecar.operations.get(`${ready.metadata.uid}-2`)?.phase).toBe('Succeeded');
});
