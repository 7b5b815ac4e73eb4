// The kinds of `okt run` and `okt manifests`: one graph with --kind, or several --kind-graph; every
// problem of these flags in one usage error; and the RBAC and manifests of several kinds.
import { describe, expect, it } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import { crdNamesFromFlags } from '../../src/cli/crd-names.ts';
import { CliError, EXIT, UsageProblems } from '../../src/cli/errors.ts';
import { kindGraphSources, loadKindGraphs, type KindGraphFlags } from '../../src/cli/kind-graphs.ts';
import { runCommand } from '../../src/cli/run.ts';
import { generateManifests } from '../../src/kube/manifests.ts';
import { generateRbac } from '../../src/kube/rbac.ts';

type Doc = Record<string, any>;
const shared = ['--group', 'okt.dev', '--version', 'v1alpha1'];

/** `okt run ARGS`'s kinds, its flags parsed as commander parses them. */
function runKinds(args: string[]) {
  const command = runCommand();
  command.parseOptions(args);
  const flags = command.opts() as KindGraphFlags & { graph?: string };
  return kindGraphSources(flags, { flag: '--graph', file: flags.graph });
}

function problemsOf(action: () => unknown): string[] {
  try {
    action();
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    expect((error as CliError).exitCode).toBe(EXIT.usage);
    return error instanceof UsageProblems ? error.problems.map((p) => p.message) : [(error as CliError).message];
  }
  throw new Error('no usage error');
}

describe('okt run: the kinds it serves', () => {
  it('one graph with --kind (and --plural, --export), as before', () => {
    expect(runKinds(['--graph', 'g.ts', '--export', 'g', ...shared, '--kind', 'Database', '--plural', 'dbs'])).toEqual([
      { names: { group: 'okt.dev', version: 'v1alpha1', kind: 'Database', plural: 'dbs' }, file: 'g.ts', exportName: 'g' },
    ]);
  });

  it('several with --kind-graph KIND[:PLURAL]=FILE[#EXPORT], in the shared group and version', () => {
    expect(runKinds([...shared, '--kind-graph', 'Database=graphs/database.ts', '--kind-graph', 'Reconciliation:recs=graphs/reconciliation.ts#reconciliationGraph'])).toEqual([
      { names: { group: 'okt.dev', version: 'v1alpha1', kind: 'Database' }, file: 'graphs/database.ts', exportName: undefined },
      { names: { group: 'okt.dev', version: 'v1alpha1', kind: 'Reconciliation', plural: 'recs' }, file: 'graphs/reconciliation.ts', exportName: 'reconciliationGraph' },
    ]);
  });

  it('says every problem of the flags at once, each naming its flag', () => {
    expect(problemsOf(() => runKinds(['--group', 'okt', '--version', 'v1', '--graph', 'g.ts', '--kind', 'Database', '--export', 'x',
      '--kind-graph', 'database=a.ts', '--kind-graph', 'Thing', '--kind-graph', 'Thing:Things=b.ts',
      '--kind-graph', 'Database=c.ts', '--kind-graph', 'Other:databases=d.ts', '--kind-graph', 'Database=e.ts']))).toEqual([
      '--graph: not with --kind-graph: give every graph as --kind-graph KIND[:PLURAL]=FILE[#EXPORT]',
      '--kind: goes with --graph; with --kind-graph, write KIND[:PLURAL]=FILE[#EXPORT]',
      '--export: goes with --graph; with --kind-graph, write KIND[:PLURAL]=FILE[#EXPORT]',
      '--group: "okt" is not a lower-case domain with at least one dot, e.g. okt.dev',
      '--kind-graph "database=a.ts": the kind "database" is not CamelCase letters and digits, e.g. Database',
      '--kind-graph "Thing": not KIND[:PLURAL]=FILE[#EXPORT], e.g. Database=graphs/database.ts',
      '--kind-graph "Thing:Things=b.ts": the plural "Things" is not a lower-case DNS label, e.g. databases',
      '--kind-graph: kind "Database" is given twice',
      '--kind-graph: plural "databases" is given twice',
    ]);
  });

  it('asks for a graph, or for the kind of the one graph', () => {
    expect(problemsOf(() => runKinds(shared))).toEqual([
      '--graph or --kind-graph: give one graph (--graph FILE --kind KIND) or several (--kind-graph KIND[:PLURAL]=FILE[#EXPORT], once per kind)',
    ]);
    expect(problemsOf(() => runKinds([...shared, '--graph', 'g.ts', '--plural', 'Dbs']))).toEqual([
      '--kind: missing: the kind of the custom resources of --graph g.ts',
      '--plural: "Dbs" is not a lower-case DNS label, e.g. databases',
    ]);
    expect(problemsOf(() => runKinds([...shared, '--kind', 'Database']))).toEqual(['--graph: missing: the graph of --kind Database']);
  });

  it('says every graph file that cannot be loaded at once; one alone keeps its hint', async () => {
    const missing = { names: { group: 'okt.dev', version: 'v1', kind: 'A' }, file: 'graphs/missing.ts', exportName: undefined };
    const noExport = { names: { group: 'okt.dev', version: 'v1', kind: 'B' }, file: 'graphs/database.ts', exportName: 'nope' };
    const both = await loadKindGraphs([missing, noExport]).catch((error: unknown) => error);
    expect(both).toBeInstanceOf(UsageProblems);
    expect((both as UsageProblems).message).toBe([
      '2 problems:',
      '- graphs/missing.ts: no such file',
      '  Give the path of a graph module (.ts/.js) or a JSON/YAML graph.',
      '- graphs/database.ts: no export named "nope"',
      '  Its exports: databaseGraph, databaseNodes.',
    ].join('\n'));
    const one = await loadKindGraphs([missing]).catch((error: unknown) => error);
    expect(one).not.toBeInstanceOf(UsageProblems);
    expect((one as CliError).hint).toBe('Give the path of a graph module (.ts/.js) or a JSON/YAML graph.');
    const loaded = await loadKindGraphs([{ ...noExport, exportName: undefined }]);
    expect(loaded.map(({ graph }) => graph.name)).toEqual(['database']);
  });

  it('crdNamesFromFlags (okt crd) says every bad name at once too', () => {
    expect(problemsOf(() => crdNamesFromFlags({ group: 'okt', version: 'V1', kind: 'Database' }))).toEqual([
      '--group: "okt" is not a lower-case domain with at least one dot, e.g. okt.dev',
      '--version: "V1" is not a lower-case DNS label, e.g. v1alpha1',
    ]);
  });
});

