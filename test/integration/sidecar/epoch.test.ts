// The sidecar's epoch: the identity of its memory (its journal). Kept across a restart with the
// journal, new without it; on every answer (header okt-sidecar-epoch, and in operations, observations
// and problems); a start may require it (epoch-mismatch), may be a re-run of an operation a forgotten
// sidecar may have run (not-idempotent unless the action is declared so), and may count its attempts
// from an earlier one. The probe's events are journaled too, so their sequence goes on within an epoch.
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import path from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../../../src/net/free-ports.ts';
import {
  EPOCH_HEADER,
  ObservationSchema,
  OperationSchema,
  ProblemSchema,
  SidecarClient,
  SidecarProblemError,
} from '../../../src/sidecar-client/index.ts';
import {
  TOKEN,
  baseConfig,
  eventually,
  makeDir,
  removeDirs,
  spawnSidecar,
  startInProcess,
  writeConfig,
  type InProcess,
  type SidecarProcess,
} from './helpers.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const auth = { authorization: `Bearer ${TOKEN}` };
const json = { ...auth, 'content-type': 'application/json' };
const sh = (script: string) => ({ argv: ['sh', '-c', script] });

const open: { close(): Promise<void> }[] = [];
const processes: SidecarProcess[] = [];
afterAll(async () => {
  for (const app of open.splice(0)) await app.close();
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.exited));
  removeDirs();
});

async function start(dir: string, config: unknown): Promise<InProcess> {
  const app = await startInProcess(dir, config);
  open.push(app);
  return app;
}
async function stop(app: InProcess): Promise<void> {
  open.splice(open.indexOf(app), 1);
  await app.close();
}

const journalLines = (dir: string) =>
  readFileSync(path.join(dir, 'journal.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);

async function failure(call: Promise<unknown>): Promise<SidecarProblemError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SidecarProblemError);
  return error as SidecarProblemError;
}

describe('the epoch across restarts of a real sidecar process', () => {
  it('is kept by a restart with the journal, and new after the journal is gone: the operation is forgotten', async () => {
    const dir = makeDir();
    const port = await freePort();
    const configFile = writeConfig(
      dir,
      baseConfig(dir, { demo: { nodes: { Count: { command: sh('echo ran >> count') } } } }, { listen: { host: '127.0.0.1', port } }),
    );
    // One client for the one endpoint, as the operator has: the sidecar behind it restarts.
    const client = new SidecarClient({ baseUrl: `http://127.0.0.1:${port}`, token: TOKEN, retries: 0 });
    const run = async () => {
      const p = await spawnSidecar(configFile);
      processes.push(p);
      return p;
    };
    const graceful = async (p: SidecarProcess) => {
      p.child.kill('SIGTERM');
      expect(await p.exited).toBe(0);
    };
    const healthEpoch = async () => {
      const response = await request(`http://127.0.0.1:${port}/healthz`);
      await response.body.dump();
      return response.headers[EPOCH_HEADER];
    };

    const first = await run();
    const epoch = await healthEpoch();
    expect(epoch).toMatch(UUID);
    const started = await client.startOperation('op-1', { node: 'Count', epoch: epoch as string });
    expect(started.epoch).toBe(epoch);
    const done = await client.waitForOperation('op-1');
    expect(done).toMatchObject({ phase: 'Succeeded', epoch });
    expect(journalLines(dir)[0]).toEqual({ type: 'epoch', epoch, createdAt: expect.any(String) });
    const createdAt = journalLines(dir)[0]?.createdAt;
    await graceful(first);

    // How old the epoch is, by the epoch's own record (not the process's start): the operator tells a
    // sidecar that lost its memory since it last looked from one that had a life by it.
    const epochAge = async () => {
      const before = Date.now();
      const { epochAgeMs } = await client.observe();
      return { epochAgeMs, atLeast: before - Date.parse(String(createdAt)), atMost: Date.now() - Date.parse(String(createdAt)) };
    };
    const second = await run();
    expect(await healthEpoch()).toBe(epoch);
    const kept = await epochAge();
    expect(kept.epochAgeMs).toBeGreaterThanOrEqual(kept.atLeast);
    expect(kept.epochAgeMs).toBeLessThanOrEqual(kept.atMost);
    expect(await client.getOperation('op-1')).toEqual(done);
    expect(journalLines(dir)[0]).toEqual({ type: 'epoch', epoch, createdAt }); // compaction kept it as it was
    // a retry with the epoch of the sidecar that knows it: 200 and the operation, nothing run again
    expect(await client.startOperation('op-1', { node: 'Count', epoch: epoch as string })).toEqual(done);
    await graceful(second);

    rmSync(path.join(dir, 'journal.jsonl'));
    const thirdStarted = Date.now();
    const third = await run();
    const newEpoch = await healthEpoch();
    expect((await client.observe()).epochAgeMs).toBeLessThanOrEqual(Date.now() - thirdStarted);
    expect(newEpoch).toMatch(UUID);
    expect(newEpoch).not.toBe(epoch);
    const forgotten = await failure(client.getOperation('op-1'));
    expect(forgotten.problem).toMatchObject({ status: 404, epoch: newEpoch });
    // the operator's start of the committed operation, with the epoch it committed: refused, not run again
    const refused = await failure(client.startOperation('op-1', { node: 'Count', epoch: epoch as string }));
    expect(refused.problem).toMatchObject({ status: 409, field: 'body.epoch', epoch: newEpoch });
    expect(refused.problem.type).toMatch(/:epoch-mismatch$/);
    expect(readFileSync(path.join(dir, 'count'), 'utf8')).toBe('ran\n');
    expect(journalLines(dir)).toEqual([{ type: 'epoch', epoch: newEpoch, createdAt: expect.any(String) }]);
    await graceful(third);
    await client.close();
  });
});

