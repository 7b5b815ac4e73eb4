// Fault injection on the shared control plane: the operator killed (alone, or the leader of two
// replicas), the sidecar killed mid-action, the event sink down, a rival writer causing 409s.
import fc from 'fast-check';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { e2eKubeConfig } from '../helpers/index.ts';
import { installDatabaseCrd } from '../helpers/lifecycle.ts';
import { addTallies, runScenario, scenarioArbitrary, type RunTally } from './scenario.ts';

const kc = e2eKubeConfig();
let total: RunTally | undefined;

beforeAll(() => installDatabaseCrd(kc));
afterAll(() => console.log(`faults on the shared control plane, all runs: ${JSON.stringify(total)}`));

test.each([1, 2])('%i operator replica(s), CRs walking the graph under operator kills, sidecar crashes, sink outages and 409s: every invariant holds', async (replicas) => {
  const kinds = ['operator', 'sidecar', 'sink', 'rival'] as const;
  const scenarios = scenarioArbitrary({
    kinds,
    crs: { min: 20, max: 30 },
    loops: { min: 2, max: 5 },
    extraFaults: { min: 0, max: 4 },
    replicas: [replicas],
  });
  await fc.assert(
    fc.asyncProperty(scenarios, async (scenario) => {
      const run = await runScenario({ kc, log: (line) => console.log(line) }, scenario);
      console.log(`run: ${JSON.stringify(run)}`);
      for (const kind of kinds) expect(run.faults[kind], kind).toBeGreaterThan(0);
      total = addTallies(total, run);
    }),
    // Each run is a minute of real processes: no shrinking, the seed and the failing scenario are printed.
    { numRuns: 2, endOnFailure: true },
  );
}, 600_000);