describe('several kinds in one operator: RBAC and manifests', () => {
  const database = { group: 'okt.dev', version: 'v1alpha1', kind: 'Database' };
  const reconciliation = { group: 'okt.dev', version: 'v1alpha1', kind: 'Reconciliation', plural: 'recs' };

  it('one ClusterRole names each kind\'s plural, one rule per group so that no plural is granted in another group', () => {
    const docs = generateRbac([database, reconciliation, { group: 'other.dev', version: 'v1', kind: 'Cache' }], { namespace: 'ops' }) as Doc[];
    expect(docs.find((d) => d.kind === 'ServiceAccount')!.metadata.name).toBe('okt-database-reconciliation-cache');
    expect(docs.find((d) => d.kind === 'ClusterRole')!.rules).toEqual([
      { apiGroups: ['okt.dev'], resources: ['databases', 'recs'], verbs: ['get', 'list', 'watch', 'patch', 'update', 'delete'] },
      { apiGroups: ['okt.dev'], resources: ['databases/status', 'recs/status'], verbs: ['get', 'update'] },
      { apiGroups: ['okt.dev'], resources: ['databases/finalizers', 'recs/finalizers'], verbs: ['update'] },
      { apiGroups: ['other.dev'], resources: ['caches'], verbs: ['get', 'list', 'watch', 'patch', 'update', 'delete'] },
      { apiGroups: ['other.dev'], resources: ['caches/status'], verbs: ['get', 'update'] },
      { apiGroups: ['other.dev'], resources: ['caches/finalizers'], verbs: ['update'] },
      { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
    ]);
    // One Lease for the process, whatever the number of kinds.
    expect(docs.find((d) => d.kind === 'Role')!.rules[1].resourceNames).toEqual(['okt-database-reconciliation-cache']);
  });

  it('a CRD per kind, their graphs in one ConfigMap, and okt run args that name each kind', () => {
    const options = { namespace: 'ops', createNamespace: false, image: 'okt:test', sidecarToken: false } as const;
    const docs = generateManifests([{ graph: databaseGraph, names: database }, { graph: reconciliationGraph, names: reconciliation }], options) as Doc[];
    expect(docs.filter((d) => d.kind === 'CustomResourceDefinition').map((d) => d.metadata.name)).toEqual(['databases.okt.dev', 'recs.okt.dev']);
    expect(Object.keys(docs.find((d) => d.kind === 'ConfigMap')!.data)).toEqual(['database.json', 'reconciliation.json']);
    const [subcommand, ...args] = docs.find((d) => d.kind === 'Deployment')!.spec.template.spec.containers[0].args as string[];
    expect(subcommand).toBe('run');
    expect(runKinds(args)).toEqual([
      { names: database, file: '/etc/okt/graph/database.json', exportName: undefined },
      { names: reconciliation, file: '/etc/okt/graph/reconciliation.json', exportName: undefined },
    ]);
    expect(() => generateManifests([{ graph: databaseGraph, names: database }, { graph: reconciliationGraph, names: { ...reconciliation, version: 'v1' } }], options))
      .toThrow('generateManifests: Reconciliation is in okt.dev/v1, Database in okt.dev/v1alpha1: okt run serves several kinds of one group and version');
  });
});
