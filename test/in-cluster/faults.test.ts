// The faults a kubelet makes, on a real node, with okt deployed as users deploy it. Each fault lands in
// the middle of a walk Start -> Running -> Servicing -> Running -> Stopping -> End of its own CR; the
// fault suite's invariants (test/e2e/faults/checks.ts: no operation run twice, no event lost or
// reordered, no CR stuck, Ready never over a failure) are checked after each walk.
import { setTimeout as sleep } from 'node:timers/promises';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_WALK } from '../../src/demo/database-demo.ts';
import { applyYaml, kubectl } from '../../src/demo/in-cluster/kubectl.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../src/events/index.ts';
import { waitFor } from '../../src/util/wait-for.ts';
import { checkDeletion, checkEvents, checkOperations, eventsByUid, isSettledAt, readyOverFailure } from '../e2e/faults/checks.ts';
import { conditionOf, databases, type DatabaseObject } from '../e2e/helpers/lifecycle.ts';
import { DOOMED_NAMESPACE, OPERATOR, OPERATOR_NAMESPACE, WALK_NAMESPACE, startSystem, type InClusterSystem } from './system.ts';

let system: InClusterSystem;
const log = (line: string) => process.stderr.write(`${line}\n`);

beforeAll(async () => {
  system = await startSystem(log);
});

afterAll(async () => {
  await system?.stop();
});

/** At which step of the walk (index into DEMO_WALK) the fault lands, and the fault itself. */
interface KubeletFault {
  atStep: number;
  /** Wait for the sidecar to run an action first (a fault that interrupts it). */
  midAction?: boolean;
  inject(): Promise<void>;
}

/**
 * Walk a new CR through DEMO_WALK, one spec edit per step, the fault injected right after the edit
 * of its step. A CR stalled by an interrupted or failed action gets a new spec.retry, as its user would.
 * Ready=True over a failed operation is looked for in every read.
 */
async function walkWithFault(name: string, fault: KubeletFault): Promise<{ db: DatabaseObject; readyOverFailure: string[] }> {
  const api = databases(system.kc);
  const seenReadyOverFailure: string[] = [];
  let retries = 0;
  for (const [i, desired] of DEMO_WALK.entries()) {
    if (i === 0) await api.create(WALK_NAMESPACE, name, { desiredState: desired, onLeaf: 'Keep' });
    else await api.patchSpec(WALK_NAMESPACE, name, { desiredState: desired });
    if (i === fault.atStep) {
      if (fault.midAction) await system.sidecars[WALK_NAMESPACE].waitForRunningAction(20_000);
      await fault.inject();
    }
    await waitFor(`${name} settled at ${desired}`, async () => {
      const db = await api.get(WALK_NAMESPACE, name);
      const overFailure = readyOverFailure(db);
      if (overFailure) seenReadyOverFailure.push(overFailure);
      const stalled = conditionOf(db, 'Stalled');
      if (stalled?.status === 'True' && ['ActionFailed', 'Interrupted'].includes(stalled.reason ?? '') && stalled.observedGeneration === db.metadata.generation) {
        if (++retries > MAX_RETRIES) throw new WalkStuck(`${name} stalled at ${db.status?.state} after ${MAX_RETRIES} retries: ${stalled.message}`);
        await api.patchSpec(WALK_NAMESPACE, name, { retry: `after-${db.status?.operation?.id}` });
        return undefined;
      }
      return isSettledAt(db, desired) ? db : undefined;
    }, { timeoutMs: 240_000, intervalMs: 100, isFatal: (error) => error instanceof WalkStuck });
  }
  return { db: await api.get(WALK_NAMESPACE, name), readyOverFailure: seenReadyOverFailure };
}

/** A walk's user retries a failed action this often before the CR counts as stuck. */
const MAX_RETRIES = 3;
class WalkStuck extends Error {}

/** The fault suite's invariants for one walked CR; every event up to status.sequence is awaited first. */
async function checkWalk(walked: { db: DatabaseObject; readyOverFailure: string[] }): Promise<void> {
  const { db } = walked;
  await waitFor(`every event of ${db.metadata.name}`, async () => {
    const got = new Set((eventsByUid(system.received).get(db.metadata.uid) ?? []).map((e) => Number(e.sequence)));
    return Array.from({ length: db.status?.sequence ?? 0 }, (_, i) => i + 1).every((n) => got.has(n)) ? true : undefined;
  }, { timeoutMs: 60_000 });
  expect(walked.readyOverFailure, 'Ready=True over a failed operation').toEqual([]);
  expect(isSettledAt(db, 'End')).toBe(true);
  const events = checkEvents(db, eventsByUid(system.received).get(db.metadata.uid) ?? []);
  const sidecar = system.sidecars[WALK_NAMESPACE];
  // Running and Stopping are declared idempotent; the sidecar faults land on Running's action.
  const operations = checkOperations(db, await sidecar.operations(), sidecar.runs(), sidecar.allowance(true));
  const interrupted = [...sidecar.interruptions.keys()].filter((id) => id.startsWith(`${db.metadata.uid}-`)).length;
  log(`  ${db.metadata.name}: ${db.status?.transition} transitions, ${JSON.stringify({ ...events, ...operations, interrupted })}`);
}

