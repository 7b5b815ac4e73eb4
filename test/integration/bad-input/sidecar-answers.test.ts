// Malformed sidecar answers to the operator's SidecarClient: a tiny real HTTP server answers what
// fast-check picks (any status, content type, body, broken or mutated operations, dropped connections).
// Every call ends in a value the protocol's schema accepts or in a typed SidecarError, nothing else.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  ObservationSchema, OperationSchema, SidecarClient, SidecarError, SidecarProblemError, SidecarProtocolError, SidecarUnavailableError, type Operation,
} from '../../../src/sidecar-client/index.ts';
import { InputCounts, deepJson } from './hostile-http.ts';
import { fcRuns } from '../../fixtures/fast-check.ts';

const counts = new InputCounts('sidecar answers to the client');
type Answer = (req: IncomingMessage, res: ServerResponse) => void;
let answer: Answer = (_req, res) => res.end();
const server = createServer((req, res) => answer(req, res));
let client: SidecarClient;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  client = new SidecarClient({ baseUrl: `http://127.0.0.1:${port}`, token: 't', retries: 1, backoffMs: 1, timeoutMs: 100, maxAnswerBytes: 20_000 });
});
afterAll(async () => {
  counts.print();
  await client?.close();
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const operation = (id: string): Operation => ({
  id, epoch: 'e-1', graph: 'database', node: 'Servicing', params: {}, phase: 'Succeeded', events: ['Running'], reason: 'Completed', message: 'done',
  createdAt: '2026-01-01T00:00:00.000Z', attempts: 1, outputTail: [],
});
const observation = { epoch: 'e-1', graph: 'database', state: 'Running', observedAt: null, probe: { ok: true, message: '' }, events: [], lastSeq: 0, activeOperations: [] };

const arbWrong = fc.oneof(fc.constantFrom(null, -1, 1.5, '', 'x'.repeat(30_000), [], {}, ['bad name!'], 'Exploded', '2026-13-45'), fc.jsonValue({ maxDepth: 2 }));
/** A valid answer with one field replaced, removed, or an unknown one added. */
function mutated(valid: Record<string, unknown>): fc.Arbitrary<string> {
  return fc.record({ key: fc.oneof(fc.constantFrom(...Object.keys(valid)), fc.string({ maxLength: 8 })), value: fc.option(arbWrong, { nil: undefined }) }).map(({ key, value }) => {
    const copy: Record<string, unknown> = { ...valid };
    if (value === undefined) delete copy[key];
    else copy[key] = value;
    return JSON.stringify(copy);
  });
}

const arbBody = fc.oneof(
  fc.constant(JSON.stringify(operation('a'))),
  fc.constant(JSON.stringify(observation)),
  mutated(operation('a') as unknown as Record<string, unknown>),
  mutated(observation),
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? 'null'),
  fc.string({ maxLength: 100 }),
  fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('latin1')),
  fc.constantFrom(deepJson(10_000, 'array'), deepJson(10_000, 'object'), 'x'.repeat(50_000), '{"id":"a"', '\ufeff{}'),
  fc.record({ status: fc.integer({ min: 400, max: 599 }), detail: fc.oneof(fc.string(), arbWrong) }).map((p) => JSON.stringify({ type: 'urn:x', title: 't', ...p })),
);
const arbContentType = fc.oneof(fc.constantFrom('application/json', 'application/problem+json', 'application/json; charset=utf-8', 'text/html', '', 'application/JSON'), fc.stringMatching(/^[a-z]{1,8}\/[a-z+]{1,12}$/));
const arbStatus = fc.oneof(fc.constantFrom(200, 202, 204, 301, 304, 400, 401, 404, 409, 413, 429, 500, 503), fc.integer({ min: 100, max: 599 }).filter((s) => s !== 101 && s !== 102 && s !== 103));

const arbAnswer: fc.Arbitrary<{ what: string; answer: Answer }> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ status: arbStatus, type: arbContentType, body: arbBody }).map(({ status, type, body }) => ({
    what: `${status} ${type} ${body.slice(0, 120)}`,
    answer: (_req: IncomingMessage, res: ServerResponse) => res.writeHead(status, type === '' ? {} : { 'content-type': type }).end(status === 204 || status === 304 ? undefined : body),
  })) },
  { weight: 1, arbitrary: fc.constantFrom(
    { what: 'drop the connection', answer: ((req) => req.socket.destroy()) as Answer },
    { what: 'headers, then drop mid-body', answer: ((_req, res) => { res.writeHead(200, { 'content-type': 'application/json', 'content-length': '100' }); res.write('{"id":'); setTimeout(() => res.socket?.destroy(), 5); }) as Answer },
    { what: 'a lying content-length', answer: ((_req, res) => res.writeHead(200, { 'content-type': 'application/json', 'content-length': '99999999' }).end('{}')) as Answer },
    { what: 'never answer', answer: (() => undefined) as Answer },
  ) },
);

type Call = { name: string; run: () => Promise<unknown>; check: (value: unknown) => void };
const calls: Call[] = [
  { name: 'getOperation', run: () => client.getOperation('a'), check: (v) => expect(OperationSchema.parse(v).id).toBe('a') },
  { name: 'startOperation', run: () => client.startOperation('a', { node: 'Servicing' }), check: (v) => expect(OperationSchema.parse(v).id).toBe('a') },
  { name: 'cancelOperation', run: () => client.cancelOperation('a'), check: (v) => expect(OperationSchema.parse(v).id).toBe('a') },
  { name: 'observe', run: () => client.observe({ since: 0 }), check: (v) => ObservationSchema.parse(v) },
];

test('any answer becomes a protocol-valid value or a typed SidecarError', async () => {
  await fc.assert(
    fc.asyncProperty(arbAnswer, fc.constantFrom(...calls), async ({ what, answer: a }, call) => {
      counts.add(`client: ${call.name}`);
      answer = a;
      const outcome = await call.run().then((value) => ({ value }), (error: unknown) => ({ error }));
      if ('value' in outcome) {
        call.check(outcome.value);
        return;
      }
      const label = `${call.name} <- ${what}`;
      expect(outcome.error, label).toBeInstanceOf(SidecarError);
      expect([SidecarProblemError, SidecarProtocolError, SidecarUnavailableError].some((type) => outcome.error instanceof type), label).toBe(true);
      expect((outcome.error as Error).message, label).not.toMatch(/\n\s+at /);
    }),
    { numRuns: fcRuns(300) },
  );
  // and a proper answer still gets through
  answer = (_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(operation('a')));
  expect(await client.getOperation('a')).toEqual(operation('a'));
});
