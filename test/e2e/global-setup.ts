import './helpers/context.ts';
import { Health, KubeConfig, VersionApi } from '@kubernetes/client-node';
import { delimiter, dirname } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startControlPlane } from '../../src/cluster/index.ts';
import { waitFor } from './helpers/wait.ts';

// One control plane for the whole e2e run: started here (provisioned first if the binaries are
// missing) at the release OKT_KUBERNETES_VERSION names (else the default), or an existing cluster
// named by OKT_E2E_KUBECONFIG (kind, a real cluster).
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const existing = process.env.OKT_E2E_KUBECONFIG;
  if (existing) {
    await waitUntilReady(existing);
    handOver(project, existing, await serverVersion(existing));
    return async () => {};
  }

  // startControlPlane also stops it if this process exits or is interrupted before the teardown.
  const plane = await startControlPlane({ progress: (line) => process.stderr.write(`${line}\n`) });
  process.stderr.write(`okt e2e: Kubernetes ${plane.kubernetesVersion} at ${plane.server}\n`);
  // The tests' kubectl is the release's own when it was built with it: `kubectl wait` and friends are
  // then judged by the kubectl users of that release have.
  if (plane.kubectl) process.env.PATH = `${dirname(plane.kubectl)}${delimiter}${process.env.PATH ?? ''}`;
  handOver(project, plane.kubeconfigPath, plane.kubernetesVersion);
  return () => plane.stop();
}

function handOver(project: TestProject, kubeconfigPath: string, kubernetesVersion: string): void {
  project.provide('kubeconfigPath', kubeconfigPath);
  project.provide('kubernetesVersion', kubernetesVersion);
  // For child processes the tests start (okt, kubectl): they find the cluster the usual way.
  process.env.KUBECONFIG = kubeconfigPath;
}

/** `1.37.2` of the server's `/version` (`v1.37.2+k3s1` and the like lose their suffix). */
async function serverVersion(kubeconfigPath: string): Promise<string> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const { gitVersion } = await kc.makeApiClient(VersionApi).getCode();
  return gitVersion.replace(/^v/, '').replace(/[-+].*$/, '');
}

async function waitUntilReady(kubeconfigPath: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const health = new Health(kc);
  await waitFor(`/readyz of the cluster in OKT_E2E_KUBECONFIG (${kubeconfigPath})`, async () => ((await health.readyz({})) ? true : undefined), 60_000, 500);
}
