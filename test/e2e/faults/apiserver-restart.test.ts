// Fault injection with the API server restarted (SIGKILL, then the same flags on the same etcd), on a
// control plane of this file's own so the other test files keep theirs; the other faults mix in.
import fc from 'fast-check';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../../src/cluster/index.ts';
import { installDatabaseCrd } from '../helpers/lifecycle.ts';
import { addTallies, runScenario, scenarioArbitrary, type RunTally } from './scenario.ts';

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
  const kinds = ['apiserver', 'operator', 'sidecar', 'sink', 'rival'] as const;
  const scenarios = scenarioArbitrary({
    kinds,
    crs: { min: 20, max: 30 },
    loops: { min: 2, max: 4 },
    extraFaults: { min: 0, max: 2 },
    replicas: [replicas],
  });
  await fc.assert(
    fc.asyncProperty(scenarios, async (scenario) => {
      const run = await runScenario({ kc, plane, log: (line) => console.log(line) }, scenario);
      console.log(`run: ${JSON.stringify(run)}`);
      for (const kind of kinds) expect(run.faults[kind], kind).toBeGreaterThan(0);
      total = addTallies(total, run);
    }),
    { numRuns: 1, endOnFailure: true },
  );
}, 600_000);
