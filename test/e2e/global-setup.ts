import './helpers/context.ts';
import { Health, KubeConfig } from '@kubernetes/client-node';
import type { TestProject } from 'vitest/node';
import { startControlPlane } from '../../src/cluster/index.ts';
import { waitFor } from './helpers/wait.ts';

// One control plane for the whole e2e run: started here (provisioned first if the binaries are
// missing), or an existing cluster named by OKT_E2E_KUBECONFIG (kind, a real cluster).
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const existing = process.env.OKT_E2E_KUBECONFIG;
  if (existing) {
    await waitUntilReady(existing);
    handOver(project, existing);
    return async () => {};
  }

  // startControlPlane also stops it if this process exits or is interrupted before the teardown.
  const plane = await startControlPlane({ progress: (line) => process.stderr.write(`${line}\n`) });
  handOver(project, plane.kubeconfigPath);
  return () => plane.stop();
}

function handOver(project: TestProject, kubeconfigPath: string): void {
  project.provide('kubeconfigPath', kubeconfigPath);
  // For child processes the tests start (okt, kubectl): they find the cluster the usual way.
  process.env.KUBECONFIG = kubeconfigPath;
}

async function waitUntilReady(kubeconfigPath: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const health = new Health(kc);
  await waitFor(`/readyz of the cluster in OKT_E2E_KUBECONFIG (${kubeconfigPath})`, async () => ((await health.readyz({})) ? true : undefined), 60_000, 500);
}
