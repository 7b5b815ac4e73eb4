// Shared set-up for the sidecar integration tests: temp dirs with a token, in-process sidecars and
// sidecars as real child processes (`okt sidecar --config`), and clients for them.
import { chmodSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSidecarConfig, startSidecar, type RunningSidecar } from '../../../sidecar/index.ts';
import { spawnSidecarProcess } from '../../../sidecar/spawn.ts';
import type { SidecarProcess } from '../../../sidecar/spawn.ts';
export type { SidecarProcess };
import { SidecarClient } from '../../../src/sidecar-client/index.ts';

export const TOKEN = 'integration-test-token-0123456789';
export const REPO = fileURLToPath(new URL('../../../', import.meta.url));

const made: string[] = [];

/** A fresh directory (world-traversable, so that the postgres OS user can use it) holding the token. */
export function makeDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'okt-sidecar-'));
  chmodSync(dir, 0o755);
  writeFileSync(path.join(dir, 'token'), `${TOKEN}\n`, { mode: 0o600 });
  made.push(dir);
  return dir;
}

export function removeDirs(): void {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function baseConfig(dir: string, graphs: Record<string, unknown>, extra: Record<string, unknown> = {}) {
  return {
    listen: { host: '127.0.0.1', port: 0 },
    tokenFile: 'token',
    journal: 'journal.jsonl',
    logLevel: 'silent',
    killGraceMs: 500,
    graphs,
    ...extra,
  };
}

export function writeConfig(dir: string, config: unknown): string {
  const file = path.join(dir, 'sidecar.json');
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

export interface InProcess {
  sidecar: RunningSidecar;
  client: SidecarClient;
  close(): Promise<void>;
}

export async function startInProcess(dir: string, config: unknown): Promise<InProcess> {
  const sidecar = await startSidecar(parseSidecarConfig(config, dir));
  const client = new SidecarClient({ baseUrl: sidecar.url, token: TOKEN, retries: 1, backoffMs: 10 });
  return {
    sidecar,
    client,
    async close() {
      await client.close();
      await sidecar.close();
    },
  };
}

/** Runs `okt sidecar --config FILE` as a real process and resolves once it listens. */
export const spawnSidecar = spawnSidecarProcess;

/** A real sidecar process and a client of it. */
export interface SpawnedSidecar {
  process: SidecarProcess;
  client: SidecarClient;
}

/**
 * The sidecar processes a test file starts, each with a client: `start` spawns one, `stopAll` (the
 * file's afterAll) closes the clients, kills what still runs and removes the temp dirs.
 */
export function sidecarProcesses(): { processes: SidecarProcess[]; start(configFile: string): Promise<SpawnedSidecar>; stopAll(): Promise<void> } {
  const processes: SidecarProcess[] = [];
  const clients: SidecarClient[] = [];
  return {
    processes,
    async start(configFile) {
      const process = await spawnSidecar(configFile);
      processes.push(process);
      const client = new SidecarClient({ baseUrl: process.url, token: TOKEN, retries: 0 });
      clients.push(client);
      return { process, client };
    },
    async stopAll() {
      for (const client of clients) await client.close();
      for (const p of processes) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
      await Promise.all(processes.map((p) => p.exited));
      removeDirs();
    },
  };
}

/** True while a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pids of the spawner processes (sidecar/spawner-process.js) that `parent` started (Linux: read from /proc). */
export function spawnerPids(parent: number = process.pid): number[] {
  const children = readdirSync(`/proc/${parent}/task`).flatMap((task) =>
    readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8').split(' ').filter(Boolean).map(Number),
  );
  return children.filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('spawner-process.js');
    } catch {
      return false; // ended meanwhile
    }
  });
}

type Truthy<T> = Exclude<T, undefined | null | false | 0 | ''>;

export async function eventually<T>(check: () => T | Promise<T>, what: string, timeoutMs = 20_000): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
