// The journal under trouble, with real `okt sidecar` processes: a full filesystem ends the sidecar
// (exit 4, one line) and a restart with space replays it with the same epoch; unreadable lines
// anywhere are skipped and counted; the journal is compacted while running and stays bounded.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { readJournalFile } from '../../../sidecar/journal.ts';
import { EPOCH_HEADER, SidecarClient, SidecarProblemError, type Operation } from '../../../src/sidecar-client/index.ts';
import { acceptedOperation, FIXTURE_TIME } from '../../fixtures/journal-records.ts';
import { TOKEN, alive, baseConfig, eventually, makeDir, removeDirs, spawnSidecar, writeConfig, type SidecarProcess } from './helpers.ts';

const sh = (script: string) => ({ argv: ['sh', '-c', script] });
const processes: SidecarProcess[] = [];
const clients: SidecarClient[] = [];
const mounts: string[] = [];
const pids: number[] = [];

afterAll(async () => {
  for (const client of clients) await client.close();
  for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  await Promise.all(processes.map((p) => p.exited));
  for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  for (const dir of mounts) {
    try {
      execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
    } catch {
      // not mounted (any more)
    }
    rmSync(dir, { recursive: true, force: true });
  }
  removeDirs();
});

/** A tmpfs of this size, unmounted in afterAll; undefined when this process may not mount (not root). */
function mountTmpfs(size: string): string | undefined {
  const dir = mkdtempSync(path.join(tmpdir(), 'okt-journal-fs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0755`, 'okt-journal-test', dir], { stdio: 'ignore' });
  } catch {
    rmSync(dir, { recursive: true, force: true });
    return undefined;
  }
  mounts.push(dir);
  return dir;
}
const canMount = (() => {
  const probe = mountTmpfs('64k');
  if (probe === undefined) return false;
  execFileSync('umount', [probe]);
  return true;
})();

async function run(configFile: string): Promise<{ process: SidecarProcess; client: SidecarClient }> {
  const process = await spawnSidecar(configFile);
  processes.push(process);
  const client = new SidecarClient({ baseUrl: process.url, token: TOKEN, retries: 0 });
  clients.push(client);
  return { process, client };
}

/** Spawns a sidecar expected to exit before it listens: its exit code and stderr. */
async function runFailing(configFile: string): Promise<{ code: number | null; stderr: string }> {
  const error = await spawnSidecar(configFile).then(
    (p) => {
      processes.push(p);
      return undefined;
    },
    (e: unknown) => e as Error,
  );
  expect(error).toBeInstanceOf(Error);
  const match = /^okt sidecar exited with (\S+): ([\s\S]*)$/.exec((error as Error).message);
  return { code: match?.[1] === 'null' ? null : Number(match?.[1]), stderr: match?.[2] ?? '' };
}

async function headerEpoch(url: string): Promise<string | undefined> {
  const response = await request(`${url}/healthz`);
  await response.body.dump();
  return response.headers[EPOCH_HEADER] as string | undefined;
}

async function metric(url: string, name: string): Promise<number> {
  const response = await request(`${url}/metrics`);
  const text = await response.body.text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  expect(line, `metric ${name}`).toBeDefined();
  return Number(line?.split(' ')[1]);
}

async function status(call: Promise<unknown>): Promise<number> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(SidecarProblemError);
  return (error as SidecarProblemError).status;
}

