// The packed status format as a user sets it up: `okt crd --status-format packed` applied with kubectl,
// `okt run --status-format packed` as a process, a CR walked with kubectl beside the same walk under
// compact. On the API server's object only what kubectl reads stays a field of its own, the rest is one
// string that reads back (quotes swapped, JSON) as the compact status; kubectl, `kubectl wait` and okt
// status read the CR as under compact; and an operator switched between packed and compact rewrites the
// CR in its own format on its first look.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { e2eKubeconfigPath, createNamespace, e2eKubeConfig, kubectl, kubectlWait } from './helpers/index.ts';
import { startNoopSidecar } from './helpers/lifecycle.ts';
import { expectReadAsWalked, installFormat, walkWithKubectl } from './helpers/status-formats.ts';
import { killHard, spawnOperator } from './helpers/operator-process.ts';
import { okt } from '../fixtures/okt-process.ts';

// Groups of their own, of one length, so that the two CRs differ only by their status.
const formats = { compact: 'cmpt.pkd.e2e.okt.dev', packed: 'pckd.pkd.e2e.okt.dev' } as const;
type Format = keyof typeof formats;
const FORMATS = ['compact', 'packed'] as const;
const resourceOf = (format: Format) => `databases.${formats[format]}`;
const names = (format: Format) => ({ group: formats[format], version: 'v1', kind: 'Database' });
const env = { KUBECONFIG: e2eKubeconfigPath() };
const kc = e2eKubeConfig();
let namespace = '';
let sidecar: Awaited<ReturnType<typeof startNoopSidecar>>;
/** The operator of each group, by the group's format. */
const operators = {} as Record<Format, ReturnType<typeof spawnOperator>>;
type Status = Record<string, any>;

beforeAll(async () => {
  namespace = await createNamespace(kc, 'okt-pckd');
  sidecar = await startNoopSidecar();
  for (const format of FORMATS) {
    operators[format] = await installFormat(formats[format], format, { namespace, sidecarUrl: sidecar.url, token: sidecar.token });
  }
});

afterAll(async () => {
  for (const operator of Object.values(operators)) await killHard(operator);
  await sidecar?.close();
});

/** The status of the CR pg of `format`'s group as the API server holds it. */
async function storedStatus(format: Format): Promise<Status> {
  return (JSON.parse(await kubectl(['get', '-n', namespace, `${resourceOf(format)}/pg`, '-o', 'json'])) as { status: Status }).status;
}

