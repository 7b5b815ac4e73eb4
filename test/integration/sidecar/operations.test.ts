// Operations through real HTTP and real processes: events, idempotency, conflicts, timeouts,
// cancellation, and the http and module actions.
import { createServer, type Server } from 'node:http';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SidecarClient, SidecarProblemError } from '../../../src/sidecar-client/index.ts';
import { alive, baseConfig, eventually, makeDir, removeDirs, spawnerPids, startInProcess, TOKEN, type InProcess } from './helpers.ts';

let app: InProcess;
let dir: string;
let appServer: Server;
let appUrl: string;

beforeAll(async () => {
  dir = makeDir();
  appServer = createServer((req, res) => {
    if (req.url === '/backup') {
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"events":["Running"]}');
    } else if (req.url === '/degraded') {
      res.writeHead(503).end('down');
    } else {
      res.writeHead(500).end('broken');
    }
  });
  await new Promise<void>((r) => appServer.listen(0, '127.0.0.1', r));
  const address = appServer.address();
  appUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  writeFileSync(
    path.join(dir, 'action.mjs'),
    `export default (ctx) => ctx.params.go ? [ctx.params.go] : undefined;
     export const typed = (ctx) => { ctx.log('replicas+1=' + (ctx.params.replicas + 1) + ' zones=' + ctx.params.zones.join('|')); };
     export const boom = () => { throw new Error('no disk'); };`,
  );
  const sh = (script: string) => ({ argv: ['sh', '-c', script] });
  app = await startInProcess(
    dir,
    baseConfig(dir, {
      demo: {
        nodes: {
          Noop: { command: { argv: ['true'] } },
          Emit: { command: sh('echo working; echo "okt-event: Servicing"; echo "okt-event: Running"') },
          Stay: { command: { argv: ['true'] }, onSuccess: [] },
          MoveOn: { command: { argv: ['true'] }, onSuccess: ['DefaultState'] },
          Env: { command: sh('echo "okt-event: $OKT_PARAM_target"; echo "node=$OKT_NODE id=$OKT_OPERATION_ID"') },
          EnvJson: { command: sh('echo "replicas=$OKT_PARAM_replicas zones=$OKT_PARAM_zones version=$OKT_PARAM_version"; echo "all=$OKT_PARAMS"') },
          ModuleTyped: { module: { path: 'action.mjs', export: 'typed' } },
          Fail: { command: sh('echo oops >&2; exit 3') },
          FailHandled: { command: sh('exit 4'), onFailure: 'ErrorManager' },
          BadEvent: { command: sh('echo "okt-event: not an event!"') },
          Hang: { command: sh(`sleep 300 & echo $! > ${dir}/grandchild.pid; wait`), timeoutMs: 300 },
          Slow: { command: sh(`echo $$ > ${dir}/slow.pid; sleep 300`) },
          Missing: { command: { argv: [path.join(dir, 'no-such-program')] } },
          HttpOk: { http: { url: `${appUrl}/backup` } },
          HttpMapped: { http: { url: `${appUrl}/degraded`, statusEvents: { '503': ['Stopping'] } } },
          HttpFail: { http: { url: `${appUrl}/other` } },
          Module: { module: { path: 'action.mjs' } },
          ModuleThrows: { module: { path: 'action.mjs', export: 'boom' }, onFailure: 'ErrorManager' },
        },
      },
    }),
  );
});

afterAll(async () => {
  await app?.close();
  await new Promise((r) => appServer?.close(r));
  removeDirs();
});

let counter = 0;
const nextId = () => `op-${++counter}`;

async function run(node: string, params?: Record<string, unknown>) {
  const id = nextId();
  const started = await app.client.startOperation(id, params ? { node, params } : { node });
  expect(started.id).toBe(id);
  return app.client.waitForOperation(id, { timeoutMs: 30_000 });
}

