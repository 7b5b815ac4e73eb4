import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { sidecarRequestCounts } from '../../sidecar/noop.ts';
import { e2eKubeConfig, expectHttpError, kubectlWait, waitFor } from './helpers/index.ts';
import { conditionOf, DATABASES, databases, installDatabaseCrd, startLocalOperator, waitForDatabase, waitForGone, type LocalOperator } from './helpers/lifecycle.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
let namespace: string;
let local: LocalOperator;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  local = await startLocalOperator(kc, { graph: databaseGraph, resource: DATABASES, namespacePrefix: 'okt-operator' });
  namespace = local.namespace;
});

afterAll(async () => {
  await local?.stop();
});

async function reconciles(): Promise<number> {
  const metric = await local.operator.manager.metrics.reconcileTotal.get();
  return metric.values.reduce((sum, v) => sum + v.value, 0);
}

/** Resolves once the operator's queue has been empty, nothing reconciling, for half a second. */
async function settled(): Promise<void> {
  const { queue } = local.operator.lifecycle.controller;
  let quietSince = performance.now();
  await waitFor('the operator to settle', async () => {
    if (queue.length + queue.processing > 0) quietSince = performance.now();
    return performance.now() - quietSince >= 500 ? true : undefined;
  });
}

describe('the operator on a real API server and a real sidecar', () => {
  test('walks Start -> Running -> Servicing -> Running -> Stopping -> End by editing spec.desiredState', async () => {
    await api.create(namespace, 'walk', { desiredState: 'Running' });
    expect(await kubectlWait(`databases.${DATABASES.group}/walk`, 'Running', namespace)).toContain('condition met');
    let db = await waitForDatabase(kc, namespace, 'walk', 'Ready', (o) => conditionOf(o, 'Ready')?.status === 'True');
    expect(db.metadata.finalizers).toContain('okt.dev/lifecycle');
    expect(db.status?.path).toEqual(['Start', 'Running']);

    for (const desired of ['Servicing', 'Running', 'Stopping']) {
      await api.patchSpec(namespace, 'walk', { desiredState: desired });
      expect(await kubectlWait(`databases.${DATABASES.group}/walk`, desired, namespace)).toContain('condition met');
      db = await waitForDatabase(kc, namespace, 'walk', `Ready at ${desired}`, (o) => o.status?.state === desired && conditionOf(o, 'Ready')?.status === 'True' && o.status.observedGeneration === o.metadata.generation);
    }
    expect(db.status?.pathSummary).toBe('>Start>(Running<<>>Servicing)x1>Running>Stopping');
    expect(db.status?.transition).toBe(4);
    expect(conditionOf(db, 'Running')).toMatchObject({ status: 'False', reason: 'Left' });
    // Conditions of nodes left before the last one are pruned: status does not grow with the graph.
    expect(conditionOf(db, 'Servicing')).toBeUndefined();

    // End is a leaf: reaching it through the spec ends the CR's life (onLeaf defaults to Delete).
    await api.patchSpec(namespace, 'walk', { desiredState: 'End' });
    expect(await waitForGone(kc, namespace, 'walk')).toBe(true);
  });

  test('a steady state costs no API reads; a transition costs one write', async () => {
    await api.create(namespace, 'costs', { desiredState: 'Running', onLeaf: 'Keep' });
    await waitForDatabase(kc, namespace, 'costs', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
    const before = local.operator.transport.counters.snapshot();
    await api.patchSpec(namespace, 'costs', { desiredState: 'Servicing' });
    await waitForDatabase(kc, namespace, 'costs', 'Ready at Servicing', (o) => o.status?.state === 'Servicing' && conditionOf(o, 'Ready')?.status === 'True');
    const after = local.operator.transport.counters.snapshot();
    expect(after.reads - before.reads).toBe(0);
    // One write commits the transition (and starts the action); one more records that the action succeeded (Ready).
    expect(after.writes - before.writes).toBe(2);
  });

  test('two transitions in one spec edit (Running -> Stopping -> End, kept at the leaf) cost a reconcile each and three sidecar requests: one look, the start, its long-poll', async () => {
    await api.create(namespace, 'hops', { desiredState: 'Running', onLeaf: 'Keep' });
    await waitForDatabase(kc, namespace, 'hops', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
    await settled();
    const reconcilesBefore = await reconciles();
    const requestsBefore = await sidecarRequestCounts(local.sidecar);
    await api.patchSpec(namespace, 'hops', { desiredState: 'End' });
    await waitForDatabase(kc, namespace, 'hops', 'Ready at End', (o) => o.status?.state === 'End' && conditionOf(o, 'Ready')?.status === 'True');
    await settled();
    // The spec edit's (it commits Stopping and starts its action) and the action end's (it records the
    // end the long-poll heard and commits End); a kept leaf asks for no look after.
    expect((await reconciles()) - reconcilesBefore).toBe(2);
    const requestsAfter = await sidecarRequestCounts(local.sidecar);
    const asked = Object.fromEntries(Object.entries(requestsAfter).map(([request, n]) => [request, n - (requestsBefore[request] ?? 0)]).filter(([, n]) => n !== 0));
    expect(asked).toEqual({ 'GET /v1/observation': 1, 'PUT /v1/operations/:id': 1, 'GET /v1/operations/:id': 1 });
  });

  test('an unreachable desired state stalls with UnreachableState, naming both nodes', async () => {
    await api.create(namespace, 'stuck', { desiredState: 'Stopping', onLeaf: 'Keep' });
    await waitForDatabase(kc, namespace, 'stuck', 'Ready at Stopping', (o) => o.status?.state === 'Stopping' && conditionOf(o, 'Ready')?.status === 'True');
    await api.patchSpec(namespace, 'stuck', { desiredState: 'Running' });
    const db = await waitForDatabase(kc, namespace, 'stuck', 'Stalled', (o) => conditionOf(o, 'Stalled')?.status === 'True');
    expect(conditionOf(db, 'Stalled')?.reason).toBe('UnreachableState');
    expect(conditionOf(db, 'Stalled')?.message).toContain('Running cannot be reached from Stopping');
    expect(conditionOf(db, 'Ready')?.status).toBe('False');
  });

  test('an unknown desired state is refused by the API server (the CRD enum lists the graph nodes)', async () => {
    const refused = await expectHttpError(api.create(namespace, 'typo', { desiredState: 'Runing' }));
    expect(refused.status).toBe(422);
    expect(refused.message).toContain('Runing');
  });

  test('deleting a CR drives the application down to a leaf before the finalizer goes', async () => {
    await api.create(namespace, 'doomed', { desiredState: 'Running' });
    await waitForDatabase(kc, namespace, 'doomed', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
    await api.remove(namespace, 'doomed');
    expect(await waitForGone(kc, namespace, 'doomed')).toBe(true);
  });
});
