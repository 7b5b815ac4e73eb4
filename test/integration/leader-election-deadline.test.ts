import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { LeaderElector, createLogger } from '../../src/controller/index.ts';
import { KubeTransport } from '../../src/kube/transport/index.ts';

// A real HTTP server playing the API server's Lease endpoint: it lets the elector create the Lease,
// then never answers a renewal (PUT), the way an overloaded or partitioned API server can.
const hanging: ServerResponse[] = [];
let renewalsSeen = 0;
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    if (req.method === 'GET') {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ kind: 'Status', code: 404, reason: 'NotFound' }));
    } else if (req.method === 'POST') {
      const lease = JSON.parse(body) as { metadata: Record<string, unknown> };
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ ...lease, metadata: { ...lease.metadata, resourceVersion: '1' } }));
    } else {
      renewalsSeen += 1;
      hanging.push(res); // never answered
    }
  });
});

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  for (const res of hanging) res.destroy();
  await new Promise((resolve) => server.close(resolve));
});

test('a renewal that hangs past the renew deadline ends leadership, though the request itself has not ended', async () => {
  const { port } = server.address() as AddressInfo;
  // The request timeout (60 s) is far beyond the renew deadline (1 s): only the deadline can end it.
  const transport = new KubeTransport({ origin: `http://127.0.0.1:${port}`, pathPrefix: '', tls: {}, headers: {} }, { requestTimeoutMs: 60_000 });
  let stopped!: () => void;
  const stoppedLeading = new Promise<void>((resolve) => (stopped = resolve));
  const elector = new LeaderElector({
    transport, namespace: 'ns', name: 'lease', identity: 'me',
    leaseDurationMs: 2_000, renewDeadlineMs: 1_000, retryPeriodMs: 200,
    onStoppedLeading: () => stopped(),
    logger: createLogger({ level: 'silent' }),
  });
  const running = elector.run();
  await stoppedLeading;
  expect(renewalsSeen).toBeGreaterThanOrEqual(1);
  expect(hanging.length).toBe(renewalsSeen); // no renewal was ever answered
  expect(elector.isLeader).toBe(false);
  await running;
  for (const res of hanging) res.destroy();
  await transport.close();
}, 30_000);
