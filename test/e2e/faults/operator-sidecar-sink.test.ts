// Fault injection on the shared control plane: the operator killed (alone, or the leader of two
// replicas), the sidecar killed mid-action, the event sink down, a rival writer causing 409s.
import { afterAll, beforeAll, test } from 'vitest';
import { e2eKubeConfig } from '../helpers/index.ts';
import { installDatabaseCrd } from '../helpers/lifecycle.ts';
import { addTallies, assertUnderFaults, type RunTally } from './scenario.ts';

const kc = e2eKubeConfig();
let total: RunTally | undefined;

beforeAll(() => installDatabaseCrd(kc));
afterAll(() => console.log(`faults on the shared control plane, all runs: ${JSON.stringify(total)}`));

test.each([1, 2])('%i operator replica(s), CRs walking the graph under operator kills, sidecar crashes, sink outages and 409s: every invariant holds', async (replicas) => {
  const bounds = { kinds: ['operator', 'sidecar', 'sink', 'rival'] as const, crs: { min: 20, max: 30 }, loops: { min: 2, max: 5 }, extraFaults: { min: 0, max: 4 }, replicas: [replicas] };
  total = addTallies(total, await assertUnderFaults({ kc, log: (line) => console.log(line) }, bounds, 2));
}, 600_000);
