// Under event backpressure a CR whose action has ended waits for its sink at the pace the docs give
// (when the sink takes an event, and every poll interval), on a real API server: it does not
// long-poll its finished operation, which answers at once and would wake it again at once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { createLogger } from '../../src/controller/index.ts';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { databaseGraph } from '../../graphs/database.ts';
import { createNamespace, e2eKubeConfig } from './helpers/index.ts';
import { conditionOf, DATABASES, databases, installDatabaseCrd, startNoopSidecar, waitForDatabase } from './helpers/lifecycle.ts';
import type { NoopSidecar } from '../../sidecar/noop.ts';

const kc = e2eKubeConfig();
let namespace: string;
let sidecar: NoopSidecar;
let sink: Server;
let operator: RunningOperator;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-backpressure');
  sidecar = await startNoopSidecar();
  // A sink that takes nothing (503: retried, never refused), so the CR's outbox fills.
  sink = createServer((_request, response) => response.writeHead(503).end());
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  operator = await startOperator({
    kubeConfig: kc,
    graph: databaseGraph,
    resource: DATABASES,
    namespace,
    sidecar: { url: sidecar.url, token: sidecar.token },
    events: { sink: `http://127.0.0.1:${(sink.address() as AddressInfo).port}` },
    outboxLimit: 6,
    logger: createLogger({ level: (process.env.OKT_TEST_LOG ?? 'silent') as 'silent' }),
  });
});

afterAll(async () => {
  await operator?.stop();
  await sidecar?.close();
  sink?.close();
});

async function reconciles(): Promise<number> {
  const metric = await operator.manager.metrics.reconcileTotal.get();
  return metric.values.reduce((sum, v) => sum + v.value, 0);
}

test('a CR whose action ended waits for the sink without reconciling in a loop, and its message counts the events that wait', async () => {
  await databases(kc).create(namespace, 'db', { desiredState: 'Servicing' });
  // Start -> Running commits 2 events; Running's action ends (a third): Servicing would not fit.
  const waiting = await waitForDatabase(kc, namespace, 'db', 'EventsBackpressure', (obj) => conditionOf(obj, 'Ready')?.reason === 'EventsBackpressure');
  expect(waiting.status?.state).toBe('Running');
  expect(waiting.status?.operation?.phase).toBe('Succeeded');
  expect(conditionOf(waiting, 'Ready')?.message).toBe('3 events wait in the outbox for the sink, which holds 6: transitions wait too');
  const before = await reconciles();
  await sleep(3_000);
  // The poll interval is 10 s: in 3 s, no look is due (a tight loop makes hundreds).
  expect(await reconciles() - before).toBeLessThanOrEqual(2);
});
