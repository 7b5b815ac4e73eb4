// `okt manifests --finalizer-policy` as docs/operator.md ("The finalizer at creation") says: its
// MutatingAdmissionPolicy, applied with kubectl, puts okt's finalizer on each CR the API server creates in
// the watched namespace (not elsewhere), with no managedFields entry of its own; `okt run` walks and
// deletes such CRs as any; one whose sidecar it refuses loses the finalizer, so its deletion never waits.
// Kubernetes 1.35 does not serve the policy's API: kubectl refuses it, as the docs say.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { FINALIZER_POLICY_MIN_KUBERNETES, generateFinalizerPolicy } from '../../src/kube/finalizer-policy.ts';
import { LIFECYCLE_FINALIZER } from '../../src/kube/lifecycle-resource.ts';
import { okt } from '../fixtures/okt-process.ts';
import { finalizerPolicyServed, removeFinalizerPolicy } from './helpers/finalizer-policy.ts';
import { createNamespace, e2eKubeConfig, e2eKubeconfigPath, kubectl, waitFor } from './helpers/index.ts';
import { conditionOf, DATABASES, databaseCrdIn, installDatabaseCrd, startNoopSidecar, waitForDatabase, waitForGone, type DatabaseObject } from './helpers/lifecycle.ts';
import { spawnOperator, stopGracefully } from './helpers/operator-process.ts';

const kc = e2eKubeConfig();
const served = finalizerPolicyServed();
const resource = `${DATABASES.plural}.${DATABASES.group}`;
let namespace = '';
let elsewhere = '';
let name = '';

/** The policy and its binding, as `okt manifests --finalizer-policy` prints them for an operator watching `namespace`. */
async function policyDocuments(): Promise<string> {
  // From an empty directory, as a user outside this repository runs it.
  const printed = await okt(['manifests', fileURLToPath(new URL('../../graphs/database.ts', import.meta.url)), '--group', DATABASES.group, '--version', DATABASES.version, '--kind', DATABASES.kind,
    '--name', name, '--no-create-namespace', '--watch-namespace', namespace, '--finalizer-policy'], { env: { KUBECONFIG: e2eKubeconfigPath() }, cwd: mkdtempSync(path.join(tmpdir(), 'okt-e2e-fpolicy-')) });
  expect(printed.code, printed.stderr).toBe(0);
  const policy = parseAllDocuments(printed.stdout).map((d) => d.toJS() as { kind: string } | null)
    .filter((d) => d?.kind === 'MutatingAdmissionPolicy' || d?.kind === 'MutatingAdmissionPolicyBinding');
  expect(policy.map((d) => d!.kind)).toEqual(['MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding']);
  return policy.map((d) => JSON.stringify(d)).join('\n');
}

/** A CR as kubectl creates it (`--dry-run=server`: through admission, nothing stored). */
async function createdBy(apiServer: 'dry-run' | 'stored', ns: string, crName: string, spec: Record<string, unknown>, finalizers?: string[]): Promise<DatabaseObject & { metadata: { managedFields?: { manager: string; subresource?: string; fieldsV1: Record<string, unknown> }[] } }> {
  const manifest = { apiVersion: `${DATABASES.group}/${DATABASES.version}`, kind: DATABASES.kind, metadata: { name: crName, ...(finalizers ? { finalizers } : {}) }, spec };
  return JSON.parse(await kubectl(['create', '-n', ns, '-o', 'json', '--show-managed-fields', ...(apiServer === 'dry-run' ? ['--dry-run=server'] : []), '-f', '-'], JSON.stringify(manifest)));
}

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-fpolicy');
  elsewhere = await createNamespace(kc, 'okt-fpolicy-other');
  name = `okt-e2e-${namespace}`;
});

