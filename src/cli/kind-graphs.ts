// The kinds `okt run` serves and `okt manifests` deploys: one graph (with --kind and --plural), or
// several, one --kind-graph KIND[:PLURAL]=FILE[#EXPORT] per kind; --group and --version are every kind's.
import type { Command } from 'commander';
import type { Graph } from '../graph/index.ts';
import { resolveCrdNames, type CrdNames } from '../kube/crd.ts';
import type { GraphKind } from '../kube/manifests.ts';
import { addCrdNameFlags, crdNameProblems, crdNamesOf, nameProblem, type CrdNameFlags } from './crd-names.ts';
import { CliError, usageError } from './errors.ts';
import { loadGraphFile } from './graph-module.ts';
import { collectRepeated } from './output.ts';

const KIND_GRAPH_FLAG = '--kind-graph';
const KIND_GRAPH = /^(?<kind>[^:=]+)(?::(?<plural>[^=]+))?=(?<file>[^#]+)(?:#(?<exportName>.+))?$/;
const KIND_GRAPH_FORM = 'KIND[:PLURAL]=FILE[#EXPORT]';

export interface KindGraphFlags extends Omit<CrdNameFlags, 'kind'> {
  kind?: string;
  export?: string;
  kindGraph: string[];
}

/** A kind, and where its graph is. */
export interface KindGraphSource {
  readonly names: CrdNames;
  readonly file: string;
  readonly exportName: string | undefined;
}

/** Adds the CRD name flags (--kind optional), --export and the repeatable --kind-graph. */
export function addKindGraphFlags(command: Command): Command {
  return addCrdNameFlags(command, { kindRequired: false })
    .option('--export <name>', 'the module export holding the graph')
    .option(
      `${KIND_GRAPH_FLAG} <${KIND_GRAPH_FORM}>`,
      'one kind and its graph, instead of one graph with --kind: repeat it to serve several kinds in one process (in --group and --version; PLURAL defaults to the kind in lower case plus "s")',
      collectRepeated,
      [] as string[],
    );
}

/**
 * The kinds the flags name: the one graph `single` (the flag or argument naming its file) with
 * --kind, or one per --kind-graph. Every problem is a usage error naming its flag, all at once.
 */
export function kindGraphSources(flags: KindGraphFlags, single: { flag: string; file: string | undefined }): KindGraphSource[] {
  const problems: string[] = [];
  let sources: KindGraphSource[];
  if (flags.kindGraph.length === 0) {
    const { file } = single;
    const { kind } = flags;
    if (file === undefined && kind === undefined) problems.push(`${single.flag} or ${KIND_GRAPH_FLAG}: give one graph (${single.flag} FILE --kind KIND) or several (${KIND_GRAPH_FLAG} ${KIND_GRAPH_FORM}, once per kind)`);
    else if (file === undefined) problems.push(`${single.flag}: missing: the graph of --kind ${kind}`);
    else if (kind === undefined) problems.push(`--kind: missing: the kind of the custom resources of ${single.flag} ${file}`);
    problems.push(...crdNameProblems(flags));
    sources = file === undefined || kind === undefined ? [] : [{ names: crdNamesOf({ ...flags, kind }), file, exportName: flags.export }];
  } else {
    if (single.file !== undefined) problems.push(`${single.flag}: not with ${KIND_GRAPH_FLAG}: give every graph as ${KIND_GRAPH_FLAG} ${KIND_GRAPH_FORM}`);
    const onlySingle: [string, unknown][] = [['--kind', flags.kind], ['--plural', flags.plural], ['--short-names', flags.shortNames], ['--export', flags.export]];
    for (const [flag, value] of onlySingle) {
      if (value !== undefined) problems.push(`${flag}: goes with ${single.flag}; with ${KIND_GRAPH_FLAG}, write ${KIND_GRAPH_FORM}`);
    }
    problems.push(...crdNameProblems({ group: flags.group, version: flags.version }));
    sources = flags.kindGraph.flatMap((entry) => {
      const parsed = parseKindGraph(entry, flags);
      if (typeof parsed !== 'string') return [parsed];
      problems.push(`${KIND_GRAPH_FLAG} "${entry}": ${parsed}`);
      return [];
    });
    // A kind given twice repeats its plural too: that plural is said only of different kinds.
    const kinds = sources.map((s) => s.names.kind);
    const firstOfKind = sources.filter((s, i) => kinds.indexOf(s.names.kind) === i);
    problems.push(...repeated(kinds.map((kind) => `kind "${kind}"`)), ...repeated(firstOfKind.map((s) => `plural "${resolveCrdNames(s.names).plural}"`)));
  }
  if (problems.length > 0) throw usageError(problems);
  return sources;
}

/** The graph of every kind, loaded; every file that fails is said at once. */
export async function loadKindGraphs(sources: readonly KindGraphSource[]): Promise<GraphKind[]> {
  const loaded = await Promise.allSettled(sources.map((s) => loadGraphFile(s.file, s.exportName === undefined ? {} : { exportName: s.exportName })));
  const failed = loaded.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
  const unexpected = failed.find((reason) => !(reason instanceof CliError));
  if (unexpected !== undefined) throw unexpected;
  if (failed.length > 0) throw usageError(failed);
  return sources.map((source, i) => ({ names: source.names, graph: (loaded[i] as PromiseFulfilledResult<{ graph: Graph }>).value.graph }));
}

/** One --kind-graph value, or what is wrong with it. */
function parseKindGraph(entry: string, { group, version, statusFormat }: KindGraphFlags): KindGraphSource | string {
  const match = KIND_GRAPH.exec(entry)?.groups;
  if (match === undefined) return `not ${KIND_GRAPH_FORM}, e.g. Database=graphs/database.ts`;
  const { kind = '', plural, file = '', exportName } = match;
  const kindProblem = nameProblem('kind', kind);
  if (kindProblem !== undefined) return `the kind ${kindProblem}`;
  const pluralProblem = plural === undefined ? undefined : nameProblem('plural', plural);
  if (pluralProblem !== undefined) return `the plural ${pluralProblem}`;
  return { names: { group, version, kind, ...(plural === undefined ? {} : { plural }), ...(statusFormat === undefined ? {} : { statusFormat }) }, file, exportName };
}

/** `--kind-graph: kind "Database" is given twice`, once per name given more than once. */
function repeated(names: readonly string[]): string[] {
  return [...new Set(names.filter((name, i) => names.indexOf(name) !== i))].map((name) => `${KIND_GRAPH_FLAG}: ${name} is given twice`);
}