async function operatorPods(): Promise<string[]> {
  const out = await kubectl(system.kubeconfig, ['-n', OPERATOR_NAMESPACE, 'get', 'pods', '-l', `app.kubernetes.io/instance=${OPERATOR}`, '-o', 'jsonpath={.items[*].metadata.name}']);
  return out.split(/\s+/).filter(Boolean);
}

/** The identity holding the operator's Lease: `<pod name>_<uuid>`. */
async function leaseHolder(): Promise<string> {
  return kubectl(system.kubeconfig, ['-n', OPERATOR_NAMESPACE, 'get', 'lease', OPERATOR, '-o', 'jsonpath={.spec.holderIdentity}']);
}

/** What the CRs' status holds unfinished: operations a sidecar without its journal may run again. */
async function heldUnfinished(): Promise<Set<string>> {
  const list = JSON.parse(await kubectl(system.kubeconfig, ['-n', WALK_NAMESPACE, 'get', 'databases', '-o', 'json'])) as { items: DatabaseObject[] };
  return new Set(list.items.flatMap((db) => {
    const op = db.status?.operation;
    return op !== undefined && !['Succeeded', 'Failed', 'Cancelled'].includes(op.phase) ? [op.id] : [];
  }));
}

describe('okt on a real node, under the faults a kubelet makes', () => {
  it('keeps every promise when the operator Pod is deleted mid-walk', async () => {
    const [pod] = await operatorPods();
    const walked = await walkWithFault('operator-pod-deleted', {
      atStep: 1,
      inject: async () => void (await kubectl(system.kubeconfig, ['-n', OPERATOR_NAMESPACE, 'delete', 'pod', pod!, '--wait=false'])),
    });
    await checkWalk(walked);
    // Another Pod leads now: the walk went on through a failover, not around the fault.
    expect(await leaseHolder()).not.toMatch(new RegExp(`^${pod}_`));
  });

  it('keeps every promise through a rolling update of the operator Deployment mid-walk (two versions overlap)', async () => {
    const holder = await leaseHolder();
    const walked = await walkWithFault('operator-rolled', {
      atStep: 2,
      inject: async () => {
        await kubectl(system.kubeconfig, ['-n', OPERATOR_NAMESPACE, 'set', 'env', `deploy/${OPERATOR}`, `OKT_ROLLOUT=${Date.now()}`]);
        // maxSurge 1, maxUnavailable 0: the new Pod runs beside the old one until it is ready.
        await waitFor('two operator Pods at once', async () => ((await operatorPods()).length >= 2 ? true : undefined), { timeoutMs: 60_000, intervalMs: 100 });
      },
    });
    await kubectl(system.kubeconfig, ['-n', OPERATOR_NAMESPACE, 'rollout', 'status', `deploy/${OPERATOR}`, '--timeout=180s']);
    await checkWalk(walked);
    await waitFor('a Pod of the new version to lead', async () => ((await leaseHolder()) !== holder ? true : undefined), { timeoutMs: 60_000, intervalMs: 250 });
  });

  it('keeps every promise when the sidecar container is killed inside its Pod (restarted with its journal)', async () => {
    const sidecar = system.sidecars[WALK_NAMESPACE];
    const kills = sidecar.containerKills;
    const walked = await walkWithFault('sidecar-container-killed', { atStep: 0, midAction: true, inject: () => sidecar.killContainer() });
    expect(sidecar.containerKills).toBe(kills + 1);
    await checkWalk(walked);
  });

  it('keeps every promise when the sidecar Pod is deleted and made anew without its journal', async () => {
    const sidecar = system.sidecars[WALK_NAMESPACE];
    const before = (await sidecar.pod()).metadata.uid;
    const walked = await walkWithFault('sidecar-pod-deleted', { atStep: 0, midAction: true, inject: () => sidecar.deletePod(heldUnfinished) });
    expect((await sidecar.pod()).metadata.uid).not.toBe(before);
    await checkWalk(walked);
  });

  it('keeps every promise when the kubelet is restarted mid-walk', async () => {
    const walked = await walkWithFault('kubelet-restarted', { atStep: 1, inject: () => system.plane.node!.restart('kubelet', { downMs: 3_000 }) });
    await checkWalk(walked);
  });

  it('lets a namespace be deleted with everything in it (the namespace controller runs): the CR is released, its stream complete', async () => {
    const api = databases(system.kc);
    const sidecar = system.sidecars[DOOMED_NAMESPACE];
    await api.create(DOOMED_NAMESPACE, 'doomed', { desiredState: 'Running', onLeaf: 'Keep', sidecar: { url: `http://postgres.${DOOMED_NAMESPACE}.svc:8479` } });
    const before = await waitFor('doomed settled at Running', async () => {
      const db = await api.get(DOOMED_NAMESPACE, 'doomed');
      return isSettledAt(db, 'Running') ? db : undefined;
    }, { timeoutMs: 120_000, intervalMs: 100 });
    // The journal goes with the namespace: read it as long as it is there.
    const operations = await sidecar.operations();
    let watching = true;
    const watchJournal = (async () => {
      while (watching) {
        for (const [id, op] of await sidecar.operations().catch(() => new Map())) operations.set(id, op);
        await sleep(100);
      }
    })();
    await system.kc.makeApiClient(CoreV1Api).deleteNamespace({ name: DOOMED_NAMESPACE });
    await waitFor(`namespace ${DOOMED_NAMESPACE} gone`, async () => {
      try {
        await system.kc.makeApiClient(CoreV1Api).readNamespace({ name: DOOMED_NAMESPACE });
        return undefined;
      } catch {
        return true;
      }
    }, { timeoutMs: 240_000, intervalMs: 500 });
    watching = false;
    await watchJournal;
    const stream = [...(eventsByUid(system.received).get(before.metadata.uid) ?? [])].sort((a, b) => Number(a.sequence) - Number(b.sequence));
    const last = stream.at(-1)!;
    log(`  doomed: ${last.type === LIFECYCLE_EVENT_TYPES.stalled ? 'released (DeletionAbandoned)' : 'driven down its deletion path'}; ${stream.length} events`);
    if (last.type === LIFECYCLE_EVENT_TYPES.stalled) {
      // Its sidecar went with the namespace before the deletion path could run: released after the grace period.
      expect(last.data.reason).toBe('DeletionAbandoned');
      const sequences = [...new Set(stream.map((e) => Number(e.sequence)))];
      expect(sequences, 'every event up to the last').toEqual(sequences.map((_, i) => i + 1));
    } else {
      // Its sidecar answered long enough: driven down the deletion path, each action once.
      checkDeletion(before, stream, operations, sidecar.runs());
    }
    for (const [id, count] of sidecar.runs()) expect(count, `operation ${id}: runs`).toBe(1);
  });

  it('says which permission its ServiceAccount lacks, and carries on once it is granted', async () => {
    const api = databases(system.kc);
    const role = JSON.parse(await kubectl(system.kubeconfig, ['get', 'clusterrole', OPERATOR, '-o', 'json'])) as { rules: { resources: string[]; verbs: string[] }[] };
    const statusRule = role.rules.findIndex((rule) => rule.resources.includes('databases/status'));
    expect(statusRule).toBeGreaterThanOrEqual(0);
    await kubectl(system.kubeconfig, ['patch', 'clusterrole', OPERATOR, '--type=json', '-p', JSON.stringify([{ op: 'replace', path: `/rules/${statusRule}/verbs`, value: ['get'] }])]);
    const started = Date.now();
    await api.create(WALK_NAMESPACE, 'rbac', { desiredState: 'Running', onLeaf: 'Keep' });
    const line = await waitFor('the operator to log what RBAC refused', async () => {
      const [pod] = await operatorPods();
      const logs = await kubectl(system.kubeconfig, ['-n', OPERATOR_NAMESPACE, 'logs', pod!, '--since=5m']);
      return logs.split('\n').find((l) => l.includes('permission denied by RBAC') && l.includes('/databases/rbac/status'));
    }, { timeoutMs: 30_000, intervalMs: 500 });
    log(`  logged ${((Date.now() - started) / 1000).toFixed(1)} s after the CR was created: ${JSON.parse(line).msg}`);
    expect(JSON.parse(line).msg).toContain("grant it to the operator's ServiceAccount");
    // The user grants it again, as `okt manifests` prints it.
    await applyYaml(system.kubeconfig, system.manifests);
    const db = await waitFor('rbac settled at Running once granted', async () => {
      const current = await api.get(WALK_NAMESPACE, 'rbac');
      return isSettledAt(current, 'Running') ? current : undefined;
    }, { timeoutMs: 120_000, intervalMs: 200 });
    expect(db.status?.path).toEqual(['Start', 'Running']);
  });
});
