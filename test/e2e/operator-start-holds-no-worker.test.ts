// A committed action's start holds no worker while the sidecar answers it: with one worker, a CR
// whose start the sidecar has not answered yet does not keep another CR from its transitions, on a
// real API server and a real sidecar, behind a forwarding proxy that holds one CR's start.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createLogger } from '../../src/controller/index.ts';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { databaseGraph } from '../../graphs/database.ts';
import { createNamespace, e2eKubeConfig } from './helpers/index.ts';
import { conditionOf, databases, DATABASES, installDatabaseCrd, startNoopSidecar, waitForDatabase } from './helpers/lifecycle.ts';
import type { NoopSidecar } from '../../sidecar/noop.ts';

const kc = e2eKubeConfig();
let namespace: string;
let sidecar: NoopSidecar;
let proxy: Server;
let operator: RunningOperator;
/** Operation ids starting with this are held: their starts reach the sidecar only once released. */
let heldPrefix: string | undefined;
const held: { release: () => void; aborted: () => boolean }[] = [];

function forward(incoming: IncomingMessage, answer: ServerResponse): void {
  const target = new URL(sidecar.url);
  const { connection: _hop, ...headers } = incoming.headers;
  // A connection per request, dropped with its client's (a long-poll's): nothing outlives the test.
  const out = request({ host: target.hostname, port: target.port, method: incoming.method, path: incoming.url, headers, agent: false }, (reply) => {
    answer.writeHead(reply.statusCode ?? 502, reply.headers);
    reply.pipe(answer);
  });
  out.on('error', () => answer.destroy());
  answer.on('close', () => out.destroy());
  incoming.pipe(out);
}

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-start-worker');
  sidecar = await startNoopSidecar();
  proxy = createServer((incoming, answer) => {
    const id = /^\/v1\/operations\/([^/?]+)$/.exec(incoming.url ?? '')?.[1];
    if (incoming.method === 'PUT' && id !== undefined && heldPrefix !== undefined && id.startsWith(heldPrefix)) {
      let closed = false;
      answer.on('close', () => (closed = !answer.writableFinished));
      let released = false;
      const release = () => {
        if (!released && !answer.destroyed) forward(incoming, answer);
        released = true;
      };
      held.push({ release, aborted: () => closed });
      return;
    }
    forward(incoming, answer);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  operator = await startOperator({
    kubeConfig: kc,
    graph: databaseGraph,
    resource: DATABASES,
    namespace,
    workers: 1,
    sidecar: { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, token: sidecar.token },
    logger: createLogger({ level: (process.env.OKT_TEST_LOG ?? 'silent') as 'silent' }),
  });
});

afterAll(async () => {
  for (const start of held) start.release();
  await operator?.stop();
  proxy?.closeAllConnections();
  proxy?.close();
  await sidecar?.close();
});

test('with one worker, a CR whose start the sidecar holds does not keep another CR from reaching Ready; it starts once released', async () => {
  const first = await databases(kc).create(namespace, 'held', { desiredState: 'Running' });
  heldPrefix = first.metadata.uid;
  // Its transition is committed; its start waits at the proxy.
  await expect.poll(() => held.length, { timeout: 30_000 }).toBe(1);
  await databases(kc).create(namespace, 'free', { desiredState: 'Running' });
  const free = await waitForDatabase(kc, namespace, 'free', 'Ready at Running', (obj) => obj.status?.state === 'Running' && conditionOf(obj, 'Ready')?.status === 'True');
  expect(free.status?.operation?.phase).toBe('Succeeded');
  // The held start is still open: nobody gave up on it to free the worker.
  expect(held[0]!.aborted()).toBe(false);
  const waiting = await databases(kc).get(namespace, 'held');
  expect(waiting.status?.state).toBe('Running');
  expect(conditionOf(waiting, 'Ready')?.status).not.toBe('True');

  held[0]!.release();
  const started = await waitForDatabase(kc, namespace, 'held', 'Ready at Running', (obj) => conditionOf(obj, 'Ready')?.status === 'True');
  expect(started.status?.operation).toMatchObject({ id: `${first.metadata.uid}-1`, phase: 'Succeeded' });
});
