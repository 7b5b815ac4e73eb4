// Fault injection with the API server restarted (SIGKILL, down a while, then the same flags on the same
// etcd), on a control plane of this file's own so the other test files keep theirs; the other faults mix in.
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, test } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../../src/cluster/index.ts';
import { installDatabaseCrd } from '../helpers/lifecycle.ts';
import { addTallies, assertUnderFaults, type RunTally } from './scenario.ts';

let plane: ControlPlane;
let kc: KubeConfig;
let total: RunTally | undefined;

beforeAll(async () => {
  plane = await startControlPlane();
  kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  await installDatabaseCrd(kc);
});
afterAll(async () => {
  console.log(`faults with API server restarts, all runs: ${JSON.stringify(total)}`);
  await plane?.stop();
});

test.each([1, 2])('%i operator replica(s), CRs walking the graph through API server restarts (and the other faults): every invariant holds', async (replicas) => {
  const bounds = { kinds: ['apiserver', 'operator', 'sidecar', 'sink', 'rival'] as const, crs: { min: 20, max: 30 }, loops: { min: 2, max: 4 }, extraFaults: { min: 0, max: 2 }, replicas: [replicas] };
  total = addTallies(total, await assertUnderFaults({ kc, plane, log: (line) => console.log(line) }, bounds, 1));
}, 600_000);
