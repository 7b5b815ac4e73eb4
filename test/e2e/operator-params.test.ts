// Typed parameters on a real API server and a real sidecar: the CRD generated from the graph's zod
// schemas refuses a wrong value naming the field, and fills in defaults; the values reach the sidecar
// with the operation; a change re-runs Running's action (onParamsChange: Rerun) and not Upgrading's
// (NextTransition); a node's missing parameter is refused at admission, and stalls a CR stored before
// that rule before it enters the node.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { generateCrd } from '../../src/kube/crd.ts';
import { brokerGraph } from '../fixtures/params-graphs.ts';
import { applyCrd, e2eKubeConfig, waitFor, withoutValidationRules, type CrdManifest, applyGraphCrd } from './helpers/index.ts';
import { conditionOf, lifecycleObjects, startLocalOperator, waitForObject, type LifecycleObject, type LocalOperator } from './helpers/lifecycle.ts';

const graph = brokerGraph();
const BROKERS = { group: 'params.okt.dev', version: 'v1alpha1', plural: 'brokers', kind: 'Broker' } as const;
const kc = e2eKubeConfig();
const brokers = lifecycleObjects(kc, BROKERS);
let namespace: string;
let local: LocalOperator;

beforeAll(async () => {
  await applyGraphCrd(kc, graph, BROKERS);
  local = await startLocalOperator(kc, { graph, resource: BROKERS, namespacePrefix: 'okt-params', maxActiveOperations: 8 });
  namespace = local.namespace;
});

afterAll(async () => {
  await local?.stop();
});

/** What the API server answers a create with: its message when it refuses. */
async function refusal(name: string, spec: Record<string, unknown>): Promise<string> {
  const error = await brokers.create(namespace, name, spec).then(
    () => undefined,
    (e: unknown) => e as { code?: number; body?: unknown },
  );
  expect(error?.code, `${name} should be refused`).toBe(422);
  return (JSON.parse(String(error?.body)) as { message: string }).message;
}

const settled = (o: LifecycleObject) => o.status?.observedGeneration === o.metadata.generation && conditionOf(o, 'Ready')?.status === 'True';
const operation = (id: string) => local.sidecar.sidecar.operations.get(id);

test('a wrong type or a value the schema refuses is refused by the API server, naming the field', async () => {
  expect(await refusal('typed', { desiredState: 'Running', params: { replicas: 'three' } })).toMatch(/spec\.params\.replicas: Invalid value: "string": spec\.params\.replicas in body must be of type integer/);
  expect(await refusal('small', { desiredState: 'Running', params: { replicas: 0 } })).toMatch(/spec\.params\.replicas in body should be greater than or equal to 1/);
  expect(await refusal('version', { desiredState: 'Upgrading', params: { version: 'latest' } })).toMatch(/spec\.params\.version in body should match/);
});

test('defaults are filled in by the API server; the values reach the sidecar with the operation and are recorded in status', async () => {
  const created = await brokers.create(namespace, 'plain', { desiredState: 'Running', onLeaf: 'Keep' });
  expect(created.spec).toMatchObject({ params: { replicas: 1 } });
  const ready = await waitForObject(brokers, namespace, 'plain', 'Ready at Running', (o) => o.status?.state === 'Running' && settled(o));
  const id = ready.status!.operation!.id;
  expect(ready.status?.operation).toMatchObject({ node: 'Running', phase: 'Succeeded', params: { replicas: 1 } });
  expect(operation(id)).toMatchObject({ node: 'Running', params: { replicas: 1 }, phase: 'Succeeded' });
});

test('onParamsChange: Rerun: a change runs the action once more under a new operation id, with the new values', async () => {
  await brokers.create(namespace, 'rerun', { desiredState: 'Running', onLeaf: 'Keep', params: { replicas: 2 } });
  const first = await waitForObject(brokers, namespace, 'rerun', 'Ready at Running', (o) => o.status?.state === 'Running' && settled(o));
  const id = first.status!.operation!.id;
  await brokers.patchSpec(namespace, 'rerun', { params: { replicas: 3 } });
  const again = await waitForObject(brokers, namespace, 'rerun', 'Ready after the re-run', (o) => settled(o) && o.status?.operation?.id === `${id}.1`);
  expect(again.status?.operation).toMatchObject({ node: 'Running', phase: 'Succeeded', params: { replicas: 3 }, retries: 1, paramsSince: 1 });
  expect(operation(id)?.params).toEqual({ replicas: 2 });
  expect(operation(`${id}.1`)).toMatchObject({ params: { replicas: 3 }, attempts: 1 });
  expect(operation(`${id}.2`)).toBeUndefined();
  expect(again.status?.transition).toBe(first.status?.transition);
});

test('onParamsChange: NextTransition: a change runs nothing while the CR rests; the next node entered gets the new values', async () => {
  await brokers.create(namespace, 'upgrade', { desiredState: 'Upgrading', onLeaf: 'Keep', params: { replicas: 2, version: '1.0.0' } });
  const upgraded = await waitForObject(brokers, namespace, 'upgrade', 'Ready at Upgrading', (o) => o.status?.state === 'Upgrading' && settled(o));
  const id = upgraded.status!.operation!.id;
  expect(operation(id)?.params).toEqual({ replicas: 2, version: '1.0.0' });
  await brokers.patchSpec(namespace, 'upgrade', { params: { replicas: 2, version: '1.1.0' } });
  const rested = await waitForObject(brokers, namespace, 'upgrade', 'the change observed', settled);
  expect(rested.status?.operation?.id).toBe(id);
  expect(operation(`${id}.1`)).toBeUndefined();
  await brokers.patchSpec(namespace, 'upgrade', { desiredState: 'Running' });
  const running = await waitForObject(brokers, namespace, 'upgrade', 'Ready at Running', (o) => o.status?.state === 'Running' && settled(o));
  expect(operation(running.status!.operation!.id)?.params).toEqual({ replicas: 2 });
});

test("a node's required parameter missing (Kubernetes >= 1.28: CEL rule): refused at admission naming the field; a CR stored before the rule stalls InvalidParams before entering the node; set, it goes on", async () => {
  expect(await refusal('unversioned-now', { desiredState: 'Upgrading', onLeaf: 'Keep' })).toContain('spec.params.version: Required value: spec.params.version is required while spec.desiredState is Upgrading');
  const crd = generateCrd(graph, BROKERS) as unknown as CrdManifest;
  await applyCrd(kc, withoutValidationRules(crd));
  // The server takes a new schema a moment after it is Established.
  await waitFor('the CRD without its rules to be in force', () => brokers.create(namespace, 'unversioned', { desiredState: 'Upgrading', onLeaf: 'Keep' }).then(() => true, () => undefined));
  await applyCrd(kc, crd);
  const stalled = await waitForObject(brokers, namespace, 'unversioned', 'Stalled InvalidParams', (o) => conditionOf(o, 'Stalled')?.reason === 'InvalidParams');
  expect(stalled.status?.state).toBe('Running');
  expect(conditionOf(stalled, 'Stalled')?.message).toContain('spec.params do not fit the parameters of Upgrading (spec.params.version: ');
  await brokers.patchSpec(namespace, 'unversioned', { params: { version: '2.0.0' } });
  const upgraded = await waitForObject(brokers, namespace, 'unversioned', 'Ready at Upgrading', (o) => o.status?.state === 'Upgrading' && settled(o));
  expect(upgraded.status?.operation?.params).toEqual({ replicas: 1, version: '2.0.0' });
});
