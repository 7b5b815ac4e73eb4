// The lean status format as a user sets it up: `okt crd --status-format lean` applied with kubectl, `okt
// run --status-format lean` as a process, CRs made and walked with kubectl. What lean leaves out must
// be absent on the API server's object, and what kubectl, okt status and a person read must still be there.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { e2eKubeconfigPath, createNamespace, e2eKubeConfig, kubectl, kubectlWait } from './helpers/index.ts';
import { startNoopSidecar } from './helpers/lifecycle.ts';
import { killHard, spawnOperator } from './helpers/operator-process.ts';
import { okt } from '../fixtures/okt-process.ts';

// A group of its own: the CRD says lean, and no other test's CRD of the kind is touched.
const names = { group: 'lean.e2e.okt.dev', version: 'v1', kind: 'Database' };
const resource = `databases.${names.group}`;
const env = { KUBECONFIG: e2eKubeconfigPath() };
const kc = e2eKubeConfig();
let namespace = '';
let sidecar: Awaited<ReturnType<typeof startNoopSidecar>>;
let operator: ReturnType<typeof spawnOperator>;

beforeAll(async () => {
  const crd = await okt(['crd', 'graphs/database.ts', '--group', names.group, '--version', names.version, '--kind', names.kind, '--status-format', 'lean']);
  expect(crd.code, crd.stderr).toBe(0);
  await kubectl(['apply', '-f', '-'], crd.stdout);
  await kubectl(['wait', '--for=condition=Established', `crd/${resource}`, '--timeout=30s']);
  namespace = await createNamespace(kc, 'okt-lean');
  sidecar = await startNoopSidecar();
  operator = spawnOperator({ namespace, sidecarUrl: sidecar.url, token: sidecar.token, resource: names, extra: ['--status-format', 'lean'] });
});

afterAll(async () => {
  if (operator !== undefined) await killHard(operator);
  await sidecar?.close();
});

test('a CR walked under the lean format: no False Reconciling or Stalled, no condition of the node left, a Succeeded operation without its running-time fields', async () => {
  const annotation = await kubectl(['get', `crd/${resource}`, '-o', 'jsonpath={.metadata.annotations.okt\\.dev/status-format}']);
  expect(annotation).toBe('lean');
  await kubectl(['create', '-n', namespace, '-f', '-'], JSON.stringify({ apiVersion: `${names.group}/${names.version}`, kind: names.kind, metadata: { name: 'pg' }, spec: { desiredState: 'Running' } }));
  await kubectlWait(`${resource}/pg`, 'Ready', namespace);
  for (const desired of ['Servicing', 'Running']) {
    await kubectl(['patch', '-n', namespace, `${resource}/pg`, '--type', 'merge', '-p', JSON.stringify({ spec: { desiredState: desired } })]);
    await expect.poll(async () => JSON.parse(await kubectl(['get', '-n', namespace, `${resource}/pg`, '-o', 'json'])).status?.lastTransition?.to, { timeout: 30_000 }).toBe(desired);
    await kubectlWait(`${resource}/pg`, 'Ready', namespace);
  }
  await kubectlWait(`${resource}/pg`, 'Running', namespace);
  const cr = JSON.parse(await kubectl(['get', '-n', namespace, `${resource}/pg`, '-o', 'json'])) as { status: Record<string, any> };
  const { status } = cr;
  expect(status.state, operator.output()).toBe('Running');
  expect(status.conditions.map((c: { type: string; status: string; reason: string }) => `${c.type}=${c.status} ${c.reason}`).sort()).toEqual(['Ready=True DesiredStateReached', 'Running=True Entered']);
  expect(status.lastTransition).toMatchObject({ from: 'Servicing', to: 'Running' });
  expect(status.operation).toMatchObject({ node: 'Running', phase: 'Succeeded', id: expect.stringMatching(/-3$/) });
  for (const field of ['epoch', 'startedAt', 'desiredAtStart']) expect(status.operation).not.toHaveProperty(field);
  expect(status.path).toEqual(['Start', 'Running', 'Servicing', 'Running']);

  const shown = await okt(['status', `${resource}/pg`, '-n', namespace], { env });
  expect(shown.code, shown.stderr).toBe(0);
  expect(shown.stdout).toMatch(/ {2}Ready +True +DesiredStateReached/);
});
