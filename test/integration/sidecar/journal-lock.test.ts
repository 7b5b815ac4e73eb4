// One owner per journal, with real `okt sidecar` processes: a second sidecar started on the config of
// a running one (its journal held, or its port taken too) exits 2 with one line and leaves the journal
// as it was, so the first one's memory survives: an operation it accepts after is known after its
// restart and never run twice. A lock whose holder was killed (kill -9) is taken over.
import { readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LOCK_HEARTBEAT_MS, LOCK_STALE_MS } from '../../../sidecar/journal-lock.ts';
import { parseSidecarConfig, startSidecar } from '../../../sidecar/index.ts';
import { baseConfig, makeDir, sidecarProcesses, spawnSidecar, writeConfig } from './helpers.ts';

const { processes, start, stopAll } = sidecarProcesses();
afterAll(stopAll);

/** The journal as a second sidecar must leave it: the same file (inode), the same bytes. */
function journalSnapshot(journal: string): { inode: number; text: string } {
  return { inode: statSync(journal).ino, text: readFileSync(journal, 'utf8') };
}

/**
 * A second `okt sidecar` on `configFile` (with more flags), which must exit 2 before it listens, with
 * one line on stderr: that line. One that listens instead is killed with the others in afterAll.
 */
async function refused(configFile: string, args: string[] = []): Promise<string> {
  const outcome = await spawnSidecar(configFile, {}, args).then(
    (listening) => {
      processes.push(listening);
      return new Error(`a second sidecar listens at ${listening.url}`);
    },
    (error: unknown) => error as Error,
  );
  const match = /^okt sidecar exited with (\S+): ([\s\S]*)$/.exec(outcome.message);
  expect(match?.[1], outcome.message).toBe('2');
  expect(match?.[2]?.split('\n'), 'one line on stderr').toHaveLength(1);
  return match?.[2] as string;
}

describe('a second okt sidecar on a journal another one holds', () => {
  it('exits 2 with one line, touching nothing: the first one remembers what it accepts after, across its restart', async () => {
    const dir = makeDir();
    const journal = path.join(dir, 'journal.jsonl');
    const configFile = writeConfig(dir, baseConfig(dir, { demo: { nodes: { Count: { command: { argv: ['sh', '-c', 'echo "$OKT_OPERATION_ID" >> runs'] } } } } }));
    const a = await start(configFile);
    await a.client.startOperation('op-1', { node: 'Count' });
    expect(await a.client.waitForOperation('op-1')).toMatchObject({ phase: 'Succeeded' });
    const before = journalSnapshot(journal);

    // The same config (its port is 0: a free one), then the same config on the port the first one listens on.
    expect(await refused(configFile)).toMatch(
      new RegExp(`^okt sidecar: journal ${journal} is held by another okt sidecar \\(pid ${a.process.child.pid}, since .+\\): stop it first$`),
    );
    const port = new URL(a.process.url).port;
    expect(await refused(configFile, ['--port', port])).toBe(
      `okt sidecar: 127.0.0.1:${port} is in use by another process (the okt sidecar of pid ${a.process.child.pid} holds this config's journal ${journal})`,
    );
    // TEST-NET-1: no interface has it
    expect(await refused(configFile, ['--host', '192.0.2.1'])).toBe('okt sidecar: cannot listen on 192.0.2.1:0: listen EADDRNOTAVAIL: address not available 192.0.2.1');
    expect(journalSnapshot(journal)).toEqual(before);

    await a.client.startOperation('op-2', { node: 'Count' });
    const op2 = await a.client.waitForOperation('op-2');
    expect(op2.phase).toBe('Succeeded');
    a.process.child.kill('SIGTERM');
    expect(await a.process.exited).toBe(0);

    const restarted = await start(configFile);
    expect(await restarted.client.getOperation('op-2')).toEqual(op2);
    expect(await restarted.client.startOperation('op-2', { node: 'Count' })).toEqual(op2); // 200: known, not run again
    expect(readFileSync(path.join(dir, 'runs'), 'utf8')).toBe('op-1\nop-2\n');
  });

  it('takes over the lock of a sidecar killed with kill -9, and refuses a second embedded sidecar of the same process', async () => {
    const dir = makeDir();
    const config = baseConfig(dir, { demo: { nodes: { Count: { command: { argv: ['true'] } } } } });
    const configFile = writeConfig(dir, config);
    const killed = await start(configFile);
    await killed.client.startOperation('op-1', { node: 'Count' });
    const op1 = await killed.client.waitForOperation('op-1');
    killed.process.child.kill('SIGKILL');
    await killed.process.exited;

    const embedded = await startSidecar(parseSidecarConfig(config, dir));
    try {
      expect(embedded.operations.get('op-1')).toEqual(op1);
      await expect(startSidecar(parseSidecarConfig(config, dir))).rejects.toThrow(
        new RegExp(`^journal ${path.join(dir, 'journal.jsonl')} is held by another okt sidecar \\(pid ${process.pid}, this process, since `),
      );
    } finally {
      await embedded.close();
    }
    // Given back at close: the next one takes it.
    const next = await startSidecar(parseSidecarConfig(config, dir));
    expect(next.operations.get('op-1')).toEqual(op1);
    await next.close();
  });

  it('does not take a pid that another process reused for the holder', async () => {
    const dir = makeDir();
    const configFile = writeConfig(dir, baseConfig(dir, { demo: { nodes: { Count: { command: { argv: ['true'] } } } } }));
    // A lock of a sidecar long gone whose pid is now this test's (another start time): stale.
    writeFileSync(path.join(dir, 'journal.jsonl.lock'), JSON.stringify({ pid: process.pid, startTime: '1', host: hostname(), since: '2020-01-01T00:00:00.000Z' }));
    const sidecar = await start(configFile);
    expect(JSON.parse(readFileSync(path.join(dir, 'journal.jsonl.lock'), 'utf8'))).toMatchObject({ pid: sidecar.process.child.pid });
  });

  it('takes a lock of another host as held while its holder touches it, and over once it stopped (a Pod replaced on the same volume)', async () => {
    const dir = makeDir();
    const configFile = writeConfig(dir, baseConfig(dir, { demo: { nodes: { Count: { command: { argv: ['true'] } } } } }));
    const lock = path.join(dir, 'journal.jsonl.lock');
    writeFileSync(lock, JSON.stringify({ pid: 1, host: 'okt-db-7f9c-old', since: '2020-01-01T00:00:00.000Z' }));
    expect(await refused(configFile)).toMatch(/^okt sidecar: journal .* is held by another okt sidecar \(pid 1 on host okt-db-7f9c-old, since .*\): stop it first \(a lock of another host is taken over once untouched for 15 s\)$/);
    const stale = new Date(Date.now() - LOCK_STALE_MS - 1_000);
    utimesSync(lock, stale, stale);
    const sidecar = await start(configFile);
    expect(JSON.parse(readFileSync(lock, 'utf8'))).toMatchObject({ pid: sidecar.process.child.pid, host: hostname() });
    // Its holder touches it, so that another host keeps taking it as held.
    utimesSync(lock, stale, stale);
    await new Promise((resolve) => setTimeout(resolve, LOCK_HEARTBEAT_MS + 1_000));
    expect(Date.now() - statSync(lock).mtimeMs).toBeLessThan(LOCK_STALE_MS);
  });
});
