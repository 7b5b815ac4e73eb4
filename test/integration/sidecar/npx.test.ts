// `npx okt sidecar`: npm runs okt under a shell that passes no signal on, so a SIGTERM (or a SIGKILL)
// of the npx process must still stop the sidecar it started, and give its journal back, rather than
// leave it holding its port and journal (the next start would then meet both taken).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { afterAll, describe, expect, it } from 'vitest';
import { projectEnv, REPO } from '../../fixtures/npm-project.ts';
import { isRunning } from '../../../src/util/processes.ts';
import { baseConfig, eventually, makeDir, removeDirs, writeConfig } from './helpers.ts';

const started: number[] = [];

afterAll(() => {
  for (const pid of started) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
  removeDirs();
});

/** `npx okt sidecar --config FILE` in this checkout, as a user's shell runs it: npx's process, and the sidecar's pid. */
async function npxSidecar(configFile: string): Promise<{ npx: ReturnType<typeof spawn>; sidecarPid: number }> {
  const npx = spawn('npx', ['okt', 'sidecar', '--config', configFile], { cwd: REPO, env: projectEnv(REPO), stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  npx.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const sidecarPid = await new Promise<number>((resolve, reject) => {
    createInterface({ input: npx.stdout! }).on('line', (line) => {
      if (line.includes('"listening"')) resolve((JSON.parse(line) as { pid: number }).pid);
    });
    npx.on('exit', (code) => reject(new Error(`npx exited with ${code}: ${stderr}`)));
  });
  started.push(sidecarPid);
  expect(sidecarPid).not.toBe(npx.pid); // npx's own process is a wrapper: the sidecar runs under it
  return { npx, sidecarPid };
}

describe('okt sidecar run through npx', () => {
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`stops, giving its journal back, when the npx process gets ${signal}`, async () => {
      const dir = makeDir();
      const configFile = writeConfig(dir, baseConfig(dir, { demo: { nodes: { Run: { command: { argv: ['true'] } } } } }));
      const { npx, sidecarPid } = await npxSidecar(configFile);
      expect(existsSync(path.join(dir, 'journal.jsonl.lock'))).toBe(true);
      npx.kill(signal);
      // Orphaned, it may stay a zombie (an init that does not reap): isRunning counts that as ended.
      await eventually(() => !isRunning(sidecarPid), `the sidecar (pid ${sidecarPid}) to end after npx got ${signal}`, 10_000);
      expect(existsSync(path.join(dir, 'journal.jsonl.lock'))).toBe(false);
    });
  }
});
