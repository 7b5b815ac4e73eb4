// Fault injection on the shared control plane: the operator killed (alone, or the leader of two
// replicas), the sidecar killed mid-action or losing its journal (restarted empty, or replaced), a
// second sidecar started on its config while it runs, the event sink down, a rival writer causing 409s, an action failing (then retried), a namespace torn
// down with its sidecar, the journal's disk full, the operator's connections black-holed, the
// operator rolled to a new revision of the graph mid-walk, CRs switched to a second sidecar with a life
// of its own and back, actions driving CRs round a cycle, and the objects CRs own faulted (stores.ts);
// then every CR deleted down its default path, leaving no object behind. Where the release serves it, a run
// may have okt's finalizer policy in force: its CRs are created with the finalizer.
import { afterAll, beforeAll, test } from 'vitest';
import { e2eKubeConfig } from '../helpers/index.ts';
import { finalizerPolicyServed } from '../helpers/finalizer-policy.ts';
import { installDatabaseCrd } from '../helpers/lifecycle.ts';
import { addTallies, assertUnderFaults, type RunTally } from './scenario.ts';
import { installStoreCrd } from './stores.ts';

const kc = e2eKubeConfig();
let total: RunTally | undefined;

beforeAll(() => Promise.all([installDatabaseCrd(kc), installStoreCrd(kc)]));
afterAll(() => console.log(`faults on the shared control plane, all runs: ${JSON.stringify(total)}`));

test.each([1, 2])('%i operator replica(s), CRs walking the graph under operator kills, sidecar crashes, memory losses and second starts, sink outages, 409s, failing actions, a namespace teardown, a full disk, a silent network, a graph upgrade, a switch to a sidecar with a life of its own, actions driving a cycle, an owned object deleted, the operator killed between an apply and its status write, a field fought over, applies refused by admission and an object never ready: every invariant holds, no object orphaned', async (replicas) => {
  const bounds = { kinds: ['operator', 'sidecar', 'sink', 'rival', 'sidecar-forgets', 'sidecar-replaced', 'sidecar-doubled', 'action-fails', 'teardown', 'disk-full', 'silent-network', 'graph-upgrade', 'sidecar-switch', 'action-cycle', 'object-deleted', 'operator-mid-apply', 'field-fight', 'apply-refused', 'never-ready'] as const, crs: { min: 20, max: 30 }, loops: { min: 2, max: 5 }, extraFaults: { min: 0, max: 4 }, replicas: [replicas], finalizerPolicy: finalizerPolicyServed() ? [false, true] : [false] };
  total = addTallies(total, await assertUnderFaults({ kc, log: (line) => console.log(line) }, bounds, 2));
}, 600_000);
