import { execFileSync } from 'node:child_process';
import { containerdBinaryPath } from './kubernetes-modules.ts';

/** The containerd namespace the kubelet's CRI uses. */
export const K8S_NAMESPACE = 'k8s.io';

/** `ctr` arguments for a containerd at `socket`, in the kubelet's namespace. */
export function ctrArgs(socket: string, args: readonly string[]): string[] {
  return ['--address', socket, '-n', K8S_NAMESPACE, ...args];
}

/** The node's own `ctr`, built with its containerd (`okt cluster provision --node`). */
export function ctrPath(env: NodeJS.ProcessEnv = process.env): string {
  return containerdBinaryPath('ctr', env);
}

/** Run `ctr` against that containerd and return its stdout (its stderr goes into the error). */
export function ctr(socket: string, args: readonly string[], options: { timeoutMs?: number } = {}): string {
  return execFileSync(ctrPath(), ctrArgs(socket, args), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], ...(options.timeoutMs ? { timeout: options.timeoutMs } : {}) });
}
