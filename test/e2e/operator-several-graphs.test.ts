import { fileURLToPath } from 'node:url';
import { CoordinationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { createLogger } from '../../src/controller/index.ts';
import { createLifecycleEventReceiver, type LifecycleEvent, type LifecycleEventReceiver } from '../../src/events/index.ts';
import { resourcePath } from '../../src/kube/transport/index.ts';
import { startNoopSidecar as startNoopSidecarFor, type NoopSidecar } from '../../sidecar/noop.ts';
import { createNamespace, e2eKubeConfig, applyGraphCrd } from './helpers/index.ts';
import { conditionOf, DATABASES, installDatabaseCrd, lifecycleObjects, waitForObject, waitForObjectGone, type LifecycleObject } from './helpers/lifecycle.ts';
import { killHard, spawnOperator } from './helpers/operator-process.ts';

// One startOperator serves two kinds, the database graph's and the reconciliation graph's, with a CR
// of the same namespace/name in each: each is driven by its own graph, and each CR's events reach the
// sink in order and wake its own kind's controller.

const RECONCILIATIONS = { group: 'okt.dev', version: 'v1alpha1', plural: 'reconciliations', kind: 'Reconciliation' } as const;
// Longer than the test waits: a CR waiting for its events to be delivered moves on only when the
// delivery reaches its own controller, not at the next safety look.
const POLL_INTERVAL_MS = 120_000;
const NAME = 'twin';

const kc = e2eKubeConfig();
const kinds = [
  { graph: databaseGraph, resource: DATABASES, objects: lifecycleObjects(kc, DATABASES) },
  { graph: reconciliationGraph, resource: RECONCILIATIONS, objects: lifecycleObjects(kc, RECONCILIATIONS) },
] as const;
const [database, reconciliation] = kinds;
let namespace: string;
const sidecars: NoopSidecar[] = [];
let receiver: LifecycleEventReceiver;
let operator: RunningOperator;
/** Events by source (the CR's API path), then by id: a redelivery is the same event. */
const received = new Map<string, Map<string, LifecycleEvent>>();
/** Events into End wait here until released, so that their CRs wait for the delivery. */
let releaseEnd: () => void = () => {};
const endReleased = new Promise<void>((resolve) => (releaseEnd = resolve));

beforeAll(async () => {
  await Promise.all([installDatabaseCrd(kc), applyGraphCrd(kc, reconciliationGraph, RECONCILIATIONS)]);
  namespace = await createNamespace(kc, 'okt-several-graphs');
  // A sidecar per graph: the databases use the operator's, the reconciliations name theirs (allowed).
  for (const { graph } of kinds) sidecars.push(await startNoopSidecarFor({ graph }));
  receiver = await createLifecycleEventReceiver({
    onEvent: async (event) => {
      if (event.data?.to === 'End') await endReleased;
      const bySource = received.get(event.source) ?? new Map<string, LifecycleEvent>();
      received.set(event.source, bySource.set(event.id, event));
    },
  });
  operator = await startOperator({
    kubeConfig: kc,
    kinds: kinds.map(({ graph, resource }) => ({ graph, resource })),
    namespace,
    sidecar: { url: sidecars[0]!.url, token: sidecars[0]!.token, allow: [sidecars[1]!.url] },
    events: { sink: receiver.url },
    pollIntervalMs: POLL_INTERVAL_MS,
    logger: createLogger({ level: (process.env.OKT_TEST_LOG ?? 'silent') as 'silent' }),
  });
});

afterAll(async () => {
  releaseEnd();
  await operator?.stop();
  await receiver?.close();
  await Promise.all(sidecars.map((sidecar) => sidecar.close()));
});

const ready = (state: string) => (o: LifecycleObject) => o.status?.state === state && conditionOf(o, 'Ready')?.status === 'True';

describe('one operator, two graphs', () => {
  test('a CR of each kind, of one namespace/name, walks its own graph to its desired node', async () => {
    await database.objects.create(namespace, NAME, { desiredState: 'Running' });
    await reconciliation.objects.create(namespace, NAME, { desiredState: 'SuccessManager', sidecar: { url: sidecars[1]!.url } });
    const db = await waitForObject(database.objects, namespace, NAME, 'Ready at Running', ready('Running'));
    const rec = await waitForObject(reconciliation.objects, namespace, NAME, 'Ready at SuccessManager', ready('SuccessManager'));
    expect(db.status?.path).toEqual(['Start', 'Running']);
    expect(rec.status?.path).toEqual(['CRChecker', 'ObjectsGetter', 'Mutator', 'Updater', 'SuccessManager']);
    // Each kind's controller holds its own CR under the same key.
    const key = `${namespace}/${NAME}`;
    expect(operator.lifecycles.map((lifecycle) => lifecycle.informer.store.get(key)?.metadata.uid)).toEqual([db.metadata.uid, rec.metadata.uid]);
    expect(operator.lifecycle).toBe(operator.lifecycles[0]);
  });

  test('each CR\'s events reach the sink gapless, and their delivery wakes the CR\'s own controller', async () => {
    for (const { objects } of kinds) await objects.patchSpec(namespace, NAME, { desiredState: 'End' });
    // At End, each CR is deleted once its last events are delivered: they are held until both wait.
    for (const { objects } of kinds) await waitForObject(objects, namespace, NAME, 'at End', (o) => o.status?.state === 'End');
    releaseEnd();
    for (const { objects } of kinds) expect(await waitForObjectGone(objects, namespace, NAME, 15_000)).toBe(true);

    expect([...received.keys()].sort()).toEqual(kinds.map(({ resource }) => resourcePath(resource, namespace, NAME)).sort());
    for (const { graph, resource } of kinds) {
      const events = [...received.get(resourcePath(resource, namespace, NAME))!.values()];
      const sequences = events.map((event) => Number(event.sequence)).sort((a, b) => a - b);
      expect(sequences).toEqual(sequences.map((_, i) => i + 1));
      expect(new Set(events.map((event) => event.data?.graph))).toEqual(new Set([graph.name]));
      const last = events.find((event) => Number(event.sequence) === sequences.length)!;
      expect(last.type).toBe('dev.okt.lifecycle.converged.v1');
      expect(last.data?.to).toBe('End');
    }
  });

  test('okt run --kind-graph serves both kinds in one process, under one Lease', async () => {
    const own = await createNamespace(kc, 'okt-several-graphs-run');
    const graphFile = (name: string) => fileURLToPath(new URL(`../../graphs/${name}.ts`, import.meta.url));
    const child = spawnOperator({
      namespace: own,
      sidecarUrl: sidecars[0]!.url,
      token: sidecars[0]!.token,
      kindGraphs: [`Database=${graphFile('database')}`, `Reconciliation=${graphFile('reconciliation')}`],
      extra: ['--sidecar-url-allow', sidecars[1]!.url, '--leader-elect', '--leader-election-namespace', own, '--leader-election-id', 'okt-two-kinds'],
    });
    try {
      await database.objects.create(own, NAME, { desiredState: 'Running', onLeaf: 'Keep' });
      await reconciliation.objects.create(own, NAME, { desiredState: 'SuccessManager', onLeaf: 'Keep', sidecar: { url: sidecars[1]!.url } });
      await waitForObject(database.objects, own, NAME, 'Ready at Running', ready('Running'));
      await waitForObject(reconciliation.objects, own, NAME, 'Ready at SuccessManager', ready('SuccessManager'));
      const leases = await kc.makeApiClient(CoordinationV1Api).listNamespacedLease({ namespace: own });
      expect(leases.items.map((lease) => lease.metadata?.name)).toEqual(['okt-two-kinds']);
      // Stopped as a Deployment stops it: every kind's workers drain, the Lease is released, exit 0.
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      await killHard(child);
    }
  });
});
