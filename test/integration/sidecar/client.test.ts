// The client against a tiny real HTTP server that answers garbage, hostile or flaky: every such answer
// is a typed error (never a crash, never an unvalidated value), and transient failures are retried.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  SidecarClient,
  SidecarProblemError,
  SidecarProtocolError,
  SidecarUnavailableError,
  type Operation,
} from '../../../src/sidecar-client/index.ts';

type Handler = (req: IncomingMessage, res: ServerResponse) => void;
let handler: Handler = (_req, res) => res.end();
let hits = 0;
const server = createServer((req, res) => {
  hits++;
  handler(req, res);
});
let client: SidecarClient;

const operation = (id: string): Operation => ({
  id,
  epoch: 'e-1',
  graph: 'database',
  node: 'Servicing',
  params: {},
  phase: 'Succeeded',
  events: ['Running'],
  reason: 'Completed',
  message: 'done',
  createdAt: '2026-01-01T00:00:00.000Z',
  attempts: 1,
  outputTail: [],
});

const answer = (status: number, type: string, body: string): Handler => (_req, res) =>
  res.writeHead(status, { 'content-type': type }).end(body);

beforeAll(async () => {
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  client = new SidecarClient({ baseUrl: `http://127.0.0.1:${port}`, token: 't', retries: 2, backoffMs: 5, timeoutMs: 500, maxAnswerBytes: 10_000 });
});
afterAll(async () => {
  await client.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

async function failure(call: Promise<unknown>): Promise<Error> {
  const result = await call.then(
    () => undefined,
    (e: unknown) => e as Error,
  );
  if (result === undefined) throw new Error('expected the call to fail');
  return result;
}

describe('sidecar client against malformed answers', () => {
  it('accepts a valid answer and sends the bearer token', async () => {
    let seen: string | undefined;
    handler = (req, res) => {
      seen = req.headers.authorization;
      answer(200, 'application/json', JSON.stringify(operation('a')))(req, res);
    };
    expect(await client.getOperation('a')).toEqual(operation('a'));
    expect(seen).toBe('Bearer t');
  });

  it.each([
    ['not JSON', answer(200, 'application/json', '<html>hello</html>'), /not JSON/],
    ['the wrong content type', answer(200, 'text/html', JSON.stringify(operation('a'))), /content-type text\/html/],
    ['the wrong shape', answer(200, 'application/json', '{"id":"a","phase":"Exploded"}'), /does not match the protocol/],
    ['an unknown phase', answer(200, 'application/json', JSON.stringify({ ...operation('a'), phase: 'Weird' })), /phase/],
    ['another operation', answer(200, 'application/json', JSON.stringify(operation('b'))), /answered about b/],
    ['an unexpected status', answer(204, 'application/json', ''), /unexpected HTTP 204/],
    ['a 4xx without a problem body', answer(409, 'text/plain', 'conflict'), /HTTP 409 answer has content-type text\/plain/],
    ['a 4xx with a bad problem body', answer(409, 'application/problem+json', '{"status":409}'), /without a valid problem/],
    ['a huge answer', answer(200, 'application/json', `"${'x'.repeat(50_000)}"`), /exceeds the limit/],
    ['a JSON null', answer(200, 'application/json', 'null'), /does not match/],
  ])('%s is a SidecarProtocolError', async (_what, h, message) => {
    handler = h;
    const error = await failure(client.getOperation('a'));
    expect(error).toBeInstanceOf(SidecarProtocolError);
    expect(error.message).toMatch(message);
  });

  it('a huge streamed answer without content-length is cut off too', async () => {
    handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write('"');
      for (let i = 0; i < 100; i++) res.write('y'.repeat(1000));
      res.end('"');
    };
    expect(await failure(client.getOperation('a'))).toBeInstanceOf(SidecarProtocolError);
  });

  it('a problem answer becomes a SidecarProblemError, not retried', async () => {
    hits = 0;
    handler = answer(
      409,
      'application/problem+json',
      JSON.stringify({ type: 'urn:x', title: 'Conflict', status: 409, detail: 'busy', activeOperations: ['x'] }),
    );
    const error = await failure(client.startOperation('a', { node: 'Servicing' }));
    expect(error).toBeInstanceOf(SidecarProblemError);
    expect((error as SidecarProblemError).problem.activeOperations).toEqual(['x']);
    expect(hits).toBe(1);
  });

  it('retries 5xx and dropped connections, then succeeds', async () => {
    hits = 0;
    handler = (req, res) => {
      if (hits === 1) answer(503, 'text/plain', 'later')(req, res);
      else if (hits === 2) req.socket.destroy();
      else answer(202, 'application/json', JSON.stringify(operation('a')))(req, res);
    };
    expect((await client.startOperation('a', { node: 'Servicing' })).id).toBe('a');
    expect(hits).toBe(3);
  });

  it('gives up with SidecarUnavailableError after the retries; a hang is a timeout', async () => {
    hits = 0;
    handler = answer(500, 'application/problem+json', '{}');
    expect(await failure(client.cancelOperation('a'))).toBeInstanceOf(SidecarUnavailableError);
    expect(hits).toBe(3);
    handler = () => undefined; // never answers
    const error = await failure(client.observe());
    expect(error).toBeInstanceOf(SidecarUnavailableError);
  });

  it('a base URL with a path puts each call under it, query included', async () => {
    const seen: string[] = [];
    handler = (req, res) => {
      seen.push(req.url ?? '');
      answer(200, 'application/json', JSON.stringify(operation('a:b')))(req, res);
    };
    const { port } = server.address() as AddressInfo;
    const prefixed = new SidecarClient({ baseUrl: `http://127.0.0.1:${port}/okt/sidecar/`, token: 't', retries: 0 });
    await prefixed.getOperation('a:b', { waitMs: 10 });
    expect(seen).toEqual(['/okt/sidecar/v1/operations/a%3Ab?wait=10']);
    await prefixed.close();
  });

  it('nothing listening is SidecarUnavailableError', async () => {
    const nowhere = new SidecarClient({ baseUrl: 'http://127.0.0.1:1', token: 't', retries: 1, backoffMs: 1 });
    expect(await failure(nowhere.getOperation('a'))).toBeInstanceOf(SidecarUnavailableError);
    expect(await nowhere.ready()).toBe(false);
    await nowhere.close();
  });
});
