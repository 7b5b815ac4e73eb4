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

  const plane = await startControlPlane({ progress: (line) => process.stderr.write(`${line}\n`) });
  // Teardown below does the orderly stop; these cover an interrupted run (Ctrl-C, kill, crash).
  const onExit = () => plane.stopNow();
  const onSignal = (signal: NodeJS.Signals) => {
    plane.stopNow();
    if (process.listenerCount(signal) === 1) process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('exit', onExit);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  handOver(project, plane.kubeconfigPath);
  return async () => {
    process.off('exit', onExit);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await plane.stop();
  };
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
