import { CustomObjectsApi } from '@kubernetes/client-node';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { databaseGraph } from '../../../graphs/database.ts';
import type { GraphCheck } from '../../../src/cli/graph-check.ts';
import { loadGraphFile } from '../../../src/cli/graph-module.ts';
import type { Graph } from '../../../src/graph/index.ts';
import { applyCrd, createNamespace, e2eKubeConfig, e2eKubeconfigPath, mergePatch, type CrdManifest, applyGraphCrd } from '../helpers/index.ts';
import { okt } from '../../fixtures/okt-process.ts';
import { relayRevision1 } from '../../fixtures/object-revisions.ts';

// `okt graph check NEW --against-cluster` and `okt status` against the real control plane, on CRs whose
// status is written by hand as an operator of revision 1 would have (no operator runs).

// A group of its own: no other test's CRD or operator sees these CRs (the operator tests drive databases.okt.dev).
const names = { group: 'check.e2e.okt.dev', version: 'v1alpha1', kind: 'Database' };
const plural = 'databases';
const crdName = `${plural}.${names.group}`;
// Another CRD of the same graph, so that the graph alone does not say which CRD to check.
const otherNames = { ...names, group: 'check2.e2e.okt.dev' };
const kc = e2eKubeConfig();
const api = kc.makeApiClient(CustomObjectsApi);
const env = () => ({ KUBECONFIG: e2eKubeconfigPath() });
const dir = mkdtempSync(path.join(tmpdir(), 'okt-e2e-graph-check-'));
const root = path.resolve(import.meta.dirname, '../../..');
const v1 = databaseGraph.revision;
const v2File = path.join(dir, 'v2.ts');
let v2: Graph;
let namespace = '';

// Revision 2: Running renamed Serving; Servicing's CRs go to Draining, from where Serving cannot be
// reached; Stopping's CRs are refused.
writeFileSync(
  v2File,
  `import { defineGraph } from ${JSON.stringify(pathToFileURL(path.join(root, 'src/graph/index.ts')).href)};
import { databaseGraph } from ${JSON.stringify(pathToFileURL(path.join(root, 'graphs/database.ts')).href)};

export default defineGraph({
  name: 'database',
  entry: 'Start',
  previous: [databaseGraph],
  migrations: { removed: { Servicing: 'Draining', Stopping: { refuse: 'stop it on revision 1 first' } } },
  nodes: {
    Start: { children: ['Serving'] },
    Serving: { formerly: ['Running'], children: ['Draining'] },
    Draining: { children: ['End'] },
    End: {},
  },
});
`,
);

async function createDatabase(name: string, desiredState: string, status?: { state: string; revision: string; path: string[]; operation?: object }): Promise<void> {
  await api.createNamespacedCustomObject({
    group: names.group, version: names.version, namespace, plural,
    body: { apiVersion: `${names.group}/${names.version}`, kind: 'Database', metadata: { name }, spec: { desiredState } },
  });
  if (status === undefined) return;
  const { state, revision, path: entered, operation } = status;
  const written = { state, graphRevision: revision, observedGeneration: 1, transition: entered.length - 1, sequence: entered.length, path: entered, conditions: [], ...(operation ? { operation } : {}) };
  await api.patchNamespacedCustomObjectStatus({ group: names.group, version: names.version, namespace, plural, name, body: { status: written } }, mergePatch);
}

const check = (...extra: string[]) => okt(['graph', 'check', v2File, '--against-cluster', '--group', names.group, ...extra], { env: env() });

