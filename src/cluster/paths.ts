import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where okt keeps what outlives a checkout: the built kube-apiserver, build logs, control-plane state. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.startsWith('/') ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'okt');
}

export function apiserverBinaryPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'bin', 'kube-apiserver');
}

export function provisionLogPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'provision.log');
}

/** State of the control plane started by `okt cluster up` (one per user). */
export function clusterStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'cluster');
}
