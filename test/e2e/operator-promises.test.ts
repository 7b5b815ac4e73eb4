// The operator's promises on a real API server and a real sidecar, where the step's unit tests cannot
// reach: a retry policy declared in the graph, a sidecar that refuses a start because it is busy (a
// condition on the CR, never a silent backoff), a cancellable action cancelled by a deletion, and a
// leaf reached through the spec that ends the CR's life at once, not at the next poll.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createLogger } from '../../src/controller/index.ts';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { parseSidecarConfig } from '../../sidecar/config.ts';
import { startSidecar, type RunningSidecar } from '../../sidecar/server.ts';
import { createNamespace, e2eKubeConfig, waitFor, applyGraphCrd } from './helpers/index.ts';
import type { DatabaseObject } from './helpers/lifecycle.ts';

const graph = defineGraph({
  name: 'jobs',
  entry: 'Start',
  nodes: {
    Start: { children: ['Flaky', 'Slow', 'Long', 'End'] },
    Flaky: { children: ['End'], retry: { attempts: 3, backoffMs: 200 } },
    Slow: { children: ['End'] },
    Long: { children: ['End'], cancellable: true },
    End: {},
  },
});
const JOBS = { group: 'promises.okt.dev', version: 'v1', plural: 'jobs', kind: 'Job' } as const;
const kc = e2eKubeConfig();
const objects = kc.makeApiClient(CustomObjectsApi);
let namespace: string;
let dir: string;
let sidecar: RunningSidecar;
let operator: RunningOperator;

const create = (name: string, spec: Record<string, unknown>) =>
  objects.createNamespacedCustomObject({ ...JOBS, namespace, body: { apiVersion: `${JOBS.group}/${JOBS.version}`, kind: JOBS.kind, metadata: { name }, spec } }) as Promise<DatabaseObject>;
const get = (name: string) => objects.getNamespacedCustomObject({ ...JOBS, namespace, name }) as Promise<DatabaseObject>;
const condition = (obj: DatabaseObject, type: string) => obj.status?.conditions.find((c) => c.type === type);
/** Until the API server no longer has the CR. */
const waitGone = (name: string) =>
  waitFor(`${name} gone`, async () => {
    try {
      await get(name);
      return undefined;
    } catch {
      return true;
    }
  }, 30_000, 20);

beforeAll(async () => {
  await applyGraphCrd(kc, graph, JOBS);
  namespace = await createNamespace(kc, 'okt-promises');
  dir = mkdtempSync(path.join(tmpdir(), 'okt-promises-'));
  writeFileSync(path.join(dir, 'token'), 'promises-sidecar-token-0123456789');
  // Flaky fails its first two runs (a counter file per operation's CR); Slow takes a while.
  const config = parseSidecarConfig(
    {
      listen: { host: '127.0.0.1', port: 0 },
      tokenFile: 'token',
      journal: 'journal.jsonl',
      logLevel: 'silent',
      maxActiveOperations: 1,
      graphs: {
        jobs: {
          nodes: {
            Flaky: { command: { argv: ['sh', '-c', 'echo run >> flaky.count; [ "$(wc -l < flaky.count)" -ge 3 ]'] } },
            Slow: { command: { argv: ['sleep', '3'] } },
            Long: { command: { argv: ['sleep', '600'] } },
          },
        },
      },
    },
    dir,
  );
  sidecar = await startSidecar(config);
  operator = await startOperator({
    kubeConfig: kc,
    graph,
    resource: JOBS,
    namespace,
    sidecar: { url: sidecar.url, token: 'promises-sidecar-token-0123456789' },
    pollIntervalMs: 600_000,
    logger: createLogger({ level: (process.env.OKT_TEST_LOG ?? 'silent') as 'silent' }),
  });
});

afterAll(async () => {
  await operator?.stop();
  await sidecar?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a retry policy in the graph runs a failing action again under new operation ids, then the CR is Ready over the run that succeeded', async () => {
  const created = await create('flaky', { desiredState: 'Flaky', onLeaf: 'Keep' });
  const seenReasons = new Set<string>();
  const ready = await waitFor('flaky Ready', async () => {
    const obj = await get('flaky');
    const reason = condition(obj, 'Ready')?.reason;
    if (reason !== undefined) seenReasons.add(reason);
    return condition(obj, 'Ready')?.status === 'True' ? obj : undefined;
  }, 30_000, 20);
  expect(ready.status?.operation).toMatchObject({ id: `${created.metadata.uid}-1.2`, phase: 'Succeeded', retries: 2 });
  expect(ready.status?.transition).toBe(1);
  expect(sidecar.operations.get(`${created.metadata.uid}-1`)?.phase).toBe('Failed');
  expect(sidecar.operations.get(`${created.metadata.uid}-1.1`)?.phase).toBe('Failed');
  expect(seenReasons.has('ActionRetrying') || seenReasons.has('ActionRunning')).toBe(true);
});

test('a start the busy sidecar refuses is said on the CR (SidecarBusy, naming the operation it waits for), then runs once the sidecar is free', async () => {
  const first = await create('slow-1', { desiredState: 'Slow', onLeaf: 'Keep' });
  await waitFor('slow-1 running', async () => (sidecar.operations.active().includes(`${first.metadata.uid}-1`) ? true : undefined), 30_000, 20);
  const second = await create('slow-2', { desiredState: 'Slow', onLeaf: 'Keep' });
  const busy = await waitFor('slow-2 SidecarBusy', async () => {
    const obj = await get('slow-2');
    return condition(obj, 'Ready')?.reason === 'SidecarBusy' ? obj : undefined;
  }, 30_000, 20);
  expect(condition(busy, 'Ready')?.message).toContain(`${first.metadata.uid}-1`);
  expect(condition(busy, 'Stalled')?.status).toBe('False');
  const done = await waitFor('slow-2 Ready', async () => {
    const obj = await get('slow-2');
    return condition(obj, 'Ready')?.status === 'True' ? obj : undefined;
  }, 30_000, 50);
  expect(done.status?.operation).toMatchObject({ id: `${second.metadata.uid}-1`, phase: 'Succeeded' });
  expect(sidecar.operations.get(`${second.metadata.uid}-1`)?.attempts).toBe(1);
});

test('a leaf reached through the spec deletes the CR at once, not at the next poll (the poll interval here is 10 minutes)', async () => {
  await create('short', { desiredState: 'End' });
  await waitGone('short');
  await objects.listNamespacedCustomObject({ ...JOBS, namespace }).then((list) => {
    expect((list as { items: DatabaseObject[] }).items.map((o) => o.metadata.name)).not.toContain('short');
  });
});

test('deleting a CR whose cancellable action runs cancels the action, then goes down the default path to its leaf', async () => {
  const created = await create('long', { desiredState: 'Long', onLeaf: 'Keep' });
  const id = `${created.metadata.uid}-1`;
  await waitFor('long running', async () => (sidecar.operations.active().includes(id) ? true : undefined), 30_000, 20);
  await objects.deleteNamespacedCustomObject({ ...JOBS, namespace, name: 'long' });
  await waitGone('long');
  expect(sidecar.operations.get(id)).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled' });
  expect(sidecar.operations.active()).toEqual([]);
});
