// `okt graph validate | render | simulate FILE`: a graph checked, drawn and walked before any cluster exists;
// `okt graph diff OLD NEW`: what a new revision changes; `okt graph check NEW --against-cluster`: what it
// would do to the resources of a cluster.
import { Command, Option } from 'commander';
import { actionDrivenCycles, DEFAULT_STATE, describeObject, diffGraphs, objectData, renderDot, renderMermaid, type Graph } from '../graph/index.ts';
import { renderPath, toXStateSource } from '../machine/index.ts';
import { addCrdFinderFlags } from './crd-names.ts';
import { CliError, EXIT, runAction, type ExitCode } from './errors.ts';
import type { GraphCheckFlags } from './graph-check.ts';
import { formatGraphDiff } from './graph-diff.ts';
import { loadGraphFile, type LoadedGraph } from './graph-module.ts';
import { collectList, colorsFor, type Colors } from './output.ts';
import { simulate, type Simulation } from './simulate.ts';

export const RENDER_FORMATS = ['mermaid', 'dot', 'xstate', 'json'] as const;
export type RenderFormat = (typeof RENDER_FORMATS)[number];

const exportOption = () => new Option('--export <name>', 'the module export holding the graph (default: the default export, or the only Graph exported)');

export function graphCommand(): Command {
  const graph = new Command('graph').description('Check, draw, simulate and compare graphs (a .ts/.js module or a JSON/YAML file)');

  graph
    .command('validate')
    .description('Check a graph: prints OK and its size, or every problem (exit 1); warns (stderr) about cycles its actions can drive')
    .argument('<file>', 'graph module (.ts/.js) or data (.json/.yaml)')
    .addOption(exportOption())
    .action(
      runAction('graph validate', async (file: string, options: { export?: string }) => {
        const loaded = await loadGraphFile(file, { exportName: options.export, invalidGraphCode: EXIT.failed });
        process.stdout.write(`${describeValid(loaded)}\n`);
        for (const warning of cycleWarnings(loaded.graph)) process.stderr.write(`warning: ${warning}\n`);
      }),
    );

  graph
    .command('render')
    .description('Print the graph as a Mermaid state diagram, Graphviz DOT, xstate source (Stately visualizer) or JSON')
    .argument('<file>', 'graph module (.ts/.js) or data (.json/.yaml)')
    .addOption(new Option('-f, --format <format>', 'output format').choices(RENDER_FORMATS).default('mermaid'))
    .addOption(exportOption())
    .action(
      runAction('graph render', async (file: string, options: { format: RenderFormat; export?: string }) => {
        const { graph: loaded } = await loadGraphFile(file, { exportName: options.export });
        process.stdout.write(renderGraph(loaded, options.format));
      }),
    );

  graph
    .command('simulate')
    .description('Walk the graph in memory through its xstate machine toward --desired, printing each decision')
    .argument('<file>', 'graph module (.ts/.js) or data (.json/.yaml)')
    .requiredOption('-d, --desired <node>', 'the node to reach')
    .option('--from <node>', 'the node to start from (default: the entry)')
    .option('-e, --events <events>', `events also offered at every decision (node names or ${DEFAULT_STATE}), comma-separated or repeated`, collectList)
    .addOption(exportOption())
    .action(
      runAction('graph simulate', async (file: string, options: { desired: string; from?: string; events?: string[]; export?: string }) => {
        const { graph: loaded } = await loadGraphFile(file, { exportName: options.export });
        const desired = nodeFlag(loaded, '--desired', options.desired);
        const from = options.from === undefined ? undefined : nodeFlag(loaded, '--from', options.from);
        const extraEvents = (options.events ?? []).map((event) => eventFlag(loaded, event));
        const result = simulate(loaded, { desired, from, extraEvents });
        process.stdout.write(formatSimulation(loaded, result, colorsFor(process.stdout)));
        return simulationExitCode(result);
      }),
    );

  graph
    .command('diff')
    .description('Print what changed from OLD to NEW: nodes added, removed (and where their CRs go), renamed; children, priorities, defaults, triggers')
    .argument('<old>', 'the earlier graph: module (.ts/.js) or data (.json/.yaml)')
    .argument('<new>', 'the later graph: module (.ts/.js) or data (.json/.yaml)')
    .option('--json', 'print the diff as JSON')
    .option('--exit-code', 'exit 1 when the graphs differ (as git diff --exit-code)')
    .option('--export-old <name>', 'the export of OLD holding the graph (as --export)')
    .option('--export-new <name>', 'the export of NEW holding the graph (as --export)')
    .action(
      runAction('graph diff', async (oldFile: string, newFile: string, options: { json?: boolean; exitCode?: boolean; exportOld?: string; exportNew?: string }) => {
        const { graph: old } = await loadGraphFile(oldFile, { exportName: options.exportOld });
        const { graph: next } = await loadGraphFile(newFile, { exportName: options.exportNew });
        const diff = diffGraphs(old, next);
        process.stdout.write(options.json ? `${JSON.stringify(diff, null, 2)}\n` : formatGraphDiff(diff, colorsFor(process.stdout)));
        // A diff is information: it fails only when asked to report a difference.
        return options.exitCode && !diff.same ? EXIT.failed : EXIT.ok;
      }),
    );

  const check = graph
    .command('check')
    .description('Say what an operator on NEW would do to every live resource of its CRD: ok, stranded (exit 1), unreachable, waits or invalid (warnings)')
    .argument('<new>', 'the graph about to be deployed: module (.ts/.js) or data (.json/.yaml)')
    .requiredOption('--against-cluster', 'read the CRD and its resources from the cluster KUBECONFIG names (required)')
    .option('-n, --namespace <ns>', 'only the resources of this namespace (default: all namespaces)');
  addCrdFinderFlags(check, 'graph\'s resources')
    .option('--json', 'print the check as JSON')
    .addOption(exportOption())
    .addHelpText(
      'after',
      [
        '',
        'Without --kind/--group/--crd-name, the CRD is the one whose okt.dev/graph annotation names the graph.',
        'Exit code: 1 when a resource would be stranded (or no CRD is found); 0 otherwise: unreachable, waits and invalid are warnings.',
      ].join('\n'),
    )
    .action(
      runAction('graph check', async (file: string, options: GraphCheckFlags) => {
        const loaded = await loadGraphFile(file, { exportName: options.export });
        // The Kubernetes client takes a while to load: only the commands that talk to a cluster pay for it.
        const { checkAgainstCluster, formatGraphCheck, graphCheckExitCode } = await import('./graph-check.ts');
        const result = await checkAgainstCluster(loaded, options);
        process.stdout.write(options.json ? `${JSON.stringify(result, null, 2)}\n` : formatGraphCheck(result, colorsFor(process.stdout)));
        return graphCheckExitCode(result);
      }),
    );

  return graph;
}

