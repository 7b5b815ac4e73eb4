// What the API server keeps of okt's writes in a CR's managedFields: one entry, by manager `okt`
// (not "unknown"), with status tracked as one field (the CRD makes status an atomic map): before, the
// status entry listed every field of every condition and was 1.4 KB of a 4.4 KB CR at rest. okt
// replaces status (PUT) with the object it read: every other writer's entry must stay as it was.
// From Kubernetes 1.22 a server keeps a manager's /status writes in an entry of their own.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { compareVersions } from '../../src/cluster/kubernetes-version.ts';
import { LIFECYCLE_FINALIZER } from '../../src/kube/lifecycle-resource.ts';
import { e2eKubeConfig, e2eKubernetesVersion, kubectl } from './helpers/index.ts';
import { conditionOf, DATABASES, installDatabaseCrd, lifecycleObjects, startLocalOperator, waitForObject, type LocalOperator } from './helpers/lifecycle.ts';

const kc = e2eKubeConfig();
const databases = lifecycleObjects(kc, DATABASES);
let local: LocalOperator;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  local = await startLocalOperator(kc, { graph: databaseGraph, resource: DATABASES, namespacePrefix: 'okt-managed' });
});

afterAll(async () => {
  await local?.stop();
});

test("a CR at rest: okt's writes are managed by `okt`, and its status is one field of managedFields", async () => {
  await databases.create(local.namespace, 'pg', { desiredState: 'Running' });
  const db = await waitForObject(databases, local.namespace, 'pg', 'Ready', (o) => conditionOf(o, 'Ready')?.status === 'True');
  type Entry = { manager: string; subresource?: string; fieldsV1: Record<string, unknown> };
  const entries = (db.metadata as { managedFields?: Entry[] }).managedFields ?? [];
  expect(entries.filter((e) => e.manager !== 'okt').map((e) => e.manager)).toEqual(['kubernetes-client-javascript']);
  const okt = entries.filter((e) => e.manager === 'okt');
  const version = e2eKubernetesVersion();
  if (compareVersions(version, '1.22.0') >= 0) {
    // Kubernetes 1.35.4 and 1.37.2 (servers from 1.22 on, whose entries have `subresource`): okt's writes to /status
    // are an entry of their own, its finalizer another (an unsharded operator puts no shard key on).
    expect(okt.map((e) => [e.subresource ?? '', Object.keys(e.fieldsV1)])).toEqual([['', ['f:metadata']], ['status', ['f:status']]]);
    expect(okt[0]!.fieldsV1).toEqual({ 'f:metadata': { 'f:finalizers': { '.': {}, [`v:"${LIFECYCLE_FINALIZER}"`]: {} } } });
  } else {
    // Kubernetes 1.20.2: one entry per manager, status and metadata together.
    expect(okt).toHaveLength(1);
  }
  const status = okt.find((e) => 'f:status' in e.fieldsV1)!;
  expect(status.fieldsV1['f:status']).toEqual({});
  for (const entry of okt) expect(Buffer.byteLength(JSON.stringify(entry)), `an okt entry on Kubernetes ${version}`).toBeLessThan(300);
});

test("a CR made with `kubectl apply`, walked by okt: kubectl's entry still owns its spec, labels and last-applied annotation", async () => {
  const manifest = {
    apiVersion: `${DATABASES.group}/${DATABASES.version}`, kind: DATABASES.kind,
    metadata: { name: 'applied', namespace: local.namespace, labels: { team: 'storage' } },
    spec: { desiredState: 'Running' },
  };
  await kubectl(['apply', '-f', '-'], JSON.stringify(manifest));
  const kubectlEntry = async () => {
    const obj = JSON.parse(await kubectl(['get', `${DATABASES.plural}.${DATABASES.group}`, 'applied', '-n', local.namespace, '-o', 'json', '--show-managed-fields'])) as { metadata: { managedFields: { manager: string; fieldsV1: unknown }[]; annotations?: Record<string, string> } };
    return { entry: obj.metadata.managedFields.find((e) => e.manager === 'kubectl-client-side-apply'), annotations: obj.metadata.annotations };
  };
  const before = await kubectlEntry();
  expect(before.entry?.fieldsV1).toMatchObject({ 'f:metadata': { 'f:annotations': { 'f:kubectl.kubernetes.io/last-applied-configuration': {} }, 'f:labels': { 'f:team': {} } }, 'f:spec': { 'f:desiredState': {} } });
  await waitForObject(databases, local.namespace, 'applied', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
  await databases.patchSpec(local.namespace, 'applied', { desiredState: 'Servicing' });
  await waitForObject(databases, local.namespace, 'applied', 'Ready at Servicing', (o) => o.status?.state === 'Servicing' && conditionOf(o, 'Ready')?.status === 'True');
  const after = await kubectlEntry();
  // The spec edit above was not kubectl's: desiredState now belongs to its writer, the rest stays kubectl's.
  expect(after.entry?.fieldsV1).toMatchObject({ 'f:metadata': { 'f:annotations': { 'f:kubectl.kubernetes.io/last-applied-configuration': {} }, 'f:labels': { 'f:team': {} } } });
  expect(after.annotations).toEqual(before.annotations);
});
