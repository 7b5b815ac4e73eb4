import { CustomObjectsApi } from '@kubernetes/client-node';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseGraph } from '../../../graphs/database.ts';
import { createNamespace, e2eKubeConfig, e2eKubeconfigPath, mergePatch, applyGraphCrd } from '../helpers/index.ts';
import { okt } from '../../fixtures/okt-process.ts';

// `okt status` against the real control plane, on a CR whose status is written by hand (no operator).

// A group of its own, so that no other test's CRD of the same kind interferes.
const names = { group: 'status.e2e.okt.dev', version: 'v1alpha1', kind: 'Database', shortNames: ['sdb'] };
const plural = 'databases';
const kc = e2eKubeConfig();
const api = kc.makeApiClient(CustomObjectsApi);
const env = () => ({ KUBECONFIG: e2eKubeconfigPath() });
const dir = mkdtempSync(path.join(tmpdir(), 'okt-e2e-status-'));
let namespace = '';

const iso = (secondsAgo: number) => new Date(Date.now() - secondsAgo * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

beforeAll(async () => {
  await applyGraphCrd(kc, databaseGraph, names);
  namespace = await createNamespace(kc, 'okt-e2e-status');
  await api.createNamespacedCustomObject({
    group: names.group, version: names.version, namespace, plural,
    body: { apiVersion: `${names.group}/${names.version}`, kind: 'Database', metadata: { name: 'pg' }, spec: { desiredState: 'Stopping' } },
  });
  const status = {
    state: 'Running', observedGeneration: 1, transition: 3, sequence: 6,
    path: ['Start', 'Running', 'Servicing', 'Running'], pathSummary: '>Start>(Running<<>>Servicing)x1>Running',
    lastTransition: { from: 'Servicing', to: 'Running', events: ['Running'], time: iso(90), generation: 1 },
    operation: { id: 'uid-3', node: 'Running', phase: 'Running', startedAt: iso(80), message: 'starting postgres' },
    conditions: [
      { type: 'Start', status: 'False', reason: 'Left', message: 'left for Running', lastTransitionTime: iso(500), observedGeneration: 1 },
      { type: 'Running', status: 'True', reason: 'Entered', message: 'entered from Servicing', lastTransitionTime: iso(90), observedGeneration: 1 },
      { type: 'Ready', status: 'False', reason: 'Progressing', message: 'on the way to Stopping', lastTransitionTime: iso(90), observedGeneration: 1 },
    ],
  };
  await api.patchNamespacedCustomObjectStatus({ group: names.group, version: names.version, namespace, plural, name: 'pg', body: { status } }, mergePatch);
  await api.createNamespacedCustomObject({
    group: names.group, version: names.version, namespace, plural,
    body: { apiVersion: `${names.group}/${names.version}`, kind: 'Database', metadata: { name: 'fresh' }, spec: { desiredState: 'Running' } },
  });
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('okt status', () => {
  it('draws a CR found by short name, its graph from the CRD annotation', async () => {
    const shown = await okt(['status', 'sdb/pg', '--namespace', namespace], { env: env() });
    expect(shown.stderr).toBe('');
    expect(shown.code).toBe(0);
    const lines = shown.stdout.split('\n');
    expect(lines[0]).toBe(`Database ${namespace}/pg`);
    expect(shown.stdout).toMatch(/ desired +Stopping \(1 move: >Stopping\)\n/);
    expect(shown.stdout).toMatch(/ path +>Start>\(Running<<>>Servicing\)x1>Running\n/);
    expect(shown.stdout).toMatch(/ operation +Running, action of Running, started \d+s ago \(id uid-3\) — starting postgres\n/);
    expect(lines).toContain('  └─▶ Running ● current');
    expect(lines).toContain('      └─▶ Stopping ◎ desired');
    expect(lines.some((l) => /^ {2}Ready +False +Progressing +\d+s +on the way to Stopping$/.test(l))).toBe(true);
  });

  it('finds a bare NAME among okt CRDs, and writes the HTML page', async () => {
    const html = path.join(dir, 'pg.html');
    const shown = await okt(['status', 'pg', '-n', namespace, '--html', html], { env: env() });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(`wrote ${html}`);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('class s1 current');
    expect(page).toContain('<td>Running</td><td>True</td><td>Entered</td>');
  });

  it('takes the CRD by name and the graph from a file, and shows a CR without status', async () => {
    const graphFile = path.join(dir, 'database.json');
    writeFileSync(graphFile, JSON.stringify(databaseGraph.toData()));
    const shown = await okt(['status', 'fresh', '-n', namespace, '--crd-name', `${plural}.${names.group}`, '--graph', graphFile], { env: env() });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/status +none yet: no operator has reconciled this resource/);
  });

  it('uses --kind and --group', async () => {
    const shown = await okt(['status', 'pg', '-n', namespace, '--kind', 'Database', '--group', names.group], { env: env() });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('● current');
  });

  it('exits 1 with one line when the CR does not exist', async () => {
    const shown = await okt(['status', 'sdb/nope', '-n', namespace], { env: env() });
    expect(shown.code).toBe(1);
    expect(shown.stdout).toBe('');
    expect(shown.stderr.trim().split('\n').length).toBeLessThanOrEqual(2);
    expect(shown.stderr).toContain(`"nope" in namespace "${namespace}": not found`);
  });

  it('exits 1 naming the type when no CRD has it', async () => {
    const shown = await okt(['status', 'nosuchtype/pg', '-n', namespace], { env: env() });
    expect(shown.code).toBe(1);
    expect(shown.stderr).toMatch(/^okt status: no CRD with type "nosuchtype" in the cluster\n/);
  });

  it('exits 3 when the cluster cannot be reached', async () => {
    const kubeconfig = path.join(dir, 'unreachable.yaml');
    writeFileSync(
      kubeconfig,
      [
        'apiVersion: v1', 'kind: Config', 'current-context: nowhere',
        'clusters: [{ name: nowhere, cluster: { server: "https://127.0.0.1:1" } }]',
        'contexts: [{ name: nowhere, context: { cluster: nowhere, user: nobody } }]',
        'users: [{ name: nobody, user: { token: x } }]', '',
      ].join('\n'),
    );
    const shown = await okt(['status', 'sdb/pg', '-n', namespace], { env: { KUBECONFIG: kubeconfig } });
    expect(shown.code).toBe(3);
    expect(shown.stderr).toMatch(/^okt status: cannot reach the cluster for the CRDs: /);
    expect(shown.stderr).not.toMatch(/\n\s+at /);
  });
});
