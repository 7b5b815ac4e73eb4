// The status-format tests' setting, as a user makes it: `okt crd --status-format F` under a group of
// its own applied with kubectl, `okt run --status-format F` for it, and a CR walked with kubectl.
import { expect } from 'vitest';
import type { StatusFormat } from '../../../src/kube/status-format.ts';
import { okt } from '../../fixtures/okt-process.ts';
import { e2eKubeconfigPath, kubectl, kubectlWait } from './index.ts';
import { spawnOperator } from './operator-process.ts';

/** The database graph's CRD in `format` under `group` (applied with kubectl, Established), and an operator process of that format for it. */
export async function installFormat(group: string, format: StatusFormat, operator: { namespace: string; sidecarUrl: string; token: string }): Promise<ReturnType<typeof spawnOperator>> {
  const crd = await okt(['crd', 'graphs/database.ts', '--group', group, '--version', 'v1', '--kind', 'Database', '--status-format', format]);
  expect(crd.code, crd.stderr).toBe(0);
  await kubectl(['apply', '-f', '-'], crd.stdout);
  await kubectl(['wait', '--for=condition=Established', `crd/databases.${group}`, '--timeout=30s']);
  return spawnOperator({ ...operator, resource: { group, version: 'v1', kind: 'Database' }, statusFormat: format });
}

/** Start > Running > Servicing > Running with kubectl, waiting for Ready at each; the CR pg of `group` at rest, as `kubectl get -o json` prints it. */
export async function walkWithKubectl(group: string, namespace: string): Promise<string> {
  const resource = `databases.${group}`;
  await kubectl(['create', '-n', namespace, '-f', '-'], JSON.stringify({ apiVersion: `${group}/v1`, kind: 'Database', metadata: { name: 'pg' }, spec: { desiredState: 'Running' } }));
  await kubectlWait(`${resource}/pg`, 'Ready', namespace);
  for (const desired of ['Servicing', 'Running']) {
    await kubectl(['patch', '-n', namespace, `${resource}/pg`, '--type', 'merge', '-p', JSON.stringify({ spec: { desiredState: desired } })]);
    await expect.poll(async () => JSON.parse(await kubectl(['get', '-n', namespace, `${resource}/pg`, '-o', 'json'])).status?.state, { timeout: 30_000 }).toBe(desired);
    await kubectlWait(`${resource}/pg`, 'Ready', namespace);
  }
  await kubectlWait(`${resource}/pg`, 'Running', namespace);
  return await kubectl(['get', '-n', namespace, `${resource}/pg`, '-o', 'json']);
}

/** What a person reads of the CR pg walkWithKubectl walked: the printer columns, and okt status (okt's reader rebuilds its lean status). */
export async function expectReadAsWalked(group: string, namespace: string): Promise<void> {
  const resource = `databases.${group}/pg`;
  const wide = await kubectl(['get', '-n', namespace, resource, '-o', 'wide', '--no-headers']);
  expect(wide.trim().split(/\s+/).slice(0, 5)).toEqual(['pg', 'Running', 'Running', 'True', '>Start>(Running<<>>Servicing)x1>Running']);
  const shown = await okt(['status', resource, '-n', namespace], { env: { KUBECONFIG: e2eKubeconfigPath() } });
  expect(shown.code, shown.stderr).toBe(0);
  expect(shown.stdout).toMatch(/ {2}Ready +True +DesiredStateReached/);
  expect(shown.stdout).toContain('Running reached; its action succeeded');
  expect(shown.stdout).toContain('entered from Servicing at transition 3 on Running');
}