/** A packed status read as docs/operator.md says, without okt: the string with `"` and `'` swapped is JSON, its fields beside the others. */
function readPacked(status: Status): Status {
  const { packed, ...fields } = status;
  const swapped = (packed as string).replace(/["']/g, (quote) => (quote === '"' ? "'" : '"'));
  return { ...(JSON.parse(swapped) as Status), ...fields };
}

/** The JSON fields of `value`, nested ones included: what the API server's cost of a write grows with. */
function fieldCount(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((sum: number, item) => sum + fieldCount(item), 0);
  if (typeof value !== 'object' || value === null) return 0;
  return Object.values(value).reduce((sum: number, field) => sum + 1 + fieldCount(field), 0);
}

/**
 * `status` without what two CRs walked side by side differ in by timing alone: the times of their last
 * transition (lastTransition.time, a condition's lastTransitionTime where compact keeps one), of their
 * action's end (operation.finishedAt) and of their last write's events (emitted.time, where compact
 * keeps it). Both talk to one sidecar (one observedEpoch) and take the same steps, so every other field
 * must be equal.
 */
function untimed(status: Status): Status {
  const { lastTransition, conditions, operation, emitted, ...rest } = structuredClone(status);
  delete lastTransition.time;
  for (const condition of conditions) delete condition.lastTransitionTime;
  delete operation.finishedAt;
  delete emitted.time;
  return { ...rest, lastTransition, conditions, operation, emitted };
}

test('the CRD of the packed format says so in its annotation and has the string field packed in its status schema', async () => {
  const annotation = await kubectl(['get', `crd/${resourceOf('packed')}`, '-o', 'jsonpath={.metadata.annotations.okt\\.dev/status-format}']);
  expect(annotation).toBe('packed');
  const statusSchema = async (format: Format) => JSON.parse(await kubectl(['get', `crd/${resourceOf(format)}`, '-o', 'json'])).spec.versions[0].schema.openAPIV3Schema.properties.status;
  expect((await statusSchema('packed')).properties.packed).toMatchObject({ type: 'string' });
  expect((await statusSchema('compact')).properties).not.toHaveProperty('packed');
});

test('a CR walked under the packed format: only what kubectl reads is a field of its own, kubectl, kubectl wait and okt status read it as under compact, and the string reads back as the compact status', async () => {
  const [compact, packed] = await Promise.all([walkWithKubectl(formats.compact, namespace), walkWithKubectl(formats.packed, namespace)]);
  const { status } = JSON.parse(packed) as { status: Status };
  const compactStatus = (JSON.parse(compact) as { status: Status }).status;
  expect(status.state, operators.packed.output()).toBe('Running');
  expect(Object.keys(status).sort()).toEqual(['conditions', 'graphRevision', 'observedGeneration', 'packed', 'pathSummary', 'state']);
  expect(typeof status.packed).toBe('string');
  expect(status.pathSummary).toBe('>Start>(Running<<>>Servicing)x1>Running');
  expect(status.conditions.map((c: { type: string; status: string; reason: string }) => `${c.type}=${c.status} ${c.reason}`).sort()).toEqual(['Ready=True DesiredStateReached', 'Running=True Entered']);
  for (const c of status.conditions) expect(c.observedGeneration).toBe(status.observedGeneration);

  // What a person reads: the printer columns, and okt status (the reader unpacks, then expands).
  await expectReadAsWalked(formats.packed, namespace);

  // The string read back is the compact status of the same walk.
  const unpacked = readPacked(status);
  expect(unpacked.emitted.events.map((e: { type: string }) => e.type)).toEqual(['ok', 'c']);
  expect(unpacked.lastTransition).toEqual({ events: ['Running'], time: expect.any(String) });
  expect(unpacked.observedEpoch).toBe(compactStatus.observedEpoch);
  expect(untimed(unpacked)).toEqual(untimed(compactStatus));

  const raw = async (format: Format) => (await kubectl(['get', '--raw', `/apis/${formats[format]}/v1/namespaces/${namespace}/databases/pg`])).trim().length;
  console.log(`a CR at rest after Start > Running > Servicing > Running, kubectl get -o json: compact ${compact.length} B, packed ${packed.length} B; as served (--raw): compact ${await raw('compact')} B, packed ${await raw('packed')} B; status ${JSON.stringify(compactStatus).length} -> ${JSON.stringify(status).length} B, ${fieldCount(compactStatus)} -> ${fieldCount(status)} fields`);
  expect(fieldCount(status)).toBeLessThan(fieldCount(compactStatus));
});

test('an operator switched from packed to compact rewrites the CR compact on its first look, and it stays Ready; one switched from compact to packed rewrites it packed', async () => {
  const before = { compact: await storedStatus('compact'), packed: readPacked(await storedStatus('packed')) };
  await Promise.all(FORMATS.map((format) => killHard(operators[format])));
  const switched = { compact: 'packed', packed: 'compact' } as const;
  for (const format of FORMATS) {
    operators[format] = spawnOperator({ namespace, sidecarUrl: sidecar.url, token: sidecar.token, resource: names(format), extra: ['--status-format', switched[format]] });
  }

  // The rewrite is the same status in the other encoding: every field as it was but `emitted`, the
  // events of the write that holds it (docs/operator.md), and this write emits none.
  const { emitted: _packedEvents, ...packedBefore } = before.packed;
  const { emitted: _compactEvents, ...compactBefore } = before.compact;

  await expect.poll(async () => Object.keys(await storedStatus('packed')), { timeout: 30_000 }).not.toContain('packed');
  const nowCompact = await storedStatus('packed');
  expect(nowCompact, operators.packed.output()).toMatchObject({ state: 'Running', lastTransition: { events: ['Running'] }, operation: { phase: 'Succeeded' } });
  expect(nowCompact).toEqual(packedBefore);
  await kubectlWait(`${resourceOf('packed')}/pg`, 'Ready', namespace);

  await expect.poll(async () => Object.keys(await storedStatus('compact')), { timeout: 30_000 }).toContain('packed');
  const nowPacked = await storedStatus('compact');
  expect(Object.keys(nowPacked).sort(), operators.compact.output()).toEqual(['conditions', 'graphRevision', 'observedGeneration', 'packed', 'pathSummary', 'state']);
  expect(readPacked(nowPacked)).toEqual(compactBefore);
  await kubectlWait(`${resourceOf('compact')}/pg`, 'Ready', namespace);
  const shown = await okt(['status', `${resourceOf('compact')}/pg`, '-n', namespace], { env });
  expect(shown.code, shown.stderr).toBe(0);
  expect(shown.stdout).toContain('entered from Servicing at transition 3 on Running');
});
