// kill -9 of the sidecar process mid-operation, then a restart on the same journal: finished operations
// are known and never run again; an interrupted one is Failed/Interrupted, or re-run when idempotent.
// The killed sidecar's actions end with it (its spawner process kills them).
import { appendFileSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SidecarClient } from '../../../src/sidecar-client/index.ts';
import { TOKEN, alive, baseConfig, eventually, makeDir, removeDirs, spawnSidecar, spawnerPids, writeConfig, type SidecarProcess } from './helpers.ts';

const dir = makeDir();
const sh = (script: string) => ({ argv: ['sh', '-c', script] });
const configFile = writeConfig(
  dir,
  baseConfig(dir, {
    demo: {
      nodes: {
        Count: { command: sh('echo ran >> count') },
        Slow: { command: sh('echo $$ > slow.pid; exec sleep 300') },
        // hangs on its first run, succeeds on the next
        Retry: { command: sh('echo ran >> retry-runs; [ "$(wc -l < retry-runs)" -ge 2 ] || exec sleep 300'), idempotent: true },
      },
    },
  }),
);
const running: SidecarProcess[] = [];
const pids: number[] = [];

async function start(): Promise<{ process: SidecarProcess; client: SidecarClient }> {
  const process = await spawnSidecar(configFile);
  running.push(process);
  return { process, client: new SidecarClient({ baseUrl: process.url, token: TOKEN, retries: 0 }) };
}

async function kill9(process: SidecarProcess): Promise<void> {
  process.child.kill('SIGKILL');
  await process.exited;
}

afterAll(async () => {
  for (const p of running) if (p.child.exitCode === null) await kill9(p);
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  removeDirs();
});

describe('sidecar crash and restart', () => {
  it('remembers finished operations, and reports one interrupted by kill -9 as Failed/Interrupted', async () => {
    const first = await start();
    await first.client.startOperation('done-1', { node: 'Count' });
    const done = await first.client.waitForOperation('done-1');
    expect(done.phase).toBe('Succeeded');
    await first.client.startOperation('crash-1', { node: 'Slow' });
    const pid = await eventually(() => {
      try {
        return Number(readFileSync(path.join(dir, 'slow.pid'), 'utf8')) || 0;
      } catch {
        return 0;
      }
    }, 'the slow action to run');
    pids.push(pid);
    const spawners = spawnerPids(first.process.child.pid);
    expect(spawners).toHaveLength(1);
    await kill9(first.process);
    // Its spawner outlives it only long enough to kill what it started.
    await eventually(() => !alive(pid) && !spawners.some(alive), 'the action and the spawner to end with the sidecar');
    await first.client.close();
    appendFileSync(path.join(dir, 'journal.jsonl'), '{"type":"accepted","operat'); // a torn last write

    const second = await start();
    const interrupted = await second.client.getOperation('crash-1');
    expect(interrupted).toMatchObject({ phase: 'Failed', reason: 'Interrupted', attempts: 1 });
    expect(await second.client.getOperation('done-1')).toEqual(done);
    expect(await second.client.startOperation('done-1', { node: 'Count' })).toEqual(done);
    expect(await second.client.startOperation('crash-1', { node: 'Slow' })).toEqual(interrupted);
    expect(readFileSync(path.join(dir, 'count'), 'utf8')).toBe('ran\n'); // never ran twice
    await kill9(second.process);
    await second.client.close();
  });

  it('re-runs an interrupted action declared idempotent', async () => {
    const first = await start();
    await first.client.startOperation('retry-1', { node: 'Retry' });
    await eventually(() => {
      try {
        return readFileSync(path.join(dir, 'retry-runs'), 'utf8') === 'ran\n';
      } catch {
        return false;
      }
    }, 'the first run');
    await kill9(first.process);
    await first.client.close();

    const second = await start();
    const op = await second.client.waitForOperation('retry-1', { timeoutMs: 30_000 });
    expect(op).toMatchObject({ phase: 'Succeeded', events: [], attempts: 2 });
    // a graceful stop and another start: it is finished and stays so
    second.process.child.kill('SIGTERM');
    expect(await second.process.exited).toBe(0);
    await second.client.close();
    const third = await start();
    expect(await third.client.getOperation('retry-1')).toEqual(op);
    expect(readFileSync(path.join(dir, 'retry-runs'), 'utf8')).toBe('ran\nran\n');
    await third.client.close();
  });
});
