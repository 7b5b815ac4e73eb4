import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { serviceHost } from './objects.ts';

// kubectl as a user runs it: the in-cluster demo applies and reads with the same commands the docs show (docs/cli.md, docs/getting-started.md).

export class KubectlError extends Error {}

/** Run kubectl against this kubeconfig; resolves with stdout, rejects with its stderr. */
export function kubectl(kubeconfig: string, args: readonly string[], input?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('kubectl', args, { env: { ...process.env, KUBECONFIG: kubeconfig }, stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new KubectlError(`kubectl ${args.join(' ')} failed (exit ${code}): ${err.trim()}`))));
    if (input !== undefined) {
      // kubectl may end before reading all of it (a refused request): its exit code and stderr say why,
      // and the write's EPIPE would otherwise be an uncaught error.
      child.stdin!.on('error', () => {});
      child.stdin!.end(input);
    }
  });
}

/** A command's stdout piped into `kubectl apply -f -` (as `okt manifests ... | kubectl apply -f -`). */
export function applyYaml(kubeconfig: string, yaml: string): Promise<string> {
  return kubectl(kubeconfig, ['apply', '-f', '-'], yaml);
}

/** A namespace, and in it docs/cli.md's `kubectl create secret generic NAME --from-literal=token=...`. */
export async function namespaceWithToken(kubeconfig: string, namespace: string, secret: string, token: string): Promise<void> {
  await applyYaml(kubeconfig, JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace } }));
  await applyYaml(kubeconfig, await kubectl(kubeconfig, ['-n', namespace, 'create', 'secret', 'generic', secret, `--from-literal=token=${token}`, '--dry-run=client', '-o', 'yaml']));
}

/** `--host-alias <service>.<namespace>.svc=<its ClusterIP>`'s value, for a cluster without DNS. */
export async function serviceHostAlias(kubeconfig: string, namespace: string, service: string): Promise<string> {
  const ip = (await kubectl(kubeconfig, ['-n', namespace, 'get', 'service', service, '-o', 'jsonpath={.spec.clusterIP}'])).trim();
  return `${serviceHost(service, namespace)}=${ip}`;
}

/** Until the Deployment's rollout is complete. */
export async function rolloutStatus(kubeconfig: string, namespace: string, deployment: string): Promise<void> {
  await kubectl(kubeconfig, ['-n', namespace, 'rollout', 'status', `deploy/${deployment}`, '--timeout=180s']);
}

/** `kubectl logs -f`, line by line, until stopped; it is started again when the stream ends (the Pod restarted). */
export function followLogs(kubeconfig: string, args: readonly string[], onLine: (line: string) => void): { stop(): void } {
  let child: ChildProcess | undefined;
  let stopped = false;
  const start = () => {
    if (stopped) return;
    child = spawn('kubectl', ['logs', '-f', ...args], { env: { ...process.env, KUBECONFIG: kubeconfig }, stdio: ['ignore', 'pipe', 'ignore'] });
    createInterface({ input: child.stdout! }).on('line', onLine);
    child.on('close', () => setTimeout(start, 1000));
  };
  start();
  return {
    stop() {
      stopped = true;
      child?.kill();
    },
  };
}