describe('the epoch on every answer', () => {
  it('is in the header of every kind of answer, and in every operation, observation and problem body', async () => {
    const dir = makeDir();
    const app = await start(dir, baseConfig(dir, { demo: { nodes: { Noop: { command: { argv: ['true'] } } } } }));
    const epoch = app.sidecar.epoch;
    expect(epoch).toMatch(UUID);
    expect(app.sidecar.operations.epoch).toBe(epoch);
    const call = async (method: string, urlPath: string, options: { headers?: Record<string, string>; body?: string } = {}) => {
      const response = await request(`${app.sidecar.url}${urlPath}`, { method: method as 'GET', headers: options.headers, body: options.body });
      return { status: response.statusCode, header: response.headers[EPOCH_HEADER], text: await response.body.text() };
    };
    const answers: [string, Awaited<ReturnType<typeof call>>, number, 'operation' | 'observation' | 'problem' | 'other'][] = [
      ['healthz', await call('GET', '/healthz'), 200, 'other'],
      ['readyz', await call('GET', '/readyz'), 200, 'other'],
      ['metrics', await call('GET', '/metrics'), 200, 'other'],
      ['openapi', await call('GET', '/v1/openapi.json', { headers: auth }), 200, 'other'],
      ['start', await call('PUT', '/v1/operations/h-1', { headers: json, body: '{"node":"Noop"}' }), 202, 'operation'],
      ['retry', await call('PUT', '/v1/operations/h-1', { headers: json, body: '{"node":"Noop"}' }), 200, 'operation'],
      ['get', await call('GET', '/v1/operations/h-1?wait=5000', { headers: auth }), 200, 'operation'],
      ['cancel', await call('POST', '/v1/operations/h-1/cancel', { headers: auth }), 200, 'operation'],
      ['observation', await call('GET', '/v1/observation', { headers: auth }), 200, 'observation'],
      ['no token', await call('GET', '/v1/operations/h-1'), 401, 'problem'],
      ['bad body', await call('PUT', '/v1/operations/h-2', { headers: json, body: '{"node":"bad name!"}' }), 400, 'problem'],
      ['not JSON', await call('PUT', '/v1/operations/h-2', { headers: { ...auth, 'content-type': 'text/plain' }, body: 'x' }), 415, 'problem'],
      ['unknown operation', await call('GET', '/v1/operations/never', { headers: auth }), 404, 'problem'],
      ['unknown route', await call('GET', '/nowhere'), 404, 'problem'],
      ['unknown v1 route', await call('DELETE', '/v1/operations/h-1', { headers: auth }), 404, 'problem'],
      ['unknown node', await call('PUT', '/v1/operations/h-3', { headers: json, body: '{"node":"Nope"}' }), 422, 'problem'],
      ['path too long', await call('GET', `/v1/operations/${'c'.repeat(2000)}`, { headers: auth }), 414, 'problem'],
    ];
    for (const [what, answer, status, kind] of answers) {
      expect(answer.status, what).toBe(status);
      expect(answer.header, what).toBe(epoch);
      if (kind === 'operation') expect(OperationSchema.parse(JSON.parse(answer.text)).epoch, what).toBe(epoch);
      if (kind === 'observation') expect(ObservationSchema.parse(JSON.parse(answer.text)).epoch, what).toBe(epoch);
      if (kind === 'problem') expect(ProblemSchema.parse(JSON.parse(answer.text)).epoch, what).toBe(epoch);
    }

    // what Node's HTTP parser refuses is answered on the raw socket: the epoch is there too
    const socket = connect(Number(new URL(app.sidecar.url).port), '127.0.0.1');
    socket.end('GET /healthz HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n');
    const chunks: Buffer[] = [];
    for await (const chunk of socket) chunks.push(chunk as Buffer);
    const [head = '', body = ''] = Buffer.concat(chunks).toString('utf8').split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 400 /);
    expect(head).toContain(`\r\n${EPOCH_HEADER}: ${epoch}\r\n`);
    expect(ProblemSchema.parse(JSON.parse(body)).epoch).toBe(epoch);
  });
});

