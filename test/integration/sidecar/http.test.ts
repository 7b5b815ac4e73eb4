// The HTTP surface: tokens, bad and oversized requests (each a problem naming the field, never a
// stack), health, readiness, metrics, and the probe's observation.
import { writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ProblemSchema } from '../../../src/sidecar-client/index.ts';
import { TOKEN, baseConfig, eventually, makeDir, removeDirs, startInProcess, type InProcess } from './helpers.ts';

let app: InProcess;
let dir: string;
const auth = { authorization: `Bearer ${TOKEN}` };

beforeAll(async () => {
  dir = makeDir();
  writeFileSync(path.join(dir, 'probe-state'), 'Running');
  app = await startInProcess(
    dir,
    baseConfig(
      dir,
      {
        demo: {
          probe: {
            // prints the node in the file; exit code 7 (file says Crash) raises Crashed outside any action
            command: { argv: ['sh', '-c', 'read s < probe-state; echo "okt-state: $s"; [ "$s" != Crash ]  || exit 7'] },
            intervalMs: 50,
            events: { '7': 'Crashed' },
          },
          nodes: { Noop: { command: { argv: ['true'] } } },
        },
      },
      { bodyLimitBytes: 1024 },
    ),
  );
});

afterAll(async () => {
  await app?.close();
  removeDirs();
});

async function call(method: 'GET' | 'PUT' | 'POST', urlPath: string, options: { headers?: Record<string, string>; body?: string } = {}) {
  const response = await request(`${app.sidecar.url}${urlPath}`, { method, headers: options.headers, body: options.body });
  const text = await response.body.text();
  return { status: response.statusCode, type: String(response.headers['content-type']), text };
}

function expectProblem(answer: { status: number; type: string; text: string }, status: number, field?: string) {
  expect(answer.status).toBe(status);
  expect(answer.type).toMatch(/^application\/problem\+json/);
  expect(answer.text).not.toMatch(/\bat .*\.(ts|js):\d+/); // no stack trace
  const problem = ProblemSchema.parse(JSON.parse(answer.text));
  expect(problem.status).toBe(status);
  if (field !== undefined) expect(problem.field).toBe(field);
  return problem;
}

const json = { ...auth, 'content-type': 'application/json' };

