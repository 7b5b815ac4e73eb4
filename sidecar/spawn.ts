// Runs `okt sidecar --config FILE` as a child process and resolves once it listens (it prints one JSON
// line with its URL), for tests, benchmarks and demos that need the sidecar as a real process.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createInterface } from 'node:readline';

// sidecar/spawn.ts in a checkout, dist/sidecar/spawn.js in the package: bin/ is one or two levels up.
const OKT_BIN = ['../bin/okt.js', '../../bin/okt.js'].map((p) => fileURLToPath(new URL(p, import.meta.url))).find((f) => existsSync(f))!;

export interface SidecarProcess {
  url: string;
  child: ChildProcess;
  exited: Promise<number | null>;
  /** What it wrote to stderr so far (its warnings at start, say). */
  stderr(): string;
}

/** `args`: more flags of `okt sidecar` (`--graph FILE`). */
export function spawnSidecarProcess(configFile: string, env: NodeJS.ProcessEnv = {}, args: readonly string[] = []): Promise<SidecarProcess> {
  const child = spawn(process.execPath, [OKT_BIN, 'sidecar', '--config', configFile, ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  let stderr = '';
  child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.includes('"listening"')) return;
      resolve({ url: (JSON.parse(line) as { url: string }).url, child, exited, stderr: () => stderr });
    });
    // On 'close', once its stderr is read to the end ('exit' may come first): the error holds all it said.
    child.on('close', (code) => reject(new Error(`okt sidecar exited with ${code}: ${stderr.trim()}`)));
  });
}
