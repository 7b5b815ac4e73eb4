// Figures for docs/testing.md, "Measured", and notes: a cached start of etcd + kube-apiserver to /readyz, and the peak
// memory (VmHWM, Linux) of both processes while the e2e suite runs against them.
// Usage: node scripts/measure-control-plane.ts   (provisions first if needed; that time is printed too)
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { findBinaries, provision, startControlPlane } from '../src/cluster/index.ts';

const hadBinaries = findBinaries() !== undefined;
const t0 = Date.now();
await provision();
const provisionSeconds = (Date.now() - t0) / 1000;

const plane = await startControlPlane({ provision: false });
try {
  const suite = spawnSync('npx', ['vitest', 'run', '--project', 'e2e'], {
    stdio: 'inherit',
    env: { ...process.env, OKT_E2E_KUBECONFIG: plane.kubeconfigPath },
  });
  const peakMb = Object.fromEntries(plane.processes.map((p) => [p.name, peakRssMb(p.pid)]));
  console.log(
    JSON.stringify(
      {
        [hadBinaries ? 'provisionCachedSeconds' : 'provisionFirstSeconds']: provisionSeconds,
        startToReadyzSeconds: plane.readyAfterMs / 1000,
        peakRssMb: peakMb,
        e2eSuiteExit: suite.status,
      },
      null,
      2,
    ),
  );
} finally {
  await plane.stop();
}

function peakRssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmHWM:'));
  return Math.round(Number(line?.replace(/\D+/g, '') ?? 0) / 1024);
}