describe('sidecar HTTP surface', () => {
  it('refuses a missing or wrong token with 401 and WWW-Authenticate', async () => {
    expectProblem(await call('GET', '/v1/operations/x'), 401, 'header.authorization');
    expectProblem(await call('GET', '/v1/operations/x', { headers: { authorization: `Bearer ${TOKEN}x` } }), 401);
    expectProblem(await call('GET', '/v1/operations/x', { headers: { authorization: TOKEN } }), 401);
    const response = await request(`${app.sidecar.url}/v1/observation`);
    expect(response.headers['www-authenticate']).toMatch(/^Bearer/);
    await response.body.dump();
  });

  it('a bad body gets 400 naming each field and reason', async () => {
    const problem = expectProblem(
      await call('PUT', '/v1/operations/a1', { headers: json, body: JSON.stringify({ node: 'bad name!', extra: true }) }),
      400,
    );
    expect(problem.errors?.map((e) => e.field).sort()).toEqual(['body', 'body.node']);
    expect(problem.errors?.find((e) => e.field === 'body')?.reason).toMatch(/extra/);
  });

  it('a bad id, bad params, bad query: 400 with the field', async () => {
    expectProblem(await call('PUT', '/v1/operations/-x', { headers: json, body: '{"node":"Noop"}' }), 400, 'path.id');
    expectProblem(
      await call('PUT', '/v1/operations/a2', { headers: json, body: '{"node":"Noop","params":{"no-such name":5}}' }),
      400,
      'body.params.no-such name',
    );
    expectProblem(await call('GET', '/v1/operations/a2?wait=forever', { headers: auth }), 400, 'query.wait');
    expectProblem(await call('GET', '/v1/operations/a2?wait=999999', { headers: auth }), 400, 'query.wait');
  });

  it('malformed JSON, no body, a non-JSON content type', async () => {
    expectProblem(await call('PUT', '/v1/operations/a3', { headers: json, body: '{"node":' }), 400, 'body');
    expectProblem(await call('PUT', '/v1/operations/a3', { headers: auth }), 400, 'body');
    expectProblem(
      await call('PUT', '/v1/operations/a3', { headers: { ...auth, 'content-type': 'text/plain' }, body: 'node=Noop' }),
      415,
      'header.content-type',
    );
  });

  it('an oversized body is refused with 413 before it is parsed', async () => {
    const body = JSON.stringify({ node: 'Noop', params: { big: 'x'.repeat(4000) } });
    const problem = expectProblem(await call('PUT', '/v1/operations/a4', { headers: json, body }), 413, 'body');
    expect(problem.detail).toMatch(/1024 bytes/);
  });

  it('long ids reach the schema (128 characters are valid); what fastify or Node refuse first is a problem too', async () => {
    const longest = `a${'b'.repeat(127)}`;
    expect((await call('PUT', `/v1/operations/${longest}`, { headers: json, body: '{"node":"Noop"}' })).status).toBe(202);
    // At most one operation at once here: the next tests start theirs once this one has ended.
    expect((await app.client.waitForOperation(longest)).phase).toBe('Succeeded');
    expectProblem(await call('GET', `/v1/operations/${longest}b`, { headers: auth }), 400, 'path.id');
    expectProblem(await call('GET', `/v1/operations/${'c'.repeat(2000)}`, { headers: auth }), 414, 'path');
    const socket = connect(Number(new URL(app.sidecar.url).port), '127.0.0.1');
    socket.end('GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n');
    const chunks: Buffer[] = [];
    for await (const chunk of socket) chunks.push(chunk as Buffer);
    const [head = '', body = ''] = Buffer.concat(chunks).toString('utf8').split('\r\n\r\n');
    expectProblem({ status: Number(head.split(' ')[1]), type: /content-type: ([^\r]+)/i.exec(head)?.[1] ?? '', text: body }, 400, 'request');
  });

  it('an unknown route is a 404 problem', async () => {
    expectProblem(await call('GET', '/v1/nothing', { headers: auth }), 404);
    expectProblem(await call('DELETE' as 'GET', '/v1/operations/x', { headers: auth }), 404);
  });

  it('still serves after all that', async () => {
    const op = await app.client.startOperation('after-bad', { node: 'Noop' });
    expect((await app.client.waitForOperation(op.id)).phase).toBe('Succeeded');
  });

  it('health, readiness and metrics need no token', async () => {
    expect(await call('GET', '/healthz')).toMatchObject({ status: 200, text: '{"status":"ok"}' });
    expect(await app.client.ready()).toBe(true);
    const metrics = await call('GET', '/metrics');
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/okt_sidecar_operations_finished_total\{graph="demo",node="Noop",phase="Succeeded",reason="Completed"\} \d/);
    expect(metrics.text).toMatch(/okt_sidecar_http_requests_total\{method="PUT",route="\/v1\/operations\/:id",status="400"\}/);
  });

  it('serves its OpenAPI document', async () => {
    const doc = await call('GET', '/v1/openapi.json', { headers: auth });
    expect(JSON.parse(doc.text)).toMatchObject({ openapi: '3.1.0', info: { version: 'v1' } });
  });

  it('observes the node the probe reports, and raises probe events once, outside any action', async () => {
    await eventually(async () => (await app.client.observe()).state === 'Running', 'the probe to say Running');
    const before = await app.client.observe();
    writeFileSync(path.join(dir, 'probe-state'), 'Crash');
    const crashed = await eventually(async () => {
      const o = await app.client.observe({ since: before.lastSeq });
      return o.events.length > 0 ? o : undefined;
    }, 'the probe event');
    expect(crashed.state).toBe('Crash');
    expect(crashed.events.map((e) => e.event)).toEqual(['Crashed']);
    // edge-triggered: more probes of the same condition raise nothing new
    await new Promise((r) => setTimeout(r, 300));
    const later = await app.client.observe({ since: crashed.lastSeq });
    expect(later.events).toEqual([]);
    expect(later.lastSeq).toBe(crashed.lastSeq);
  });

  it('an unknown graph in an observation is a 422 naming query.graph', async () => {
    expectProblem(await call('GET', '/v1/observation?graph=other', { headers: auth }), 422, 'query.graph');
  });
});
