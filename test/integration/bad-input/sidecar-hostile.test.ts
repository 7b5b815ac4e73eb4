// Hostile HTTP to a real sidecar: fast-check picks methods, paths, headers, tokens and bodies (binary,
// huge, deeply nested, invalid UTF-8, the wrong content type), raw sockets break the framing and hold
// requests half-sent. Every refusal is a 4xx problem without a stack trace; after each batch the sidecar
// still answers /healthz and still runs an operation.
import { METHODS } from 'node:http';
import fc from 'fast-check';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { TOKEN, baseConfig, makeDir, removeDirs, startInProcess, type InProcess } from '../sidecar/helpers.ts';
import { InputCounts, arbBody, arbHeaders, arbMethod, arbPath, assertRawFramingRefused, expectProblemAnswer, rawExchange } from './hostile-http.ts';
import { fcRuns } from '../../fixtures/fast-check.ts';

const counts = new InputCounts('sidecar');
let app: InProcess;
let port: number;

beforeAll(async () => {
  const dir = makeDir();
  app = await startInProcess(dir, baseConfig(dir, { demo: { nodes: { Noop: { command: { argv: ['true'] } } } } }));
  port = Number(new URL(app.sidecar.url).port);
});
afterAll(async () => {
  counts.print();
  await app?.close();
  removeDirs();
});

const arbAuthorization = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom(`Bearer ${TOKEN}`, `Bearer ${TOKEN}x`, `bearer ${TOKEN}`, `Bearer  ${TOKEN}`, TOKEN, 'Bearer', 'Bearer ', `Basic ${Buffer.from(`a:${TOKEN}`).toString('base64')}`),
  fc.stringMatching(/^[\x21-\x7e ]{0,80}$/).map((s) => s.trim()),
);

/** Operation ids and request bodies near the protocol's edges. */
const arbOperationPath = fc.oneof(fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._:-]{0,20}$/), fc.string({ maxLength: 30 }).map(encodeURIComponent), fc.constant('x'.repeat(200))).map((id) => `/v1/operations/${id}`);
const arbStartBody = fc.oneof(
  fc.record({ node: fc.oneof(fc.constantFrom('Noop', 'Other', '', 'DefaultState'), fc.string({ maxLength: 20 })), graph: fc.option(fc.constantFrom('demo', 'other', '-bad'), { nil: undefined }), params: fc.option(fc.dictionary(fc.string({ maxLength: 10 }), fc.oneof(fc.string({ maxLength: 10 }), fc.integer() as fc.Arbitrary<unknown>)), { nil: undefined }) }, { requiredKeys: [] }),
  fc.jsonValue({ maxDepth: 3 }),
).map((v) => JSON.stringify(v) ?? 'null');

/** Routes a request may legitimately succeed on (the rest must be refused). */
function mayAnswer2xx(method: string, path: string, authorized: boolean): boolean {
  const bare = path.split('?')[0]!;
  if (method === 'GET' && ['/healthz', '/readyz', '/metrics'].includes(bare)) return true;
  if (!authorized) return false;
  if (method === 'GET' && ['/v1/openapi.json', '/v1/observation'].includes(bare)) return true;
  if (/^\/v1\/operations\/[^/]+$/.test(bare)) return method === 'GET' || method === 'PUT';
  return method === 'POST' && /^\/v1\/operations\/[^/]+\/cancel$/.test(bare);
}

async function send(method: string, path: string, headers: Record<string, string>, body: string | Uint8Array | undefined) {
  // A connection per request (reset), so that a failure belongs to the request that caused it.
  const response = await request(`${app.sidecar.url}${path}`, { method, headers, body: body ?? null, reset: true });
  return { status: response.statusCode, headers: response.headers, body: await response.body.text() };
}

function expectRefused(answer: Awaited<ReturnType<typeof send>>, label: string): Record<string, unknown> {
  const problem = expectProblemAnswer(answer, label);
  // hostile input is the client's fault: a 5xx here would be a bug of the sidecar
  expect(answer.status, label).toBeLessThan(500);
  return problem;
}

