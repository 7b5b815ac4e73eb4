// The compact status format as a user sets it up: `okt crd --status-format compact` applied with
// kubectl, `okt run --status-format compact` as a process, CRs walked with kubectl beside the same walk
// under lean. What compact leaves out must be absent on the API server's object, what kubectl, `kubectl
// wait`, okt status and a person read must still be there, and an operator switched back to lean
// rewrites the CR lean on its first look.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { e2eKubeconfigPath, createNamespace, e2eKubeConfig, kubectl, kubectlWait } from './helpers/index.ts';
import { startNoopSidecar } from './helpers/lifecycle.ts';
import { expectReadAsWalked, installFormat, walkWithKubectl } from './helpers/status-formats.ts';
import { killHard, spawnOperator } from './helpers/operator-process.ts';
import { okt } from '../fixtures/okt-process.ts';

// Groups of their own, of one length, so that the two CRs differ only by their status.
const formats = { lean: 'lean.cmp.e2e.okt.dev', compact: 'cmpt.cmp.e2e.okt.dev' } as const;
type Format = keyof typeof formats;
const resourceOf = (format: Format) => `databases.${formats[format]}`;
const names = (format: Format) => ({ group: formats[format], version: 'v1', kind: 'Database' });
const env = { KUBECONFIG: e2eKubeconfigPath() };
const kc = e2eKubeConfig();
let namespace = '';
let sidecar: Awaited<ReturnType<typeof startNoopSidecar>>;
const operators: ReturnType<typeof spawnOperator>[] = [];

beforeAll(async () => {
  namespace = await createNamespace(kc, 'okt-cmpt');
  sidecar = await startNoopSidecar();
  for (const format of ['lean', 'compact'] as const) {
    operators.push(await installFormat(formats[format], format, { namespace, sidecarUrl: sidecar.url, token: sidecar.token }));
  }
});

afterAll(async () => {
  for (const operator of operators) await killHard(operator);
  await sidecar?.close();
});

test('a CR walked under the compact format: what the rest of its status says is absent on the server, kubectl, kubectl wait and okt status read it as under lean, and it is smaller', async () => {
  const annotation = await kubectl(['get', `crd/${resourceOf('compact')}`, '-o', 'jsonpath={.metadata.annotations.okt\\.dev/status-format}']);
  expect(annotation).toBe('compact');
  const [lean, compact] = await Promise.all([walkWithKubectl(formats.lean, namespace), walkWithKubectl(formats.compact, namespace)]);
  const { status } = JSON.parse(compact) as { status: Record<string, any> };
  const leanStatus = (JSON.parse(lean) as { status: Record<string, any> }).status;
  expect(status.state, operators[1]!.output()).toBe('Running');
  expect(status).not.toHaveProperty('path');
  expect(status.pathSummary).toBe(leanStatus.pathSummary);
  expect(status.pathSummary).toBe('>Start>(Running<<>>Servicing)x1>Running');
  expect(status.conditions.map((c: { type: string; status: string; reason: string }) => `${c.type}=${c.status} ${c.reason}`).sort()).toEqual(['Ready=True DesiredStateReached', 'Running=True Entered']);
  for (const c of status.conditions) {
    expect(c.observedGeneration).toBe(status.observedGeneration);
    expect(c).not.toHaveProperty('message');
  }
  // Servicing, the node before Running in the path summary.
  expect(status.lastTransition).toMatchObject({ events: ['Running'] });
  expect(status.lastTransition).not.toHaveProperty('from');
  expect(status.lastTransition).not.toHaveProperty('to');
  expect(status.lastTransition).not.toHaveProperty('generation');
  expect(status.operation).toMatchObject({ phase: 'Succeeded' });
  expect(status.operation).not.toHaveProperty('id');
  expect(status.operation).not.toHaveProperty('node');
  expect(status.emitted.events.map((e: { type: string }) => e.type)).toEqual(['ok', 'c']);
  // The path's hops, and the sequence 0 of the sidecar epoch it records.
  expect(status).not.toHaveProperty('transition');
  expect(leanStatus.transition).toBe(3);
  expect(status).not.toHaveProperty('observedSequence');
  expect(leanStatus.observedSequence).toBe(0);
  expect(status.observedEpoch).toBe(leanStatus.observedEpoch);

  // What a person reads: the printer columns, and okt status (the reader rebuilds the lean status).
  await expectReadAsWalked(formats.compact, namespace);

  // As the API server serves it whole (managedFields included, no indentation): near what etcd holds.
  const raw = async (format: Format) => (await kubectl(['get', '--raw', `/apis/${formats[format]}/v1/namespaces/${namespace}/databases/pg`])).trim().length;
  console.log(`a CR at rest after Start > Running > Servicing > Running, kubectl get -o json: lean ${lean.length} B, compact ${compact.length} B; as served (--raw): lean ${await raw('lean')} B, compact ${await raw('compact')} B; status ${JSON.stringify(leanStatus).length} -> ${JSON.stringify(status).length} B`);
  expect(compact.length).toBeLessThan(lean.length - 400);
});