describe('sidecar operations', () => {
  it('a command that exits 0 without event lines raises nothing (onSuccess defaults to [])', async () => {
    const op = await run('Noop');
    expect(op).toMatchObject({ phase: 'Succeeded', events: [], reason: 'Completed', exitCode: 0 });
    expect(op.finishedAt).toBeDefined();
  });

  it('onSuccess: [DefaultState] must be declared to move on by itself', async () => {
    expect((await run('MoveOn')).events).toEqual(['DefaultState']);
  });

  it('event lines on stdout are the events raised, in order; the output tail is kept', async () => {
    const op = await run('Emit');
    expect(op.events).toEqual(['Servicing', 'Running']);
    expect(op.outputTail).toContain('working');
  });

  it('an explicit onSuccess: [] raises nothing too', async () => {
    expect((await run('Stay')).events).toEqual([]);
  });

  it('params reach the command as OKT_PARAM_* variables, never through a shell string', async () => {
    const op = await run('Env', { target: 'Stopping' });
    expect(op.events).toEqual(['Stopping']);
    expect(op.outputTail.some((l) => /^node=Env id=op-\d+$/.test(l))).toBe(true);
  });

  it('typed params: a string as it is, any other value as JSON, all of them in OKT_PARAMS; a module gets the values', async () => {
    const params = { replicas: 3, zones: ['a', 'b'], version: '1.2.3' };
    const op = await run('EnvJson', params);
    expect(op.params).toEqual(params);
    expect(op.outputTail).toContain('replicas=3 zones=["a","b"] version=1.2.3');
    expect(op.outputTail).toContain(`all=${JSON.stringify(params)}`);
    expect((await run('ModuleTyped', params)).outputTail).toContain('replicas+1=4 zones=a|b');
  });

  it('the same params in another key order are the same request: a retry, no conflict', async () => {
    const id = nextId();
    await app.client.startOperation(id, { node: 'Noop', params: { a: { x: 1, y: 2 }, b: 'c' } });
    const again = await app.client.startOperation(id, { node: 'Noop', params: { b: 'c', a: { y: 2, x: 1 } } });
    expect(again.id).toBe(id);
    expect((await app.client.waitForOperation(id)).attempts).toBe(1);
  });

  it('a non-zero exit fails the operation, or raises onFailure when the node declares one', async () => {
    expect(await run('Fail')).toMatchObject({ phase: 'Failed', events: [], reason: 'NonZeroExit', exitCode: 3 });
    expect(await run('FailHandled')).toMatchObject({
      phase: 'Succeeded',
      events: ['ErrorManager'],
      reason: 'NonZeroExit',
      exitCode: 4,
    });
  });

  it('an event line that is not an event name fails the operation', async () => {
    const op = await run('BadEvent');
    expect(op).toMatchObject({ phase: 'Failed', reason: 'InvalidEvents' });
  });

  it('a program that cannot be started fails with ActionError', async () => {
    expect(await run('Missing')).toMatchObject({ phase: 'Failed', reason: 'ActionError' });
  });

  it('a hanging command is killed at its timeout, with its whole process group', async () => {
    const op = await run('Hang');
    expect(op).toMatchObject({ phase: 'Failed', reason: 'Timeout' });
    const grandchild = Number(readFileSync(path.join(dir, 'grandchild.pid'), 'utf8'));
    await eventually(() => !alive(grandchild), 'the grandchild to be killed');
  });

  it('the same id with the same body returns the same operation and runs nothing again', async () => {
    const id = nextId();
    const first = await app.client.startOperation(id, { node: 'Emit', graph: 'demo' });
    const done = await app.client.waitForOperation(id);
    const again = await app.client.startOperation(id, { node: 'Emit' }); // graph defaulted: the same request
    expect(again).toEqual(done);
    expect(again.createdAt).toBe(first.createdAt);
    expect(again.attempts).toBe(1);
  });

  it('the same id with another body is a 409 conflict', async () => {
    const id = nextId();
    await app.client.startOperation(id, { node: 'Noop' });
    await app.client.waitForOperation(id);
    const error = await app.client.startOperation(id, { node: 'Noop', params: { a: 'b' } }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SidecarProblemError);
    expect((error as SidecarProblemError).status).toBe(409);
    expect((error as SidecarProblemError).problem.type).toMatch(/id-conflict$/);
  });

  it('a second start while one runs is a 409 naming the running operation; its own id is fine', async () => {
    const slow = nextId();
    await app.client.startOperation(slow, { node: 'Slow' });
    const error = await app.client.startOperation(nextId(), { node: 'Noop' }).catch((e: unknown) => e);
    expect((error as SidecarProblemError).status).toBe(409);
    expect((error as SidecarProblemError).problem.activeOperations).toEqual([slow]);
    expect((await app.client.startOperation(slow, { node: 'Slow' })).id).toBe(slow);
    await app.client.cancelOperation(slow);
  });

  /** Starts the Slow node's action and waits until it runs: its operation id and the pid it wrote. */
  async function startSlow(): Promise<{ id: string; pid: number }> {
    const id = nextId();
    await app.client.startOperation(id, { node: 'Slow' });
    const pidFile = path.join(dir, 'slow.pid');
    const pid = await eventually(() => {
      try {
        return Number(readFileSync(pidFile, 'utf8')) || 0;
      } catch {
        return 0;
      }
    }, 'the slow action to start');
    return { id, pid };
  }

  it('cancel kills the action and ends the operation Cancelled; cancelling again changes nothing', async () => {
    const { id, pid } = await startSlow();
    const cancelled = await app.client.cancelOperation(id);
    expect(cancelled).toMatchObject({ phase: 'Cancelled', reason: 'Cancelled', events: [] });
    expect(alive(pid)).toBe(false);
    expect(await app.client.cancelOperation(id)).toEqual(cancelled);
    // and the sidecar is free again
    expect((await run('Noop')).phase).toBe('Succeeded');
  });

  it('programs are started by one spawner process; if it ends under an action, the action fails and its group is killed, and the next action gets another', async () => {
    const [spawner, ...others] = spawnerPids();
    expect(spawner).toBeDefined();
    expect(others).toEqual([]);
    const { id, pid } = await startSlow();
    process.kill(spawner as number, 'SIGKILL');
    const failed = await app.client.waitForOperation(id, { timeoutMs: 30_000 });
    expect(failed).toMatchObject({ phase: 'Failed', reason: 'ActionError' });
    expect(failed.message).toMatch(/the spawner process ended \(SIGKILL\)/);
    await eventually(() => !alive(pid), 'the action to be killed');
    expect(await run('Emit')).toMatchObject({ phase: 'Succeeded', events: ['Servicing', 'Running'] });
    expect(spawnerPids()).toHaveLength(1);
    expect(spawnerPids()).not.toContain(spawner);
  });

  it('a long-poll answers with the operation still running when the wait runs out', async () => {
    const id = nextId();
    await app.client.startOperation(id, { node: 'Slow' });
    const op = await app.client.getOperation(id, { waitMs: 100 });
    expect(op.phase).toBe('Running');
    await app.client.cancelOperation(id);
  });

  it('closing a client aborts its long-poll in flight instead of waiting out the wait (an operator stops at once)', async () => {
    const id = nextId();
    await app.client.startOperation(id, { node: 'Slow' });
    const own = new SidecarClient({ baseUrl: app.sidecar.url, token: TOKEN, retries: 0 });
    const poll = own.getOperation(id, { waitMs: 30_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await own.close();
    await expect(poll).rejects.toThrow();
    await app.client.cancelOperation(id);
  });

  it('http actions: JSON events, mapped statuses, and unmapped failures', async () => {
    expect(await run('HttpOk')).toMatchObject({ phase: 'Succeeded', events: ['Running'] });
    expect(await run('HttpMapped')).toMatchObject({ phase: 'Succeeded', events: ['Stopping'] });
    expect(await run('HttpFail')).toMatchObject({ phase: 'Failed', reason: 'HttpStatus' });
  });

  it('module actions: returned events, onSuccess when none, onFailure when it throws', async () => {
    expect((await run('Module', { go: 'Servicing' })).events).toEqual(['Servicing']);
    expect((await run('Module')).events).toEqual([]);
    expect(await run('ModuleThrows')).toMatchObject({ phase: 'Succeeded', events: ['ErrorManager'], reason: 'ActionError' });
  });

  it('an unknown node or graph is a 422 naming the field', async () => {
    const node = await app.client.startOperation(nextId(), { node: 'Nope' }).catch((e: unknown) => e);
    expect((node as SidecarProblemError).problem).toMatchObject({ status: 422, field: 'body.node' });
    const graph = await app.client.startOperation(nextId(), { node: 'Noop', graph: 'other' }).catch((e: unknown) => e);
    expect((graph as SidecarProblemError).problem).toMatchObject({ status: 422, field: 'body.graph' });
  });

  it('an unknown operation is a 404 problem', async () => {
    const error = await app.client.getOperation('never-started').catch((e: unknown) => e);
    expect((error as SidecarProblemError).status).toBe(404);
  });
});
