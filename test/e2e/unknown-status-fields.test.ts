// Status fields okt does not know, written by another tool (or a newer okt), on a real API server: the
// CRD keeps them and the operator's writes leave them alone, through transitions. A field inside
// status.operation lives as long as that operation: it goes with it when the next one replaces it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { createLogger } from '../../src/controller/index.ts';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { parseSidecarConfig } from '../../sidecar/config.ts';
import { startSidecar, type RunningSidecar } from '../../sidecar/server.ts';
import { createNamespace, e2eKubeConfig, mergePatch } from './helpers/index.ts';
import { conditionOf, DATABASES, databases, installDatabaseCrd, waitForDatabase, type DatabaseObject } from './helpers/lifecycle.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
const objects = kc.makeApiClient(CustomObjectsApi);
const TOKEN = 'unknown-fields-token-0123456789';
let namespace: string;
let dir: string;
let sidecar: RunningSidecar;
let operator: RunningOperator;

/** The other tool: a JSON merge patch on the status subresource, as kubectl patch --subresource=status sends. */
const rivalWrites = (name: string, status: Record<string, unknown>) =>
  objects.patchNamespacedCustomObjectStatus({ ...DATABASES, namespace, name, body: { status } }, mergePatch) as Promise<DatabaseObject & { status: Record<string, unknown> }>;

type RawStatus = Record<string, unknown> & { operation?: Record<string, unknown> };
const raw = (obj: DatabaseObject) => obj.status as unknown as RawStatus;
const readyAt = (node: string) => (o: DatabaseObject) => o.status?.state === node && conditionOf(o, 'Ready')?.status === 'True' && o.status.observedGeneration === o.metadata.generation;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-unknown-fields');
  dir = mkdtempSync(path.join(tmpdir(), 'okt-unknown-fields-'));
  writeFileSync(path.join(dir, 'token'), TOKEN);
  // Servicing's action waits for the file `go`, so the other tool can write while it runs.
  const config = {
    listen: { host: '127.0.0.1', port: 0 },
    tokenFile: 'token',
    journal: 'journal.jsonl',
    logLevel: 'silent',
    maxActiveOperations: 4, // a test that fails while Servicing waits does not hold up the next one
    graphs: {
      database: {
        nodes: {
          Running: { command: { argv: ['true'] } },
          Servicing: { command: { argv: ['sh', '-c', 'until [ -e go ]; do sleep 0.05; done'] } },
          Stopping: { command: { argv: ['true'] } },
        },
      },
    },
  };
  sidecar = await startSidecar(parseSidecarConfig(config, dir));
  operator = await startOperator({
    kubeConfig: kc,
    graph: databaseGraph,
    resource: DATABASES,
    namespace,
    sidecar: { url: sidecar.url, token: TOKEN },
    logger: createLogger({ level: (process.env.OKT_TEST_LOG ?? 'silent') as 'silent' }),
  });
});

afterAll(async () => {
  await operator?.stop();
  await sidecar?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('another tool\'s status fields survive the operator\'s transitions; its field in an operation lasts as long as that operation', async () => {
  const fromAnotherTool = { owner: 'backup-operator', lastBackup: '2026-01-01T00:00:00Z', retained: [3, 2, 1] };
  await api.create(namespace, 'shared', { desiredState: 'Running', onLeaf: 'Keep' });
  const atRunning = await waitForDatabase(kc, namespace, 'shared', 'Ready at Running', readyAt('Running'));

  // Kept by the API server at all: the CRD preserves unknown status fields.
  const written = await rivalWrites('shared', { fromAnotherTool, operation: { ticket: 'OPS-1' } });
  expect(written.status.fromAnotherTool).toEqual(fromAnotherTool);
  expect(raw(written).operation).toMatchObject({ id: atRunning.status?.operation?.id, ticket: 'OPS-1' });

  // A transition into Servicing, whose action waits: the top-level field stays; the Running operation's ticket went with it.
  await api.patchSpec(namespace, 'shared', { desiredState: 'Servicing' });
  const servicing = await waitForDatabase(kc, namespace, 'shared', 'Servicing running', (o) => o.status?.state === 'Servicing' && o.status.operation?.node === 'Servicing');
  expect(raw(servicing).fromAnotherTool).toEqual(fromAnotherTool);
  expect(raw(servicing).operation?.ticket).toBeUndefined();

  // While the action runs, the other tool annotates that operation; the operator then records its end in it.
  await rivalWrites('shared', { operation: { ticket: 'OPS-2' } });
  writeFileSync(path.join(dir, 'go'), '');
  const done = await waitForDatabase(kc, namespace, 'shared', 'Ready at Servicing', readyAt('Servicing'));
  expect(raw(done).operation).toMatchObject({ id: servicing.status?.operation?.id, phase: 'Succeeded', ticket: 'OPS-2' });
  expect(raw(done).fromAnotherTool).toEqual(fromAnotherTool);

  // Two more transitions, each a status write of the operator's: the top-level field is still there.
  const transitions = done.status!.transition;
  await api.patchSpec(namespace, 'shared', { desiredState: 'Running' });
  await waitForDatabase(kc, namespace, 'shared', 'Ready at Running again', readyAt('Running'));
  await api.patchSpec(namespace, 'shared', { desiredState: 'Stopping' });
  const stopped = await waitForDatabase(kc, namespace, 'shared', 'Ready at Stopping', readyAt('Stopping'));
  expect(stopped.status?.transition).toBe(transitions + 2);
  expect(stopped.status?.pathSummary).toBe('>Start>(Running<<>>Servicing)x1>Running>Stopping');
  expect(raw(stopped).fromAnotherTool).toEqual(fromAnotherTool);
  expect(raw(stopped).operation).toMatchObject({ node: 'Stopping', phase: 'Succeeded' });
  expect(raw(stopped).operation?.ticket).toBeUndefined();
});

test('okt\'s own status fields are still validated by the API server', async () => {
  await api.create(namespace, 'checked', { desiredState: 'Running', onLeaf: 'Keep' });
  await waitForDatabase(kc, namespace, 'checked', 'Ready at Running', readyAt('Running'));
  await expect(rivalWrites('checked', { operation: { phase: 'Done' } })).rejects.toMatchObject({ code: 422 });
  await expect(rivalWrites('checked', { transition: -1 })).rejects.toMatchObject({ code: 422 });
});
