// Shared set-up for the sidecar integration tests: temp dirs with a token, in-process sidecars and
// sidecars as real child processes (`okt sidecar --config`), and clients for them.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseSidecarConfig, startSidecar, type RunningSidecar } from '../../../sidecar/index.ts';
import { SidecarClient } from '../../../src/sidecar-client/index.ts';

export const TOKEN = 'integration-test-token-0123456789';
export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
export const NODE = path.join(REPO, 'node_modules/.bin/node');

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

export interface SidecarProcess {
  url: string;
  child: ChildProcess;
  exited: Promise<number | null>;
}

/** Runs `okt sidecar --config FILE` and resolves once it listens. */
export function spawnSidecar(configFile: string, env: NodeJS.ProcessEnv = {}): Promise<SidecarProcess> {
  const child = spawn(NODE, [path.join(REPO, 'bin/okt.js'), 'sidecar', '--config', configFile], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (!line.includes('"listening"')) return;
      const { url } = JSON.parse(line) as { url: string };
      resolve({ url, child, exited });
    });
    void exited.then((code) => reject(new Error(`okt sidecar exited with ${code}: ${stderr}`)));
  });
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

export async function eventually<T>(check: () => T | Promise<T>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