// Each release has the tests of what it does (none is skipped on the other).
if (served) describe(`okt manifests --finalizer-policy, on Kubernetes ${FINALIZER_POLICY_MIN_KUBERNETES} and later`, () => {
  let sidecar: Awaited<ReturnType<typeof startNoopSidecar>>;
  let operator: ReturnType<typeof spawnOperator>;

  beforeAll(async () => {
    expect(await kubectl(['apply', '-f', '-'], await policyDocuments())).toContain(`mutatingadmissionpolicy.admissionregistration.k8s.io/${name}-finalizer created`);
    // The API server takes a new policy up from its informer: a moment after it is stored.
    await waitFor('the policy in force', async () => ((await createdBy('dry-run', namespace, 'probe', { desiredState: 'Running' })).metadata.finalizers ?? []).includes(LIFECYCLE_FINALIZER) || undefined);
    sidecar = await startNoopSidecar();
    operator = spawnOperator({ namespace, sidecarUrl: sidecar.url, token: sidecar.token });
  });

  afterAll(async () => {
    if (operator !== undefined) await stopGracefully(operator, 5_000);
    await sidecar?.close();
    await removeFinalizerPolicy(name);
  });

  test('a CR is created with the finalizer and no managedFields entry for it; okt walks it, and its deletion drives it down and releases it', async () => {
    const created = await createdBy('stored', namespace, 'pg', { desiredState: 'Running' });
    expect(created.metadata.finalizers).toEqual([LIFECYCLE_FINALIZER]);
    expect(created.metadata.managedFields?.map((e) => e.manager)).toEqual(['kubectl-create']);
    expect(Object.keys(created.metadata.managedFields![0]!.fieldsV1)).toEqual(['f:spec']);
    const ready = await waitForDatabase(kc, namespace, 'pg', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
    expect(ready.metadata.finalizers).toEqual([LIFECYCLE_FINALIZER]);
    const stored = JSON.parse(await kubectl(['get', resource, 'pg', '-n', namespace, '-o', 'json', '--show-managed-fields'])) as typeof created;
    // okt wrote its status and nothing of the metadata: one entry of its own, the status's.
    expect(stored.metadata.managedFields?.map((e) => [e.manager, e.subresource ?? ''])).toEqual([['kubectl-create', ''], ['okt', 'status']]);
    await kubectl(['delete', resource, 'pg', '-n', namespace, '--wait=false']);
    expect(await waitForGone(kc, namespace, 'pg')).toBe(true);
    // Deletion drove it down its deletion path (Running -> Stopping -> End) before the finalizer went.
    expect(sidecar.sidecar.operations.get(`${created.metadata.uid}-2`)?.node).toBe('Stopping');
  });

  test('a CR\'s own finalizers stay beside okt\'s; a CR created in a namespace the operator does not watch gets none', async () => {
    const own = await createdBy('dry-run', namespace, 'own', { desiredState: 'Running' }, ['example.com/keep']);
    expect(own.metadata.finalizers).toEqual(['example.com/keep', LIFECYCLE_FINALIZER]);
    const already = await createdBy('dry-run', namespace, 'already', { desiredState: 'Running' }, [LIFECYCLE_FINALIZER]);
    expect(already.metadata.finalizers).toEqual([LIFECYCLE_FINALIZER]);
    const outside = await createdBy('dry-run', elsewhere, 'outside', { desiredState: 'Running' });
    expect(outside.metadata.finalizers).toBeUndefined();
  });

  test('a CRD created after the policy: a creation is refused only as docs/operator.md says (no such kind yet, or 503 naming the kind until the policy\'s plugin has read its schema), then a CR is created with the finalizer', async () => {
    const fresh = { ...DATABASES, group: `${namespace}.fpolicy.e2e.okt.dev` };
    const crdName = `${fresh.plural}.${fresh.group}`;
    await kubectl(['apply', '-f', '-'], generateFinalizerPolicy([fresh], { name: `${name}-fresh`, watchNamespace: namespace }).map((d) => JSON.stringify(d)).join('\n'));
    try {
      // Not applyCrd, which waits until the kind is served: the first creations go out at once.
      await kubectl(['create', '-f', '-'], JSON.stringify(databaseCrdIn(fresh)));
      const manifest = JSON.stringify({ apiVersion: `${fresh.group}/${fresh.version}`, kind: fresh.kind, metadata: { name: 'first' }, spec: { desiredState: 'Running' } });
      const refusals: string[] = [];
      const created = await waitFor('a CR of the new CRD created', async () => {
        try {
          return JSON.parse(await kubectl(['create', '-n', namespace, '--dry-run=server', '-o', 'json', '-f', '-'], manifest)) as DatabaseObject;
        } catch (error) {
          refusals.push((error as Error).message);
          return undefined;
        }
      }, 30_000, 100);
      expect(created.metadata.finalizers).toEqual([LIFECYCLE_FINALIZER]);
      // Before the CRD is served, kubectl finds no such kind; then, while the plugin has not read its schema, the 503.
      for (const refusal of refusals) {
        expect(refusal).toMatch(new RegExp(`no matches for kind "Database" in version "${fresh.group.replaceAll('.', '\\.')}/v1alpha1"|Resource kind ${fresh.group.replaceAll('.', '\\.')}/v1alpha1, Kind=Database not found\\. There can be a delay between when CustomResourceDefinitions are created and when they are available\\.`));
      }
    } finally {
      await kubectl(['delete', 'crd', crdName, '--ignore-not-found', '--wait=false']);
      await removeFinalizerPolicy(`${name}-fresh`);
    }
  });

  test('a CR whose sidecar okt refuses loses the finalizer the policy put on: nothing ran for it, so its deletion does not wait', async () => {
    const created = await createdBy('stored', namespace, 'refused', { desiredState: 'Running', sidecar: { url: 'http://elsewhere.example:8479' } });
    expect(created.metadata.finalizers).toEqual([LIFECYCLE_FINALIZER]);
    const refused = await waitForDatabase(kc, namespace, 'refused', 'SidecarNotAllowed, the finalizer taken off', (o) => conditionOf(o, 'Stalled')?.reason === 'SidecarNotAllowed' && (o.metadata.finalizers ?? []).length === 0);
    expect(refused.status?.state).toBe('Start');
    expect(operator.output()).toContain('finalizer removed');
    await kubectl(['delete', resource, 'refused', '-n', namespace, '--timeout=10s']);
    expect(await waitForGone(kc, namespace, 'refused')).toBe(true);
  });
});

else describe(`okt manifests --finalizer-policy, before Kubernetes ${FINALIZER_POLICY_MIN_KUBERNETES}`, () => {
  test('kubectl refuses the policy, whose API this release does not serve, as docs/operator.md says', async () => {
    const applied = await kubectl(['apply', '--dry-run=server', '-f', '-'], await policyDocuments()).then(() => '', (error: Error) => error.message);
    expect(applied).toContain('no matches for kind "MutatingAdmissionPolicy" in version "admissionregistration.k8s.io/v1"');
  });
});