describe('start preconditions: epoch, rerun, attempt', () => {
  it('refuses a mismatched epoch and a rerun of an action not declared idempotent, recording nothing', async () => {
    const dir = makeDir();
    const app = await start(
      dir,
      baseConfig(dir, {
        demo: {
          nodes: {
            Backup: { command: sh('echo "$OKT_OPERATION_ID" >> runs') },
            Start: { command: sh('echo "$OKT_OPERATION_ID" >> runs'), idempotent: true },
          },
        },
      }),
    );
    const { client } = app;
    const epoch = app.sidecar.epoch;
    const journalBefore = readFileSync(path.join(dir, 'journal.jsonl'), 'utf8');

    const mismatch = await failure(client.startOperation('p-1', { node: 'Backup', epoch: 'another-epoch' }));
    expect(mismatch.status).toBe(409);
    expect(mismatch.problem).toMatchObject({ status: 409, field: 'body.epoch', epoch });
    expect(mismatch.problem.type).toBe('urn:okt:sidecar:problem:epoch-mismatch');
    expect(mismatch.problem.detail).toContain('another-epoch');

    const notIdempotent = await failure(client.startOperation('p-2', { node: 'Backup', rerun: true, epoch }));
    expect(notIdempotent.problem).toMatchObject({ status: 409, field: 'body.rerun', epoch });
    expect(notIdempotent.problem.type).toBe('urn:okt:sidecar:problem:not-idempotent');
    expect(notIdempotent.problem.detail).toMatch(/node "Backup".*not declared idempotent/);

    // nothing recorded, nothing run
    expect(readFileSync(path.join(dir, 'journal.jsonl'), 'utf8')).toBe(journalBefore);
    expect((await failure(client.getOperation('p-1'))).status).toBe(404);
    expect((await failure(client.getOperation('p-2'))).status).toBe(404);
    expect(existsSync(path.join(dir, 'runs'))).toBe(false);

    // with this sidecar's epoch, and a rerun of an idempotent action: started
    const rerun = await client.startOperation('p-3', { node: 'Start', rerun: true, epoch, attempt: 2 });
    expect(rerun).toMatchObject({ epoch, phase: 'Pending', attempts: 1 });
    expect(await client.waitForOperation('p-3')).toMatchObject({ phase: 'Succeeded', attempts: 2, epoch });
    expect(readFileSync(path.join(dir, 'runs'), 'utf8')).toBe('p-3\n');
  });

  it('counts attempts from `attempt`; epoch, rerun and attempt never make a conflict, a known id is answered as it is', async () => {
    const dir = makeDir();
    const app = await start(
      dir,
      baseConfig(dir, { demo: { nodes: { Backup: { command: sh('echo "$OKT_OPERATION_ID" >> runs') } } } }),
    );
    const { client } = app;
    const epoch = app.sidecar.epoch;
    const first = await client.startOperation('a-1', { node: 'Backup', attempt: 3 });
    expect(first.attempts).toBe(2); // not run yet: two runs before this one, elsewhere
    const done = await client.waitForOperation('a-1');
    expect(done).toMatchObject({ phase: 'Succeeded', attempts: 3 });
    // the same operation asked again, as a rerun of another attempt, with the epoch: the known one, not run again
    expect(await client.startOperation('a-1', { node: 'Backup', rerun: true, attempt: 7, epoch })).toEqual(done);
    expect(await client.startOperation('a-1', { node: 'Backup' })).toEqual(done);
    // but never on another epoch's word
    expect((await failure(client.startOperation('a-1', { node: 'Backup', epoch: 'old' }))).problem.field).toBe('body.epoch');
    // the default attempt is 1
    await client.startOperation('a-2', { node: 'Backup' });
    expect((await client.waitForOperation('a-2')).attempts).toBe(1);
    expect(readFileSync(path.join(dir, 'runs'), 'utf8')).toBe('a-1\na-2\n');
    // attempt is at least 1
    const invalid = await failure(client.startOperation('a-3', { node: 'Backup', attempt: 0 }));
    expect(invalid.problem).toMatchObject({ status: 400, field: 'body.attempt' });
  });

  it('a start with attempt n interrupted by a restart is re-run as attempt n + 1 when idempotent', async () => {
    const dir = makeDir();
    const config = baseConfig(dir, {
      demo: { nodes: { Start: { command: sh('echo ran >> runs; [ "$(wc -l < runs)" -ge 2 ] || exec sleep 300'), idempotent: true } } },
    });
    const first = await start(dir, config);
    await first.client.startOperation('i-1', { node: 'Start', attempt: 4 });
    await eventually(() => existsSync(path.join(dir, 'runs')), 'the first run');
    await stop(first); // stops the action, leaving it accepted but unfinished in the journal
    const second = await start(dir, config);
    expect(second.sidecar.epoch).toBe(first.sidecar.epoch);
    expect(await second.client.waitForOperation('i-1')).toMatchObject({ phase: 'Succeeded', attempts: 5 });
  });
});