export function describeValid({ graph, file, exportName }: LoadedGraph): string {
  const leaves = graph.nodeNames.filter((n) => graph.node(n).isLeaf);
  const source = exportName === undefined ? file : `${file}, export ${exportName}`;
  const count = graph.nodeNames.length === 1 ? '1 node' : `${graph.nodeNames.length} nodes`;
  const earlier = graph.previous.length === 0 ? '' : `, serves earlier revisions ${graph.previous.map((g) => g.revision).join(', ')}`;
  const objects = graph.objects.map((o) => `\n  object ${o.id}: ${describeObject(objectData(o))}`).join('');
  return `OK: graph "${graph.name}" (${source}): ${count}, entry ${graph.entry}, leaves ${leaves.join(', ')}, revision ${graph.revision}${earlier}${objects}`;
}

/** One line per group of cycles the graph's actions' events can drive with no spec edit. */
export function cycleWarnings(graph: Graph): string[] {
  return actionDrivenCycles(graph).map(({ nodes, example }) => {
    const others = nodes.length > example.length - 1 ? ` (and other cycles through ${nodes.join(', ')})` : '';
    return `graph "${graph.name}": its actions' events can drive the cycle ${example.join(' > ')}${others} with no spec edit; the operator brakes a resource that turns it fast (docs/operator.md#the-cycle-brake)`;
  });
}

export function renderGraph(graph: Graph, format: RenderFormat): string {
  switch (format) {
    case 'mermaid':
      return renderMermaid(graph);
    case 'dot':
      return renderDot(graph);
    case 'xstate':
      return toXStateSource(graph);
    case 'json':
      return `${JSON.stringify(graph.toData(), null, 2)}\n`;
  }
}

/** The walk as a person reads it: one line per decision, the outcome, and the path as OKT prints it. */
export function formatSimulation(graph: Graph, sim: Simulation, c: Colors): string {
  const offered = sim.steps.map((s) => `offered [${s.events.join(', ')}]`);
  const width = Math.max(...sim.steps.map((s) => s.from.length), 4);
  const offeredWidth = Math.max(...offered.map((o) => o.length), 0);
  const lines = [`${c.bold(`graph "${graph.name}"`)}: from ${c.cyan(sim.from)} toward ${c.cyan(sim.desired)}`];
  sim.steps.forEach((step, i) => {
    const number = String(i + 1).padStart(String(sim.steps.length).length);
    lines.push(`  ${number}. ${step.from.padEnd(width)}  ${offered[i]!.padEnd(offeredWidth)}  ${c.dim('->')} ${c.bold(step.to)}`);
  });
  const decisions = sim.steps.length === 1 ? '1 decision' : `${sim.steps.length} decisions`;
  switch (sim.outcome.kind) {
    case 'arrived':
      lines.push(c.green(`arrived at ${sim.desired} after ${decisions}`));
      break;
    case 'unreachable':
      lines.push(c.red(`${sim.desired} cannot be reached from ${sim.outcome.at} (stopped after ${decisions})`));
      break;
    case 'loop':
      lines.push(c.red(`the extra events loop: ${sim.outcome.at} is left a second time with the same events (stopped after ${decisions})`));
      break;
  }
  lines.push(`path: ${renderPath(sim.path)}`);
  return `${lines.join('\n')}\n`;
}

export function simulationExitCode(sim: Simulation): ExitCode {
  return sim.outcome.kind === 'arrived' ? EXIT.ok : EXIT.failed;
}

function nodeFlag(graph: Graph, flag: string, value: string): string {
  if (graph.has(value)) return value;
  throw new CliError(EXIT.usage, `${flag}: graph "${graph.name}" has no node "${value}"`, `Its nodes: ${graph.nodeNames.join(', ')}.`);
}

function eventFlag(graph: Graph, value: string): string {
  if (value === DEFAULT_STATE || graph.has(value)) return value;
  throw new CliError(EXIT.usage, `--events: "${value}" is neither a node of graph "${graph.name}" nor ${DEFAULT_STATE}`, `Its nodes: ${graph.nodeNames.join(', ')}.`);
}
