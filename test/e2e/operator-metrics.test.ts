// The lifecycle metrics a user of an operator expects, on a real API server and sidecar: time on a
// node, transitions by from/to, actions' durations by outcome, and the CRs stalled now by reason.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { e2eKubeConfig, waitFor } from './helpers/index.ts';
import { conditionOf, DATABASES, installDatabaseCrd, lifecycleObjects, startLocalOperator, waitForObject, type LifecycleObject, type LocalOperator } from './helpers/lifecycle.ts';

const kc = e2eKubeConfig();
const databases = lifecycleObjects(kc, DATABASES);
let local: LocalOperator;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  local = await startLocalOperator(kc, { graph: databaseGraph, resource: DATABASES, namespacePrefix: 'okt-metrics' });
});

afterAll(async () => {
  await local?.stop();
});

const readyAt = (state: string) => (o: LifecycleObject) => o.status?.state === state && conditionOf(o, 'Ready')?.status === 'True' && o.status.observedGeneration === o.metadata.generation;

/** The value of one sample of the operator's /metrics text, 0 when absent. */
async function sample(name: string, labels: Record<string, string>): Promise<number> {
  const text = await local.operator.manager.metrics.registry.metrics();
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && wanted.every((w) => l.includes(w)));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

test('time on each node left, transitions, action durations by outcome, and stalled CRs by reason', async () => {
  const { namespace } = local;
  await databases.create(namespace, 'walker', { desiredState: 'Running', onLeaf: 'Keep' });
  await waitForObject(databases, namespace, 'walker', 'Ready at Running', readyAt('Running'));
  await databases.patchSpec(namespace, 'walker', { desiredState: 'Servicing' });
  await waitForObject(databases, namespace, 'walker', 'Ready at Servicing', readyAt('Servicing'));
  await databases.patchSpec(namespace, 'walker', { desiredState: 'Running' });
  await waitForObject(databases, namespace, 'walker', 'Ready at Running again', readyAt('Running'));

  await databases.create(namespace, 'ended', { desiredState: 'End', onLeaf: 'Keep' });
  await waitForObject(databases, namespace, 'ended', 'at End', readyAt('End'));
  await databases.patchSpec(namespace, 'ended', { desiredState: 'Running' });
  await waitForObject(databases, namespace, 'ended', 'Stalled', (o) => conditionOf(o, 'Stalled')?.reason === 'UnreachableState');

  const graph = 'database';
  // ended's route to End is Start > Running > Servicing > End (Servicing comes first among equal routes).
  expect(await sample('okt_transitions_total', { graph, from: 'Running', to: 'Servicing' })).toBe(2);
  expect(await sample('okt_transitions_total', { graph, from: 'Servicing', to: 'End' })).toBe(1);
  expect(await sample('okt_node_seconds_count', { graph, node: 'Running' })).toBe(2);
  expect(await sample('okt_node_seconds_count', { graph, node: 'Servicing' })).toBe(2);
  // The entry node was entered by no transition: no time is counted for it.
  expect(await sample('okt_node_seconds_count', { graph, node: 'Start' })).toBe(0);
  // Each action once, also those whose end was recorded with the next node's start: walker's Running
  // twice and Servicing once, ended's Running and Servicing on the way.
  expect(await sample('okt_action_duration_seconds_count', { graph, node: 'Running', phase: 'Succeeded', reason: 'Completed' })).toBe(3);
  expect(await sample('okt_action_duration_seconds_count', { graph, node: 'Servicing', phase: 'Succeeded', reason: 'Completed' })).toBe(2);
  // Counted in the operator's cache at each scrape: it sees the stall a moment after the API server does.
  await waitFor('one CR stalled UnreachableState in the metrics', async () => ((await sample('okt_resources_stalled', { graph, reason: 'UnreachableState' })) === 1 ? true : undefined), 10_000, 20);
  await databases.patchSpec(namespace, 'ended', { desiredState: 'End' });
  await waitForObject(databases, namespace, 'ended', 'not stalled', (o) => conditionOf(o, 'Stalled')?.status === 'False');
  await waitFor('no CR stalled in the metrics', async () => ((await sample('okt_resources_stalled', { graph, reason: 'UnreachableState' })) === 0 ? true : undefined), 10_000, 20);
});
