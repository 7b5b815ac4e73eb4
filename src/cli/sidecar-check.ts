// What `okt sidecar` checks before it listens: each graph's config against its graph file (the
// config's `graph:`, or --graph), and every module action. All the problems at once.
import { fitToGraph } from '../../sidecar/graph-fit.ts';
import { moduleProblems } from '../../sidecar/module-check.ts';
import type { ConfigProblem, SidecarConfig } from '../../sidecar/config.ts';
import type { Graph } from '../graph/index.ts';
import { CliError } from './errors.ts';
import { loadGraphFile, type LoadedGraph } from './graph-module.ts';

export interface SidecarCheck {
  /** What makes the sidecar refuse to start. */
  problems: ConfigProblem[];
  /** What it says and starts anyway. */
  warnings: string[];
}

/** `graphFlags`: files given with --graph, each matched to the config's graph of its name. */
export async function checkSidecarConfig(config: SidecarConfig, graphFlags: readonly string[] = []): Promise<SidecarCheck> {
  const problems: ConfigProblem[] = [];
  const warnings: string[] = [];
  const graphs = new Map<string, LoadedGraph>();
  const served = Object.keys(config.graphs);
  for (const file of graphFlags) {
    const loaded = await load(file, '--graph', problems);
    if (loaded === undefined) continue;
    if (config.graphs[loaded.graph.name] === undefined) {
      problems.push({ field: '--graph', reason: `${file} holds graph "${loaded.graph.name}", which this config does not serve (its graphs: ${served.join(', ')})` });
    } else {
      graphs.set(loaded.graph.name, loaded);
    }
  }
  for (const [name, graphConfig] of Object.entries(config.graphs)) {
    // --graph stands in for the config's own graph file.
    if (graphs.has(name) || graphConfig.graph === undefined) continue;
    const loaded = await load(graphConfig.graph, `graphs.${name}.graph`, problems);
    if (loaded !== undefined) graphs.set(name, loaded);
  }
  for (const [name, loaded] of graphs) {
    const fit = fitToGraph(name, config.graphs[name]!, loaded.graph, loaded.file);
    problems.push(...fit.problems);
    warnings.push(...fit.missingActions.map((node) => missingAction(name, loaded.graph, node)));
  }
  problems.push(...(await moduleProblems(config)));
  // Grouped by graph and node, whichever check found them.
  return { problems: problems.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0)), warnings };
}

async function load(file: string, field: string, problems: ConfigProblem[]): Promise<LoadedGraph | undefined> {
  try {
    return await loadGraphFile(file);
  } catch (error) {
    // loadGraphFile's errors name the file and say what is wrong with it (CliError); anything else still is a problem of this file.
    const reason = error instanceof CliError ? error.message : `${file}: ${error instanceof Error ? error.message : String(error)}`;
    problems.push({ field, reason });
    return undefined;
  }
}

function missingAction(name: string, graph: Graph, node: string): string {
  return `graphs.${name}.nodes: node ${node} of graph "${graph.name}" has an action and this config none: a resource that reaches it stalls (SidecarRefused)`;
}
