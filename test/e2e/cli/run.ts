import { spawn } from 'node:child_process';
import path from 'node:path';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const OKT = path.join(ROOT, 'bin/okt.js');

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion, feeding `input` to its stdin. */
export function run(command: string, args: readonly string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, NO_COLOR: '1', ...options.env } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** `okt ARGS` from this checkout, with the Node that npm installed. */
export function okt(args: readonly string[], options: { input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Run> {
  return run(NODE, [OKT, ...args], options);
}