describe('a journal on a full filesystem', () => {
  it.skipIf(!canMount)('ends the sidecar with exit code 4 and one line; with space again it replays with the same epoch', async () => {
    const fs = mountTmpfs('64k') as string;
    const dir = makeDir();
    const journal = path.join(fs, 'journal.jsonl');
    const configFile = writeConfig(
      dir,
      baseConfig(
        dir,
        {
          demo: {
            nodes: {
              // about 10 KiB of output tail per finished record: the 64 KiB fill up within a few operations
              Chatty: { command: sh('echo "$OKT_OPERATION_ID" >> runs; i=0; while [ $i -lt 20 ]; do printf "%0500d\\n" $i; i=$((i+1)); done') },
              Slow: { command: sh('echo $$ > slow.pid; exec sleep 300') },
            },
          },
        },
        { journal, maxActiveOperations: 2 },
      ),
    );
    const first = await run(configFile);
    const epoch = await headerEpoch(first.process.url);
    await first.client.startOperation('slow-1', { node: 'Slow' });
    const slowPid = await eventually(() => (existsSync(path.join(dir, 'slow.pid')) ? Number(readFileSync(path.join(dir, 'slow.pid'), 'utf8')) : 0), 'the slow action');
    pids.push(slowPid);

    const accepted: string[] = [];
    const succeeded = new Map<string, Operation>();
    for (let i = 0; i < 100; i++) {
      const id = `chatty-${i}`;
      const done = await first.client
        .startOperation(id, { node: 'Chatty' })
        .then(() => accepted.push(id))
        .then(() => first.client.waitForOperation(id, { timeoutMs: 10_000 }))
        .then((op) => succeeded.set(id, op))
        .then(
          () => false,
          () => true, // the sidecar is gone
        );
      if (done) break;
    }
    expect(await first.process.exited).toBe(4);
    const stderr = first.process.stderr();
    expect(stderr).toBe(
      `okt sidecar: journal ${journal}: cannot append to it: ENOSPC: no space left on device, write; exiting (code 4): a restart replays the journal\n`,
    );
    expect(succeeded.size).toBeGreaterThan(0);
    expect([...succeeded.values()].every((op) => op.phase === 'Succeeded')).toBe(true);
    // its action was killed with it, not left running unwatched
    await eventually(() => !alive(slowPid), 'the slow action to be killed');

    // still full: the start cannot rewrite the journal, exits 4 too, and leaves it as it was
    const before = readFileSync(journal);
    const stillFull = await runFailing(configFile);
    expect(stillFull.code).toBe(4);
    expect(stillFull.stderr).toMatch(new RegExp(`^okt sidecar: journal ${journal}: cannot rewrite it: ENOSPC: no space left on device, write$`)); // trimmed: one line
    expect(readFileSync(journal).equals(before)).toBe(true);
    expect(existsSync(`${journal}.compacting`)).toBe(false);

    execFileSync('mount', ['-o', 'remount,size=1m', fs]);
    const second = await run(configFile);
    expect(await headerEpoch(second.process.url)).toBe(epoch);
    expect(await second.client.getOperation('slow-1')).toMatchObject({ phase: 'Failed', reason: 'Interrupted', epoch });
    for (const [id, op] of succeeded) expect(await second.client.getOperation(id)).toEqual({ ...op });
    // every start answered 202 is known: finished, or (its end not durable) Interrupted, never run again
    for (const id of accepted.filter((a) => !succeeded.has(a))) {
      expect(await second.client.getOperation(id)).toMatchObject({ phase: 'Failed', reason: 'Interrupted' });
    }
    const runs = readFileSync(path.join(dir, 'runs'), 'utf8').trim().split('\n');
    for (const id of accepted) expect(runs).toContain(id);
    expect(runs.length).toBeLessThanOrEqual(accepted.length + 1); // the last start may have been accepted unanswered
    for (const id of accepted) expect(await second.client.startOperation(id, { node: 'Chatty' })).toMatchObject({ id });
    expect(readFileSync(path.join(dir, 'runs'), 'utf8').trim().split('\n')).toEqual(runs);
    second.process.child.kill('SIGTERM');
    expect(await second.process.exited).toBe(0);
  });
});

describe('unreadable lines in the journal', () => {
  it('are skipped and counted wherever they are; the sidecar starts and knows the other operations', async () => {
    const dir = makeDir();
    const epoch = 'kept-epoch-torn';
    const at = FIXTURE_TIME;
    const op = (id: string, extra: Partial<Operation> = {}) => acceptedOperation(id, { epoch, node: 'Count', ...extra });
    const finished = (id: string) =>
      JSON.stringify({ type: 'finished', operation: op(id, { phase: 'Succeeded', reason: 'Completed', message: 'done', attempts: 1, finishedAt: at }) });
    const lines = [
      JSON.stringify({ type: 'epoch', epoch, createdAt: at }),
      JSON.stringify({ type: 'accepted', operation: op('a') }),
      finished('a'),
      JSON.stringify({ type: 'accepted', operation: op('b') }),
      finished('b').slice(0, 60), // torn: the finished record of b never made it whole
      JSON.stringify({ type: 'accepted', operation: op('c') }),
      '\u0000\u0000\u0000', // damaged
      JSON.stringify({ type: 'finished', operation: { id: 'c' } }), // JSON, not a record
      finished('c'),
      JSON.stringify({ type: 'accepted', operation: op('d') }),
    ];
    const journal = path.join(dir, 'journal.jsonl');
    writeFileSync(journal, `${lines.join('\n')}\n`);
    const configFile = writeConfig(dir, baseConfig(dir, { demo: { nodes: { Count: { command: sh('echo ran >> runs') } } } }));

    const { process: sidecar, client } = await run(configFile);
    expect(await headerEpoch(sidecar.url)).toBe(epoch);
    expect(await metric(sidecar.url, 'okt_sidecar_journal_skipped_lines_total')).toBe(3);
    expect(await client.getOperation('a')).toMatchObject({ phase: 'Succeeded', epoch });
    expect(await client.getOperation('b')).toMatchObject({ phase: 'Failed', reason: 'Interrupted' });
    expect(await client.getOperation('c')).toMatchObject({ phase: 'Succeeded' });
    expect(await client.getOperation('d')).toMatchObject({ phase: 'Failed', reason: 'Interrupted' });
    expect(await client.startOperation('a', { node: 'Count' })).toMatchObject({ phase: 'Succeeded' });
    expect(existsSync(path.join(dir, 'runs'))).toBe(false);
    // the start's rewrite left only readable records
    const reread = readJournalFile(journal);
    expect(reread.skippedLines).toBe(0);
    expect(reread.records.map((r) => (r.type === 'epoch' ? 'epoch' : r.type === 'observed' ? 'observed' : r.operation.id))).toEqual([
      'epoch',
      'a',
      'b',
      'c',
      'd',
    ]);
    sidecar.child.kill('SIGTERM');
    expect(await sidecar.exited).toBe(0);
  });
});

