import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { StatusFormat } from '../../../src/kube/status-format.ts';
import { DATABASES } from './lifecycle.ts';
import { e2eKubeconfigPath } from './cluster.ts';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));

/**
 * `okt run` for the database graph (`graphFile`: another revision of it than graphs/database.ts; or the
 * kinds of `kindGraphs`, each a --kind-graph in the databases' group and version), as `resource` (default
 * the databases of okt.dev/v1alpha1), as a real child
 * process (so it can be killed with SIGKILL), against this run's control plane unless `kubeconfigPath`
 * names another; `statusFormat`: its --status-format (default okt's). Its --sidecar-token-file holds `token`, or is `tokenFile` when given (a file the test
 * may rotate).
 */
export function spawnOperator(options: { namespace?: string; sidecarUrl: string; token: string; tokenFile?: string; kindGraphs?: string[]; extra?: string[]; kubeconfigPath?: string; graphFile?: string; resource?: { group: string; version: string; kind: string }; statusFormat?: StatusFormat }): ChildProcess & { output: () => string } {
  const resource = options.resource ?? DATABASES;
  let tokenFile = options.tokenFile;
  if (tokenFile === undefined) {
    tokenFile = path.join(tmpdir(), `okt-e2e-token-${process.pid}-${Math.random().toString(36).slice(2)}`);
    writeFileSync(tokenFile, options.token);
  }
  const args = [
    path.join(REPO, 'bin/okt.js'), 'run', '--group', resource.group, '--version', resource.version,
    ...(options.kindGraphs === undefined
      ? ['--graph', options.graphFile ?? path.join(REPO, 'graphs/database.ts'), '--kind', resource.kind]
      : options.kindGraphs.flatMap((kindGraph) => ['--kind-graph', kindGraph])),
    ...(options.namespace === undefined ? [] : ['--namespace', options.namespace]), '--sidecar-url', options.sidecarUrl, '--sidecar-token-file', tokenFile,
    '--health-port', '-1', '--poll-interval', '1', ...(options.statusFormat === undefined ? [] : ['--status-format', options.statusFormat]), ...(options.extra ?? []),
  ];
  const child = spawn(process.execPath, args, { env: { ...process.env, KUBECONFIG: options.kubeconfigPath ?? e2eKubeconfigPath() }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return Object.assign(child, { output: () => output });
}

/** SIGKILL, and wait until the process is gone. */
export async function killHard(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  await exited;
}

/** What a rollout does to a pod: SIGTERM (okt run drains and releases its Lease), SIGKILL after `graceMs`; waits until the process is gone. */
export async function stopGracefully(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const deadline = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(deadline);
}