test('a CR kept at the leaf it reached in one spec edit: the server keeps the marks of its events, which read back as under lean', async () => {
  const kept = async (format: Format) => {
    const resource = resourceOf(format);
    await kubectl(['create', '-n', namespace, '-f', '-'], JSON.stringify({ apiVersion: `${formats[format]}/v1`, kind: 'Database', metadata: { name: 'kept' }, spec: { desiredState: 'Running', onLeaf: 'Keep' } }));
    await kubectlWait(`${resource}/kept`, 'Ready', namespace);
    await kubectl(['patch', '-n', namespace, `${resource}/kept`, '--type', 'merge', '-p', JSON.stringify({ spec: { desiredState: 'End' } })]);
    await kubectlWait(`${resource}/kept`, 'End', namespace);
    return (JSON.parse(await kubectl(['get', '-n', namespace, `${resource}/kept`, '-o', 'json'])) as { status: Record<string, any> }).status;
  };
  const [lean, compact] = await Promise.all([kept('lean'), kept('compact')]);
  expect(lean.path).toEqual(['Start', 'Running', 'Servicing', 'End']);
  expect(lean.emitted.events.map((e: { type: string }) => e.type)).toEqual(['action.succeeded.v1', 'transition.v1', 'converged.v1']);
  // Servicing's action ended with the write that reached End: pruned marks would leave these events without their data.
  expect(compact.emitted.events, operators[1]!.output()).toEqual([{ type: 'ok', pa: 1 }, { type: 't', lt: 1 }, { type: 'c', lt: 1 }]);
  expect(lean.emitted.events[0].subject).toBe('Servicing');
  // Ready became True with the transition: its time is lastTransition's, as the End condition's.
  const ready = (status: Record<string, any>) => status.conditions.find((c: { type: string }) => c.type === 'Ready');
  expect(ready(lean).lastTransitionTime).toBe(lean.lastTransition.time);
  expect(ready(compact)).not.toHaveProperty('lastTransitionTime');
  expect(ready(compact).observedGeneration).toBe(compact.observedGeneration);
  console.log(`a CR kept at End, its status: lean ${JSON.stringify(lean).length} B, compact ${JSON.stringify(compact).length} B`);
  expect(JSON.stringify(compact).length).toBeLessThan(JSON.stringify(lean).length - 500);
  const shown = await okt(['status', `${resourceOf('compact')}/kept`, '-n', namespace], { env });
  expect(shown.code, shown.stderr).toBe(0);
  expect(shown.stdout).toContain('entered from Servicing at transition 3 on End');
});

test('an operator switched from compact to lean rewrites the CR lean on its first look, and it stays Ready', async () => {
  await killHard(operators[1]!);
  operators[1] = spawnOperator({ namespace, sidecarUrl: sidecar.url, token: sidecar.token, resource: names('compact'), extra: ['--status-format', 'lean'] });
  const read = async () => (JSON.parse(await kubectl(['get', '-n', namespace, `${resourceOf('compact')}/pg`, '-o', 'json'])) as { status: Record<string, any> }).status;
  await expect.poll(async () => (await read()).path, { timeout: 30_000 }).toEqual(['Start', 'Running', 'Servicing', 'Running']);
  const status = await read();
  expect(status.operation).toMatchObject({ id: expect.stringMatching(/-3$/), node: 'Running', phase: 'Succeeded' });
  expect(status.conditions.find((c: { type: string }) => c.type === 'Running')).toMatchObject({ message: 'entered from Servicing at transition 3 on Running', observedGeneration: 3 });
  expect(status.transition).toBe(3);
  await kubectlWait(`${resourceOf('compact')}/pg`, 'Ready', namespace);
});
