// The sidecar's cost per operation: a no-op command (`true`) run through `okt sidecar` (a real process,
// journal fsynced, client with long-poll) against spawning the same process directly, in the same run
// (one of each in turn).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { spawnSidecarProcess } from '../sidecar/spawn.ts';
import { SidecarClient } from '../src/sidecar-client/index.ts';
import { median } from './median.ts';

const SERIAL = 200;
const CONCURRENT = 400;
const CONCURRENCY = 16;
const TOKEN = 'bench-token-0123456789abcdef';

/** The baseline: the same spawn the sidecar does (own process group, piped output), until it closes. */
function spawnDirect(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('true', [], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    child.on('error', reject);
    child.on('close', () => resolve());
  });
}

async function timed(one: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await one();
  return performance.now() - start;
}

/**
 * Times `count` runs of each, one of each in turn (in alternating order), so that a change of load on
 * the machine (other work on its cores) weighs on both alike.
 */
async function alternated(count: number, a: (i: number) => Promise<void>, b: (i: number) => Promise<void>): Promise<[number[], number[]]> {
  const timesA: number[] = [];
  const timesB: number[] = [];
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0) {
      timesA.push(await timed(() => a(i)));
      timesB.push(await timed(() => b(i)));
    } else {
      timesB.push(await timed(() => b(i)));
      timesA.push(await timed(() => a(i)));
    }
  }
  return [timesA, timesB];
}

async function inParallel(count: number, concurrency: number, one: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await one(next++);
    }),
  );
  return performance.now() - start;
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export async function run(): Promise<Record<string, number>> {
  const dir = mkdtempSync(path.join(tmpdir(), 'okt-sidecar-bench-'));
  writeFileSync(path.join(dir, 'token'), TOKEN);
  writeFileSync(
    path.join(dir, 'sidecar.json'),
    JSON.stringify({
      listen: { port: 0 },
      tokenFile: 'token',
      journal: 'journal.jsonl',
      logLevel: 'warn',
      maxActiveOperations: CONCURRENCY,
      graphs: { bench: { nodes: { Noop: { command: { argv: ['true'] } } } } },
    }),
  );
  const sidecar = await spawnSidecarProcess(path.join(dir, 'sidecar.json'));
  const client = new SidecarClient({ baseUrl: sidecar.url, token: TOKEN });
  try {
    const runOp = async (id: string) => {
      await client.startOperation(id, { node: 'Noop' });
      const op = await client.waitForOperation(id, { timeoutMs: 10_000 });
      if (op.phase !== 'Succeeded') throw new Error(`operation ${id} ended ${op.phase}: ${op.message}`);
    };
    await alternated(20, () => spawnDirect(), (i) => runOp(`warm-${i}`)); // warm up both paths
    const [direct, viaSidecar] = await alternated(SERIAL, () => spawnDirect(), (i) => runOp(`serial-${i}`));
    const directParallelMs = await inParallel(CONCURRENT, CONCURRENCY, () => spawnDirect());
    let acceptedAt = 0;
    let accepted = 0;
    const sidecarParallelMs = await inParallel(CONCURRENT, CONCURRENCY, async (i) => {
      const start = performance.now();
      await client.startOperation(`parallel-${i}`, { node: 'Noop' });
      acceptedAt += performance.now() - start;
      accepted++;
      await client.waitForOperation(`parallel-${i}`, { timeoutMs: 10_000 });
    });

    const overhead = mean(viaSidecar) - mean(direct);
    const opsPerS = (CONCURRENT / sidecarParallelMs) * 1000;
    const directPerS = (CONCURRENT / directParallelMs) * 1000;
    const acceptMs = acceptedAt / accepted;
    console.table([
      { measure: 'direct spawn, serial (ms/op)', mean: mean(direct).toFixed(2), median: median(direct).toFixed(2) },
      { measure: 'via sidecar, start -> Succeeded (ms/op)', mean: mean(viaSidecar).toFixed(2), median: median(viaSidecar).toFixed(2) },
      { measure: 'sidecar overhead (ms/op, goal < 2)', mean: overhead.toFixed(2), median: (median(viaSidecar) - median(direct)).toFixed(2) },
      { measure: `direct spawn, concurrency ${CONCURRENCY} (ops/s)`, mean: directPerS.toFixed(0), median: '' },
      { measure: `via sidecar, concurrency ${CONCURRENCY} (ops/s completed)`, mean: opsPerS.toFixed(0), median: '' },
      { measure: 'sidecar / direct throughput (ratio)', mean: (opsPerS / directPerS).toFixed(2), median: '' },
      { measure: 'start request to 202 under load (ms)', mean: acceptMs.toFixed(2), median: '' },
    ]);
    return {
      'sidecar.overhead_ms': Number(overhead.toFixed(3)),
      'sidecar.operations_per_s': Math.round(opsPerS),
      'sidecar.direct_spawn_ms': Number(mean(direct).toFixed(3)),
      'sidecar.start_to_succeeded_ms': Number(mean(viaSidecar).toFixed(3)),
      'sidecar.direct_spawn_per_s': Math.round(directPerS),
      'sidecar.throughput_ratio': Number((opsPerS / directPerS).toFixed(3)),
      'sidecar.accept_ms': Number(acceptMs.toFixed(3)),
    };
  } finally {
    await client.close();
    sidecar.child.kill('SIGTERM');
    await sidecar.exited;
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.main) console.log(await run());
