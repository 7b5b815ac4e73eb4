import { loadYaml, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { checkGraph, formatGraphCheck, graphCheckExitCode, type GraphCheck } from '../../src/cli/graph-check.ts';
import { NO_COLORS } from '../../src/cli/output.ts';
import type { LifecycleResource } from '../../src/cli/status-view.ts';
import { defineGraph, type Graph } from '../../src/graph/index.ts';
import { generateCrd, type CrdNames } from '../../src/kube/crd.ts';
import { relayRevision1, relayRevision2 } from '../fixtures/object-revisions.ts';

// The cases the end-to-end test (test/e2e/cli/graph-check.test.ts) leaves out, on what a cluster would answer.

const v1 = databaseGraph;
const names: CrdNames = { group: 'okt.dev', version: 'v1alpha1', kind: 'Database' };

/** Revision 2 of the database graph: Running renamed Serving, Servicing's CRs go to Draining, Stopping's are refused. */
function revision2(policy: 'Automatic' | 'Manual'): Graph {
  return defineGraph({
    name: 'database',
    entry: 'Start',
    previous: [databaseGraph],
    migrations: { policy, removed: { Servicing: 'Draining', Stopping: { refuse: 'stop it on revision 1 first' } } },
    nodes: {
      Start: { children: ['Serving'] },
      Serving: { formerly: ['Running'], children: ['Draining'] },
      Draining: { children: ['End'] },
      End: {},
    },
  });
}

/** A CRD as the API server returns it (client-node's typed model). */
function crdOf(graph: Graph, crdNames: CrdNames = names): V1CustomResourceDefinition {
  return loadYaml<V1CustomResourceDefinition>(JSON.stringify(generateCrd(graph, crdNames)));
}

function database(name: string, desiredState: string, status?: object, annotations?: Record<string, string>): LifecycleResource {
  return { kind: 'Database', metadata: { name, namespace: 'demo', ...(annotations ? { annotations } : {}) }, spec: { desiredState }, ...(status ? { status } : {}) };
}

/** A status an operator on revision 1 wrote. */
function onV1(state: string, extra: object = {}): object {
  return { state, graphRevision: v1.revision, observedGeneration: 1, transition: 1, sequence: 1, path: ['Start', state], conditions: [], ...extra };
}

function check(graph: Graph, resources: LifecycleResource[], crd = crdOf(v1), file = 'v2.ts'): GraphCheck {
  return checkGraph({ graph, file, exportFlag: undefined, crd, resources, namespace: undefined });
}

const verdicts = (result: GraphCheck) => Object.fromEntries(result.resources.map((r) => [r.name, `${r.outcome}: ${r.detail}`]));

describe('checkGraph', () => {
  it('under the Manual policy: a CR stays on its revision until annotated, and is stranded there if its desired state is not of that revision', () => {
    const v2 = revision2('Manual');
    const result = check(v2, [
      database('stays', 'Running', onV1('Running')),
      database('asked', 'Running', onV1('Running'), { 'okt.dev/migrate': 'true' }),
      database('ahead', 'Draining', onV1('Running')),
    ]);
    expect(verdicts(result)).toEqual({
      stays: `ok: stays on revision ${v1.revision} (Manual)`,
      asked: 'ok: renamed Running -> Serving',
      ahead: `stranded: stays on revision ${v1.revision} (Manual), where spec.desiredState: node "Draining" is not in graph "database", and no node lists it in formerly nor does migrations.removed map it`,
    });
    expect(result.resources.find((r) => r.name === 'stays')?.prediction).toEqual({ kind: 'stays', revision: v1.revision });
    expect(graphCheckExitCode(result)).toBe(1);
  });

  it('a running action of a renamed node goes on; a CR without status starts at the entry; what cannot be read is invalid, not stranded', () => {
    const v2 = revision2('Automatic');
    const result = check(v2, [
      database('running', 'Running', onV1('Running', { operation: { id: 'uid-1', node: 'Running', phase: 'Running' } })),
      database('fresh', 'Draining'),
      database('lost', 'End', { state: 'Running', transition: 'three', conditions: [] }),
    ]);
    expect(verdicts(result)).toEqual({
      running: 'ok: renamed Running -> Serving; its running action goes on as the action of Serving',
      fresh: 'ok: no status yet: starts at Start',
      lost: expect.stringMatching(/^invalid: status\.\w+: /),
    });
    expect(result.counts).toEqual({ ok: 2, stranded: 0, unreachable: 0, waits: 0, invalid: 1 });
    expect(graphCheckExitCode(result)).toBe(0);
  });

  it('a CRD of the same revision is up to date; another one is applied again with its own names', () => {
    const v2 = revision2('Automatic');
    expect(check(v2, [], crdOf(v2)).crd).toMatchObject({ revision: v2.revision, missingDesiredStates: [], reapply: false });
    const own = crdOf(v1, { ...names, plural: 'dbs', shortNames: ['odb', 'db'] });
    expect(check(v2, [], own, 'my graphs/v2.ts').crd).toEqual({
      name: 'dbs.okt.dev',
      revision: v1.revision,
      missingDesiredStates: ['Serving', 'Draining'],
      reapply: true,
      command: `okt crd 'my graphs/v2.ts' --group okt.dev --version v1alpha1 --kind Database --plural dbs --short-names odb,db | kubectl apply -f -`,
    });
  });

  it('the command keeps the status format the CRD records: applied without it, lean CRs would be written full', () => {
    const v2 = revision2('Automatic');
    const lean = crdOf(v1, { ...names, statusFormat: 'lean' });
    expect(check(v2, [], lean).crd.command).toBe('okt crd v2.ts --group okt.dev --version v1alpha1 --kind Database --status-format lean | kubectl apply -f -');
    expect(check(v2, [], crdOf(v1)).crd.command).toBe('okt crd v2.ts --group okt.dev --version v1alpha1 --kind Database | kubectl apply -f -');
    const unknown = crdOf(v1);
    unknown.metadata!.annotations!['okt.dev/status-format'] = 'slim';
    expect(() => check(v2, [], unknown)).toThrow('CRD databases.okt.dev: okt.dev/status-format: "slim" is not a status format okt knows (full, lean, compact, packed)');
  });
});

describe('formatGraphCheck', () => {
  it('says when there is no resource, and that the CRD is up to date', () => {
    const v2 = revision2('Automatic');
    expect(formatGraphCheck(check(v2, [], crdOf(v2)), NO_COLORS).split('\n')).toEqual([
      `graph "database" revision ${v2.revision} against CRD databases.okt.dev (revision ${v2.revision}), in all namespaces`,
      'no resources',
      'CRD databases.okt.dev is up to date',
      '',
    ]);
  });
});

describe('what each CR\'s objects do under NEW', () => {
  const relayNames: CrdNames = { group: 'okt.dev', version: 'v1alpha1', kind: 'Relay' };
  const entry = (id: string, kind: string, name: string, more: object = {}) => ({ id, apiVersion: 'v1', kind, name, hash: 'h', ...more });
  /** A relay CR an operator on revision 1 left at `state` with its objects. */
  const relay = (name: string, state: string, objects: object[], annotations?: Record<string, string>): LifecycleResource => ({
    kind: 'Relay',
    metadata: { name, namespace: 'demo', ...(annotations ? { annotations } : {}) },
    spec: { desiredState: state },
    status: { state, graphRevision: relayRevision1.revision, observedGeneration: 1, transition: 1, sequence: 1, path: ['Start', state], conditions: [], objects },
  });
  const service = (name: string) => entry('service', 'Service', name);

  it('a renamed node\'s kept, a removed node\'s pruned (a kept one disowned) once the CR stands at the node it maps to, whose objects are made; a CR that does not migrate keeps them as they are', () => {
    const atServicing = [service('backup'), entry('work', 'ConfigMap', 'backup-work')];
    const atStopping = [service('stop'), entry('stop', 'ConfigMap', 'stop-stop'), entry('keys', 'Secret', 'stop-keys', { deletion: 'Keep' })];
    const resources = [relay('backup', 'Servicing', atServicing), relay('stop', 'Stopping', atStopping), relay('run', 'Running', [service('run')])];
    const result = checkGraph({ graph: relayRevision2(), file: 'v2.ts', exportFlag: undefined, crd: crdOf(relayRevision1, relayNames), resources, namespace: undefined });
    expect(Object.fromEntries(result.resources.map((r) => [r.name, r.objects]))).toEqual({
      backup: { kept: atServicing, pruned: [], made: [] },
      stop: { kept: [service('stop')], pruned: [entry('stop', 'ConfigMap', 'stop-stop'), entry('keys', 'Secret', 'stop-keys', { deletion: 'Keep' })], made: [{ id: 'drain', apiVersion: 'v1', kind: 'ConfigMap', name: 'stop-drain' }] },
      run: { kept: [service('run')], pruned: [], made: [] },
    });
    expect(formatGraphCheck(result, NO_COLORS).split('\n').filter((line) => line.startsWith('    objects: '))).toEqual([
      '    objects: kept Service backup, ConfigMap backup-work (applied again only if its render changed)',
      '    objects: kept Service run (applied again only if its render changed)',
      '    objects: kept Service stop (applied again only if its render changed); made ConfigMap stop-drain; pruned ConfigMap stop-stop; disowned (kept) Secret stop-keys',
    ]);
    // Under the Manual policy they stay on revision 1 with their objects, until asked to move.
    const manual = checkGraph({ graph: relayRevision2('Manual'), file: 'v2.ts', exportFlag: undefined, crd: crdOf(relayRevision1, relayNames), resources, namespace: undefined });
    expect(manual.resources.find((r) => r.name === 'stop')?.objects).toEqual({ kept: atStopping, pruned: [], made: [] });
  });
});