/** /healthz answers and an operation still starts and succeeds. */
async function expectStillServing(): Promise<void> {
  const health = await send('GET', '/healthz', {}, undefined);
  expect(health).toMatchObject({ status: 200, body: '{"status":"ok"}' });
  const id = `still-serving-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  const op = await app.client.startOperation(id, { node: 'Noop' });
  expect((await app.client.waitForOperation(op.id, { timeoutMs: 10_000 })).phase).toBe('Succeeded');
}

describe('the sidecar under hostile HTTP', () => {
  test('random methods, paths, headers, tokens and bodies: refused with a 4xx problem unless they are a real call', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(arbMethod, fc.constantFrom('PUT', 'GET')), fc.oneof(arbPath, arbOperationPath), arbHeaders, arbAuthorization, fc.oneof(arbBody, arbStartBody), async (method, path, headers, authorization, body) => {
        counts.add('http: random requests');
        const sent = authorization === undefined ? headers : { ...headers, authorization };
        const label = `${method} ${path.slice(0, 80)} ${JSON.stringify(sent).slice(0, 200)}`;
        const answer = await send(method, path, sent, body);
        const authorized = authorization === `Bearer ${TOKEN}`;
        if (answer.status < 400) {
          expect(mayAnswer2xx(method, path, authorized), `${label}: answered ${answer.status}`).toBe(true);
          return;
        }
        const problem = expectRefused(answer, label);
        if (!METHODS.includes(method)) expect(answer.status, label).toBe(400); // Node's parser refuses it
        else if (path.startsWith('/v1/') && !authorized) expect([answer.status, problem.field], label).toEqual([401, 'header.authorization']);
        else if (answer.status === 400) expect(problem.field, label).toEqual(expect.any(String));
      }),
      { numRuns: fcRuns(250) },
    );
    await expectStillServing();
  });

  test('authorized operation calls with hostile bodies and content types: a 4xx problem naming the field', async () => {
    const arbContentType = fc.oneof(fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/octet-stream', 'application/x-www-form-urlencoded', 'application/problem+json', 'multipart/form-data; boundary=x'), fc.stringMatching(/^[a-z]{1,10}\/[a-z+.-]{1,15}$/));
    await fc.assert(
      fc.asyncProperty(arbOperationPath, arbContentType, fc.oneof(arbBody, arbStartBody), async (path, contentType, body) => {
        counts.add('http: authorized hostile bodies');
        const label = `PUT ${path.slice(0, 60)} ${contentType} ${String(body).slice(0, 100)}`;
        const answer = await send('PUT', path, { authorization: `Bearer ${TOKEN}`, 'content-type': contentType }, body);
        if (answer.status < 400) {
          expect([200, 202], label).toContain(answer.status);
          return;
        }
        const problem = expectRefused(answer, label);
        if ([400, 413, 415].includes(answer.status)) expect(problem.field, label).toMatch(/^(body|path|header)/);
      }),
      { numRuns: fcRuns(200) },
    );
    await expectStillServing();
  });

  test('broken framing on a raw socket: a 4xx problem or a closed connection, never a crash', async () => {
    await assertRawFramingRefused(port, counts);
    await expectStillServing();
  });

  test('slowloris: half-sent requests held open do not stop the sidecar, and are let go', async () => {
    const head = `PUT /v1/operations/slow HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
    const slow = Array.from({ length: 20 }, (_, i) => {
      counts.add('raw: slowloris connections');
      const chunks = i % 2 === 0 ? [...head.slice(0, 60)] : [head, '{"node":'];
      return rawExchange(port, chunks, { timeoutMs: 1_500, pauseMs: 20 });
    });
    await expectStillServing();
    for (const answer of await Promise.all(slow)) {
      if (answer.status !== undefined) expectProblemAnswer(answer, 'slowloris');
    }
    await expectStillServing();
  });
});
