import './context.ts';
import { ApiException, CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { run } from '../../fixtures/okt-process.ts';

/** The kubeconfig of this run's control plane (started by test/e2e/global-setup.ts, or OKT_E2E_KUBECONFIG). */
export function e2eKubeconfigPath(): string {
  return inject('kubeconfigPath');
}

/** The Kubernetes release this run's control plane runs (`1.37.2`). */
export function e2eKubernetesVersion(): string {
  return inject('kubernetesVersion');
}

/** A KubeConfig for this run's control plane. */
export function e2eKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromFile(e2eKubeconfigPath());
  return kc;
}

/**
 * Create a namespace with a unique name, to keep test files apart. Note: no kube-controller-manager
 * runs, so a deleted namespace would stay Terminating; the control plane is thrown away after the run.
 */
export async function createNamespace(kc: KubeConfig, prefix = 'okt-e2e'): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
  return name;
}

/** Options for client-node's patch calls: send the body as a JSON merge patch (RFC 7386). */
export const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/** The HTTP status of a failed client-node call (ApiException), or undefined for other errors. */
export function httpStatusOf(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** Await a call that must fail with an HTTP error; returns the status and the server's message. */
export async function expectHttpError(call: Promise<unknown>): Promise<{ status: number; message: string }> {
  try {
    await call;
  } catch (error) {
    const status = httpStatusOf(error);
    if (status === undefined) throw error;
    const body = (error as ApiException<unknown>).body;
    const message = typeof body === 'string' ? body : JSON.stringify(body);
    return { status, message };
  }
  throw new Error('expected the call to fail with an HTTP error, but it succeeded');
}

/** `kubectl ARGS` against the test API server, `input` on its stdin: its stdout; a failure names the command and its stderr. */
export async function kubectl(args: readonly string[], input?: string): Promise<string> {
  const done = await run('kubectl', args, { env: { KUBECONFIG: e2eKubeconfigPath() }, ...(input === undefined ? {} : { input }) });
  if (done.code !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${done.code}: ${done.stderr}`);
  return done.stdout;
}

/** `kubectl wait --for=condition=CONDITION RESOURCE -n NAMESPACE`, the way a user waits, against the test API server. */
export async function kubectlWait(resource: string, condition: string, namespace: string): Promise<string> {
  return await kubectl(['wait', `--for=condition=${condition}`, resource, '-n', namespace, '--timeout=30s']);
}