beforeAll(async () => {
  v2 = (await loadGraphFile(v2File)).graph;
  await Promise.all([names, otherNames].map((crdNames) => applyGraphCrd(kc, databaseGraph, crdNames)));
  namespace = await createNamespace(kc, 'okt-e2e-check');
  await Promise.all([
    createDatabase('renamed', 'Running', { state: 'Running', revision: v1, path: ['Start', 'Running'] }),
    createDatabase('moved', 'End', { state: 'Servicing', revision: v1, path: ['Start', 'Running', 'Servicing'] }),
    createDatabase('unreachable', 'Running', { state: 'Servicing', revision: v1, path: ['Start', 'Running', 'Servicing'] }),
    createDatabase('refused', 'End', { state: 'Stopping', revision: v1, path: ['Start', 'Running', 'Stopping'] }),
    createDatabase('waiting', 'End', {
      state: 'Servicing', revision: v1, path: ['Start', 'Running', 'Servicing'],
      operation: { id: 'uid-2', node: 'Servicing', phase: 'Running' },
    }),
  ]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('okt graph check --against-cluster', () => {
  it('says per CR what revision 2 would do, and exits 1 for the stranded one', async () => {
    const checked = await check();
    expect(checked.stderr).toBe('');
    expect(checked.code).toBe(1);
    expect(checked.stdout.split('\n')).toEqual([
      `graph "database" revision ${v2.revision} against CRD ${crdName} (revision ${v1}), in all namespaces`,
      `  ${namespace}/moved        ${v1}  Servicing -> ok: moves Servicing -> Draining by a transition`,
      `  ${namespace}/refused      ${v1}  Stopping -> stranded: status.state: node "Stopping" was removed from graph "database" and its migrations refuse to move its CRs: stop it on revision 1 first`,
      `  ${namespace}/renamed      ${v1}  Running -> ok: renamed Running -> Serving`,
      `  ${namespace}/unreachable  ${v1}  Servicing -> unreachable: moves Servicing -> Draining by a transition; Serving cannot be reached from Draining`,
      `  ${namespace}/waiting      ${v1}  Servicing -> waits: the action of Servicing still runs and node Servicing is not in revision ${v2.revision}: the CR migrates once it ends`,
      '5 resources: 2 ok, 1 stranded, 1 unreachable, 1 waits',
      `CRD ${crdName} is at revision ${v1}, and its desiredState lacks Serving, Draining: apply it from this graph:`,
      `  okt crd ${v2File} --group ${names.group} --version ${names.version} --kind Database | kubectl apply -f -`,
      '',
    ]);
  });

  it('prints the same facts as JSON', async () => {
    const checked = await check('--json', '--namespace', namespace);
    expect(checked.code).toBe(1);
    const result = JSON.parse(checked.stdout) as GraphCheck;
    expect(result).toMatchObject({
      graph: 'database',
      revision: v2.revision,
      namespace,
      crd: { name: crdName, revision: v1, missingDesiredStates: ['Serving', 'Draining'], reapply: true },
      counts: { ok: 2, stranded: 1, unreachable: 1, waits: 1, invalid: 0 },
    });
    expect(result.resources.map((r) => [r.name, r.outcome])).toEqual([
      ['moved', 'ok'], ['refused', 'stranded'], ['renamed', 'ok'], ['unreachable', 'unreachable'], ['waiting', 'waits'],
    ]);
    expect(result.resources.find((r) => r.name === 'renamed')).toEqual({
      namespace, name: 'renamed', revision: v1, state: 'Running', desired: 'Running', outcome: 'ok', detail: 'renamed Running -> Serving',
      prediction: { kind: 'migrates', state: { kind: 'renamed', node: 'Serving' }, desired: 'Serving' },
    });
    expect(result.resources.find((r) => r.name === 'unreachable')?.prediction).toEqual({
      kind: 'migrates', state: { kind: 'moved', node: 'Draining' }, desired: 'Serving', unreachable: 'Serving cannot be reached from Draining',
    });
  });

  it('finds the CRDs by the graph\'s name, and asks which one when several carry it', async () => {
    const checked = await okt(['graph', 'check', v2File, '--against-cluster'], { env: env() });
    expect(checked.code).toBe(2);
    expect(checked.stderr).toMatch(/^okt graph check: graph "database" is ambiguous: several CRDs match \(.+\)\n {2}Say which CRD with --kind\/--group or --crd-name\.\n$/);
    expect(checked.stderr).toContain(crdName);
    expect(checked.stderr).toContain(`${plural}.${otherNames.group}`);
  });

  it('exits 0 once the stranded CR is gone, and finds the CRD up to date after its printed command is applied', async () => {
    await api.deleteNamespacedCustomObject({ group: names.group, version: names.version, namespace, plural, name: 'refused' });
    const { crd } = JSON.parse((await check('--json')).stdout) as GraphCheck;
    const [command] = crd.command.split(' | ');
    const generated = await okt(command!.split(' ').slice(1));
    expect(generated.code).toBe(0);
    await applyCrd(kc, parseYaml(generated.stdout) as CrdManifest);
    const checked = await check();
    expect(checked.code).toBe(0);
    expect(checked.stdout).toContain('\n4 resources: 2 ok, 1 unreachable, 1 waits\n');
    expect(checked.stdout).toMatch(new RegExp(`\\nCRD ${crdName.replace(/\./g, '\\.')} is up to date\\n$`));
  });
});

// After the checks above, which left the CRD of revision 2 applied (it still publishes revision 1).
describe('okt status without --graph', () => {
  it('draws a CR of revision 2 on the graph its CRD publishes (no bundled graph has Serving)', async () => {
    await createDatabase('serving', 'Draining', { state: 'Serving', revision: v2.revision, path: ['Start', 'Serving'] });
    const shown = await okt(['status', 'serving', '-n', namespace], { env: env() });
    expect(shown.stderr).toBe('');
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(` graph +database \\(4 nodes\\), revision ${v2.revision}\\n`));
    expect(shown.stdout.split('\n')).toContain('  └─▶ Serving ● current');
    expect(shown.stdout).toMatch(/ desired +Draining \(1 move: >Draining\)\n/);
  });

  it('draws a CR still on revision 1 on revision 1, which the CRD of revision 2 still publishes', async () => {
    const shown = await okt(['status', `${plural}.${names.group}/renamed`, '-n', namespace], { env: env() });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(` graph +database \\(5 nodes\\), revision ${v1}\\n`));
    expect(shown.stdout.split('\n')).toContain('  └─▶ Running ● current');
  });
});

// CRs of a graph that makes objects, their status (objects included) written as an operator of revision 1 would have.
describe('okt graph check --against-cluster, for CRs with objects', () => {
  it('says per CR what its objects do where the migration puts it: kept, made, pruned, disowned', async () => {
    const relayNames = { group: 'relay.check.e2e.okt.dev', version: 'v1alpha1', kind: 'Relay' };
    const revisions = pathToFileURL(path.join(root, 'test/fixtures/object-revisions.ts')).href;
    const relayFile = path.join(dir, 'relay-v2.ts');
    writeFileSync(relayFile, `import { relayRevision2 } from ${JSON.stringify(revisions)};\nexport default relayRevision2();\n`);
    await applyGraphCrd(kc, relayRevision1, relayNames);
    const ref = { group: relayNames.group, version: relayNames.version, namespace, plural: 'relays' };
    const entry = (id: string, kind: string, name: string, more: object = {}) => ({ id, apiVersion: 'v1', kind, name, hash: 'h', ...more });
    const relays = {
      'relay-backup': { state: 'Servicing', objects: [entry('service', 'Service', 'relay-backup'), entry('work', 'ConfigMap', 'relay-backup-work')] },
      'relay-stop': { state: 'Stopping', objects: [entry('service', 'Service', 'relay-stop'), entry('stop', 'ConfigMap', 'relay-stop-stop'), entry('keys', 'Secret', 'relay-stop-keys', { deletion: 'Keep' })] },
    };
    for (const [name, { state, objects }] of Object.entries(relays)) {
      await api.createNamespacedCustomObject({ ...ref, body: { apiVersion: `${relayNames.group}/${relayNames.version}`, kind: 'Relay', metadata: { name }, spec: { desiredState: state } } });
      const status = { state, graphRevision: relayRevision1.revision, observedGeneration: 1, transition: 2, sequence: 2, path: ['Start', 'Running', state], conditions: [], objects };
      await api.patchNamespacedCustomObjectStatus({ ...ref, name, body: { status } }, mergePatch);
    }
    const checked = await okt(['graph', 'check', relayFile, '--against-cluster', '--group', relayNames.group], { env: env() });
    expect(checked.stderr).toBe('');
    expect(checked.code).toBe(0);
    expect(checked.stdout.split('\n').slice(1, 5)).toEqual([
      `  ${namespace}/relay-backup  ${relayRevision1.revision}  Servicing -> ok: renamed Servicing -> Backup`,
      '    objects: kept Service relay-backup, ConfigMap relay-backup-work (applied again only if its render changed)',
      `  ${namespace}/relay-stop    ${relayRevision1.revision}  Stopping -> ok: moves Stopping -> Draining by a transition`,
      '    objects: kept Service relay-stop (applied again only if its render changed); made ConfigMap relay-stop-drain; pruned ConfigMap relay-stop-stop; disowned (kept) Secret relay-stop-keys',
    ]);
    const result = JSON.parse((await okt(['graph', 'check', relayFile, '--against-cluster', '--group', relayNames.group, '--json'], { env: env() })).stdout) as GraphCheck;
    expect(result.resources.find((r) => r.name === 'relay-stop')?.objects).toEqual({
      kept: [relays['relay-stop'].objects[0]],
      pruned: relays['relay-stop'].objects.slice(1),
      made: [{ id: 'drain', apiVersion: 'v1', kind: 'ConfigMap', name: 'relay-stop-drain' }],
    });
  });
});