describe("the probe's events across restarts", () => {
  it('go on in sequence after a restart with the journal, and start again at 0 with a new epoch without it', async () => {
    const dir = makeDir();
    const state = (s: string) => writeFileSync(path.join(dir, 'probe-state'), s);
    state('Running');
    const config = baseConfig(dir, {
      demo: {
        probe: {
          command: sh('read s < probe-state; echo "okt-state: $s"; [ "$s" != Crash ] || exit 7'),
          intervalMs: 50,
          events: { '7': 'Crashed' },
        },
        nodes: {},
      },
    });
    const observeWhen = async (app: InProcess, check: (o: Awaited<ReturnType<SidecarClient['observe']>>) => boolean, what: string) =>
      eventually(async () => {
        const o = await app.client.observe();
        return check(o) ? o : undefined;
      }, what);

    // first life: one event, seq 1, journaled
    const first = await start(dir, config);
    await observeWhen(first, (o) => o.state === 'Running', 'the probe to see Running');
    state('Crash');
    const crashed = await observeWhen(first, (o) => o.lastSeq === 1, 'the Crashed event');
    expect(crashed.events).toEqual([{ seq: 1, event: 'Crashed', at: expect.any(String), message: expect.any(String) }]);
    expect(crashed.epoch).toBe(first.sidecar.epoch);
    expect(journalLines(dir).filter((r) => r.type === 'observed')).toEqual([{ type: 'observed', graph: 'demo', event: crashed.events[0] }]);
    state('Running');
    await observeWhen(first, (o) => o.state === 'Running', 'the probe to see Running again');
    await stop(first);

    // restart with the journal: the same epoch, the event still there, the sequence goes on at 2
    const second = await start(dir, config);
    const restored = await second.client.observe();
    expect(restored.epoch).toBe(first.sidecar.epoch);
    expect(restored.lastSeq).toBe(1);
    expect(restored.events).toEqual(crashed.events);
    await observeWhen(second, (o) => o.state === 'Running', 'the probe to see Running after the restart');
    state('Crash');
    const again = await observeWhen(second, (o) => o.lastSeq > 1, 'the second Crashed event');
    expect(again.lastSeq).toBe(2);
    expect((await second.client.observe({ since: 1 })).events.map((e) => [e.seq, e.event])).toEqual([[2, 'Crashed']]);
    state('Running');
    await observeWhen(second, (o) => o.state === 'Running', 'the probe to see Running before the wipe');
    await stop(second);

    // the journal wiped: a new epoch, the events forgotten, the sequence starts again at 0
    rmSync(path.join(dir, 'journal.jsonl'));
    const third = await start(dir, config);
    const fresh = await third.client.observe();
    expect(fresh.epoch).not.toBe(first.sidecar.epoch);
    expect(fresh).toMatchObject({ epoch: third.sidecar.epoch, lastSeq: 0, events: [] });
    await observeWhen(third, (o) => o.state === 'Running', 'the probe to see Running in the new epoch');
    state('Crash');
    const renewed = await observeWhen(third, (o) => o.lastSeq > 0, 'the first event of the new epoch');
    expect(renewed.events.map((e) => [e.seq, e.event])).toEqual([[1, 'Crashed']]);
    await stop(third);
  });

  it('the compaction keeps the newest 1000 events of each graph, and the sequence goes on from the last', async () => {
    const dir = makeDir();
    const epoch = 'kept-epoch-1';
    const at = '2026-01-01T00:00:00.000Z';
    const lines = [
      { type: 'epoch', epoch, createdAt: at },
      ...Array.from({ length: 1005 }, (_, i) => ({ type: 'observed', graph: 'demo', event: { seq: i + 1, event: 'Crashed', at, message: 'x' } })),
      { type: 'observed', graph: 'other', event: { seq: 1, event: 'Stopping', at, message: 'y' } },
    ];
    writeFileSync(path.join(dir, 'journal.jsonl'), lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
    const graphs = {
      demo: { nodes: { Noop: { command: { argv: ['true'] } } } },
      other: { nodes: { Noop: { command: { argv: ['true'] } } } },
    };
    const app = await start(dir, baseConfig(dir, graphs));
    expect(app.sidecar.epoch).toBe(epoch);
    const demo = await app.client.observe({ graph: 'demo' });
    expect(demo.lastSeq).toBe(1005);
    expect(demo.events).toHaveLength(1000);
    expect(demo.events[0]?.seq).toBe(6);
    expect((await app.client.observe({ graph: 'demo', since: 1003 })).events.map((e) => e.seq)).toEqual([1004, 1005]);
    expect((await app.client.observe({ graph: 'other' })).lastSeq).toBe(1);
    const compacted = journalLines(dir);
    expect(compacted[0]).toEqual(lines[0]);
    expect(compacted.filter((r) => r.type === 'observed' && r.graph === 'demo')).toHaveLength(1000);
    expect(compacted.filter((r) => r.type === 'observed' && r.graph === 'other')).toHaveLength(1);
  });
});

describe('a journal of an older okt', () => {
  it('opens: a new epoch (written first by the compaction), its operations known with it, an unfinished one Interrupted', async () => {
    const dir = makeDir();
    const op = (id: string, extra: Record<string, unknown>) => ({
      id,
      graph: 'demo',
      node: 'Backup',
      params: {},
      phase: 'Pending',
      events: [],
      message: 'accepted',
      createdAt: '2026-01-01T00:00:00.000Z',
      attempts: 0,
      outputTail: [],
      ...extra,
    });
    const old = [
      { type: 'accepted', operation: op('old-1', {}) },
      { type: 'finished', operation: op('old-1', { phase: 'Succeeded', reason: 'Completed', message: 'done', attempts: 1, finishedAt: '2026-01-01T00:00:01.000Z' }) },
      { type: 'accepted', operation: op('old-2', {}) },
    ];
    writeFileSync(path.join(dir, 'journal.jsonl'), old.map((l) => `${JSON.stringify(l)}\n`).join(''));
    const config = baseConfig(dir, { demo: { nodes: { Backup: { command: sh('echo ran >> runs') } } } });

    const app = await start(dir, config);
    const epoch = app.sidecar.epoch;
    expect(epoch).toMatch(UUID);
    expect(app.sidecar.operations.epochIsNew).toBe(true);
    expect(await app.client.getOperation('old-1')).toMatchObject({ epoch, phase: 'Succeeded', attempts: 1 });
    expect(await app.client.getOperation('old-2')).toMatchObject({ epoch, phase: 'Failed', reason: 'Interrupted' });
    expect(await app.client.startOperation('old-1', { node: 'Backup', epoch })).toMatchObject({ phase: 'Succeeded' });
    expect(existsSync(path.join(dir, 'runs'))).toBe(false);
    const compacted = journalLines(dir);
    expect(compacted[0]).toEqual({ type: 'epoch', epoch, createdAt: expect.any(String) });
    expect(compacted.slice(1).map((r) => (r.operation as { id: string }).id)).toEqual(['old-1', 'old-2']);
    await stop(app);

    // from now on the epoch is the journal's
    const again = await start(dir, config);
    expect(again.sidecar.epoch).toBe(epoch);
    expect(again.sidecar.operations.epochIsNew).toBe(false);
  });

  it('an empty journal file, or one with only a torn line, gets a new epoch', async () => {
    const config = (dir: string) => baseConfig(dir, { demo: { nodes: { Noop: { command: { argv: ['true'] } } } } });
    const empty = makeDir();
    writeFileSync(path.join(empty, 'journal.jsonl'), '');
    const a = await start(empty, config(empty));
    expect(a.sidecar.epoch).toMatch(UUID);
    expect(a.sidecar.operations.epochIsNew).toBe(true);
    const torn = makeDir();
    writeFileSync(path.join(torn, 'journal.jsonl'), '{"type":"epoch","epo');
    const b = await start(torn, config(torn));
    expect(b.sidecar.epoch).toMatch(UUID);
    expect(b.sidecar.epoch).not.toBe(a.sidecar.epoch);
    expect(journalLines(torn)).toEqual([{ type: 'epoch', epoch: b.sidecar.epoch, createdAt: expect.any(String) }]);
  });
});