describe('an unreadable epoch line', () => {
  it('keeps the epoch the operations of the journal carry', async () => {
    const dir = makeDir();
    const at = '2026-01-01T00:00:00.000Z';
    const operation = { id: 'a', epoch: 'carried-epoch', graph: 'demo', node: 'Count', params: {}, phase: 'Succeeded', reason: 'Completed', events: [], message: 'done', createdAt: at, finishedAt: at, attempts: 1, outputTail: [] };
    const lines = [JSON.stringify({ type: 'epoch', epoch: 'carried-epoch', createdAt: at }).slice(0, 30), JSON.stringify({ type: 'finished', operation })];
    writeFileSync(path.join(dir, 'journal.jsonl'), `${lines.join('\n')}\n`);
    const { process: sidecar, client } = await run(writeConfig(dir, baseConfig(dir, { demo: { nodes: { Count: { command: sh('echo ran >> runs') } } } })));
    expect(await headerEpoch(sidecar.url)).toBe('carried-epoch');
    expect(await metric(sidecar.url, 'okt_sidecar_journal_skipped_lines_total')).toBe(1);
    expect(await client.startOperation('a', { node: 'Count', epoch: 'carried-epoch' })).toMatchObject({ phase: 'Succeeded', epoch: 'carried-epoch' });
    expect(existsSync(path.join(dir, 'runs'))).toBe(false);
    expect(readJournalFile(path.join(dir, 'journal.jsonl')).records[0]).toEqual({ type: 'epoch', epoch: 'carried-epoch', createdAt: at });
    sidecar.child.kill('SIGTERM');
    expect(await sidecar.exited).toBe(0);
  });
});

describe('the journal while running', () => {
  it('is compacted online and stays bounded; recent ids keep their output, old ones are still known and never run twice', async () => {
    const dir = makeDir();
    const journal = path.join(dir, 'journal.jsonl');
    const compactionBytes = 32 * 1024;
    const retain = 10;
    const configFile = writeConfig(
      dir,
      baseConfig(
        dir,
        // about 4 KiB of output tail per finished operation
        { demo: { nodes: { Loud: { command: sh('echo "$OKT_OPERATION_ID" >> runs; i=0; while [ $i -lt 8 ]; do printf "%0500d\\n" $i; i=$((i+1)); done') } } } },
        { journalCompactionBytes: compactionBytes, retainOperations: retain },
      ),
    );
    const { process: sidecar, client } = await run(configFile);
    const epoch = await headerEpoch(sidecar.url);
    const count = 200;
    let largest = 0;
    let written = 0;
    for (let i = 0; i < count; i++) {
      await client.startOperation(`loud-${i}`, { node: 'Loud' });
      const op = await client.waitForOperation(`loud-${i}`, { timeoutMs: 10_000 });
      expect(op.outputTail).toHaveLength(8);
      written += JSON.stringify({ type: 'finished', operation: op }).length;
      largest = Math.max(largest, statSync(journal).size);
    }
    expect(await metric(sidecar.url, 'okt_sidecar_journal_compactions_total')).toBeGreaterThan(0);
    // What it must keep: what a start writes. The file never went over twice that (plus one batch), nor over the floor.
    const kept = readJournalFile(journal).records.map((r) => `${JSON.stringify(r)}\n`).join('').length;
    expect(kept).toBeLessThan(written / 3); // without compaction it holds every output tail
    expect(largest).toBeLessThanOrEqual(Math.max(compactionBytes, 2 * kept) + 8 * 1024);
    expect(await metric(sidecar.url, 'okt_sidecar_journal_bytes')).toBe(statSync(journal).size);

    // the newest `retain` keep their output tail; older ones are known without it, and never run again
    expect((await client.getOperation(`loud-${count - 1}`)).outputTail).toHaveLength(8);
    expect((await client.getOperation(`loud-${count - retain}`)).outputTail).toHaveLength(8);
    const old = await client.getOperation('loud-0');
    expect(old).toMatchObject({ phase: 'Succeeded', outputTail: [], epoch });
    expect(await client.startOperation('loud-0', { node: 'Loud' })).toEqual(old);
    expect(await status(client.getOperation('loud-never'))).toBe(404);

    // a restart reads the compacted journal: the same epoch, every id known
    sidecar.child.kill('SIGTERM');
    expect(await sidecar.exited).toBe(0);
    const again = await run(configFile);
    expect(await headerEpoch(again.process.url)).toBe(epoch);
    expect(await metric(again.process.url, 'okt_sidecar_journal_skipped_lines_total')).toBe(0);
    for (const i of [0, 57, count - retain - 1]) expect(await again.client.getOperation(`loud-${i}`)).toMatchObject({ phase: 'Succeeded', outputTail: [] });
    expect((await again.client.getOperation(`loud-${count - 1}`)).outputTail).toHaveLength(8);
    expect(readFileSync(path.join(dir, 'runs'), 'utf8').trim().split('\n')).toHaveLength(count);
    again.process.child.kill('SIGTERM');
    expect(await again.process.exited).toBe(0);
  });
});
