import fc from 'fast-check';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import { CliError, EXIT } from '../../src/cli/errors.ts';
import { loadGraphFile } from '../../src/cli/graph-module.ts';
import { describeValid, formatSimulation, renderGraph, simulationExitCode } from '../../src/cli/graph.ts';
import { NO_COLORS } from '../../src/cli/output.ts';
import { simulate } from '../../src/cli/simulate.ts';
import { loadGraph, renderDot, renderMermaid } from '../../src/graph/index.ts';
import { createPlanner } from '../../src/plan/index.ts';
import { graphArb } from '../fixtures/graph-arbitrary.ts';
import { tempFiles } from '../fixtures/temp-files.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

const { dir, file } = tempFiles('okt-cli-graph-');
const graphIndex = pathToFileURL(path.resolve('src/graph/index.ts')).href;

async function loadError(at: string, options?: Parameters<typeof loadGraphFile>[1]): Promise<CliError> {
  const error = await loadGraphFile(at, options).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(CliError);
  return error as CliError;
}

describe('loadGraphFile', () => {
  it('finds the single exported Graph of a module', async () => {
    const loaded = await loadGraphFile('graphs/database.ts');
    expect(loaded.exportName).toBe('databaseGraph');
    expect(loaded.graph.toData()).toEqual(databaseGraph.toData());
    expect(describeValid(loaded)).toBe('OK: graph "database" (graphs/database.ts, export databaseGraph): 5 nodes, entry Start, leaves End, revision cb0b55743d723c69');
  });

  it('prefers the default export, and asks for --export when several graphs are exported', async () => {
    const twoGraphs = `import { defineGraph } from '${graphIndex}';
      export const a = defineGraph({ name: 'a', entry: 'S', nodes: { S: { children: ['E'] }, E: {} } });
      export const b = defineGraph({ name: 'b', entry: 'S', nodes: { S: { children: ['E'] }, E: {} } });`;
    const several = file('several.ts', twoGraphs);
    const error = await loadError(several);
    expect(error.exitCode).toBe(EXIT.usage);
    expect(error.message).toContain('exports 2 graphs (a, b)');
    expect(error.hint).toContain('--export');
    expect((await loadGraphFile(several, { exportName: 'b' })).graph.name).toBe('b');
    expect((await loadError(several, { exportName: 'c' })).message).toContain('no export named "c"');

    const withDefault = file('default.ts', `${twoGraphs}\nexport default b;`);
    expect((await loadGraphFile(withDefault)).exportName).toBe('default');
  });

  it('loads JSON and YAML data (list or map of nodes) through loadGraph', async () => {
    const json = file('g.json', JSON.stringify(databaseGraph.toData()));
    expect((await loadGraphFile(json)).graph.toData()).toEqual(databaseGraph.toData());
    const yaml = file('g.yaml', 'name: tiny\nentry: A\nnodes:\n  A: { children: [B] }\n  B: {}\n');
    const loaded = await loadGraphFile(yaml);
    expect(loaded.graph.nodeNames).toEqual(['A', 'B']);
    expect(loaded.exportName).toBeUndefined();
  });

  it('lists every problem of an invalid graph, with the code the caller asks for', async () => {
    const bad = file('bad.yaml', 'name: bad\nentry: A\nnodes:\n  A: { children: [B, Nowhere] }\n  B: { childs: [] }\n');
    const asInput = await loadError(bad);
    expect(asInput.exitCode).toBe(EXIT.usage);
    expect(asInput.message).toContain('bad.yaml');
    const asCheck = await loadError(bad, { invalidGraphCode: EXIT.failed });
    expect(asCheck.exitCode).toBe(EXIT.failed);
    expect(asCheck.message).toMatch(/childs/);

    const unknownChildren = file('bad2.json', JSON.stringify({ name: 'bad2', entry: 'A', nodes: [{ name: 'A', children: ['X', 'Y'] }] }));
    const problems = (await loadError(unknownChildren)).message.split('\n').filter((line) => line.startsWith('- '));
    expect(problems.length).toBeGreaterThanOrEqual(2);
    expect(problems.join('\n')).toContain('X');
    expect(problems.join('\n')).toContain('Y');
  });

  it('names the file and the problem for bad input', async () => {
    expect((await loadError(path.join(dir, 'missing.ts'))).message).toMatch(/missing\.ts: no such file/);
    expect((await loadError(file('g.txt', 'x'))).message).toMatch(/unsupported file type "\.txt"/);
    expect((await loadError(file('broken.json', '{ nope'))).message).toMatch(/broken\.json: not valid JSON/);
    expect((await loadError(file('none.ts', 'export const x = 1;'))).message).toMatch(/none\.ts: exports no Graph/);
    expect((await loadError(file('throws.ts', 'throw new Error("boom");'))).message).toMatch(/throws\.ts: the module failed to load: boom/);
    const invalidModule = file('invalid.ts', `import { defineGraph } from '${graphIndex}';
      export default defineGraph({ name: 'v', entry: 'S', nodes: { S: { children: ['Missing'] } } } as never);`);
    expect((await loadError(invalidModule)).message).toMatch(/graph "v" is invalid/);
    for (const at of [path.join(dir, 'missing.ts'), file('g2.txt', 'x')]) expect((await loadError(at)).exitCode).toBe(EXIT.usage);
  });
});

describe('renderGraph', () => {
  it('renders DOT with every edge, its priority and role, the entry and the leaves', () => {
    const dot = renderGraph(databaseGraph, 'dot');
    expect(dot).toBe(renderDot(databaseGraph));
    expect(dot).toMatch(/^digraph "database" \{/);
    expect(dot).toContain('"__entry" -> "Start";');
    expect(dot).toContain('"Running" -> "Servicing" [label="1"];');
    expect(dot).toContain('"Running" -> "Stopping" [label="2 default"];');
    expect(dot).toContain('"End" [label="End", shape=doublecircle');
    const edges = dot.split('\n').filter((l) => / -> /.test(l) && !l.includes('__entry'));
    expect(edges).toHaveLength(6);
    const reconciliation = renderDot(reconciliationGraph);
    expect(reconciliation).toContain('"CRChecker" -> "ErrorManager" [label="1 trigger", style=dashed];');
  });

  it('renders Mermaid, xstate source and JSON that loads back to the same graph', () => {
    expect(renderGraph(databaseGraph, 'mermaid')).toBe(renderMermaid(databaseGraph));
    expect(renderGraph(databaseGraph, 'xstate')).toContain("import { setup } from 'xstate';");
    expect(loadGraph(JSON.parse(renderGraph(databaseGraph, 'json'))).toData()).toEqual(databaseGraph.toData());
  });

  it('marks the nodes whose action may be cancelled, and when', () => {
    const data = databaseGraph.toData();
    const graph = loadGraph({ ...data, nodes: data.nodes.map((n) => (n.name === 'Servicing' ? { ...n, cancellable: true } : n.name === 'Stopping' ? { ...n, cancellable: { onDesiredChange: true } } : n)) });
    const dot = renderDot(graph);
    expect(dot).toMatch(/"Servicing" \[label="Servicing", (tooltip="[^"]*", )?xlabel="cancellable"\];/);
    expect(dot).toMatch(/"Stopping" \[label="Stopping", (tooltip="[^"]*", )?xlabel="cancellable on desired change"\];/);
    expect(dot.match(/xlabel/g)).toHaveLength(2);
    const mermaid = renderMermaid(graph);
    expect(mermaid).toContain('  s2 : cancellable\n');
    expect(mermaid).toContain('  s3 : cancellable on desired change\n');
    expect(renderMermaid(databaseGraph)).not.toContain('cancellable');
  });

  it('styles Mermaid nodes by class, ignoring unknown names', () => {
    const styled = renderMermaid(databaseGraph, { current: { css: 'fill:#ffd54f', nodes: ['Running', 'Nope'] } });
    expect(styled).toContain('  classDef current fill:#ffd54f\n  class s1 current\n');
    expect(renderMermaid(databaseGraph, { none: { css: 'fill:red', nodes: ['Nope'] } })).toBe(renderMermaid(databaseGraph));
  });
});

describe('simulate (through the xstate machine)', () => {
  it('walks the database graph to Servicing, one planner event per decision', () => {
    const sim = simulate(databaseGraph, { desired: 'Servicing' });
    expect(sim.steps).toEqual([
      { from: 'Start', events: ['Running'], to: 'Running' },
      { from: 'Running', events: ['Servicing'], to: 'Servicing' },
    ]);
    expect(sim.outcome).toEqual({ kind: 'arrived' });
    expect(simulationExitCode(sim)).toBe(EXIT.ok);
    expect(formatSimulation(databaseGraph, sim, NO_COLORS)).toBe(
      [
        'graph "database": from Start toward Servicing',
        '  1. Start    offered [Running]    -> Running',
        '  2. Running  offered [Servicing]  -> Servicing',
        'arrived at Servicing after 2 decisions',
        'path: >Start>Running>Servicing',
        '',
      ].join('\n'),
    );
  });

  it('lets extra events debranch (a trigger wins over the planner event)', () => {
    const sim = simulate(reconciliationGraph, { desired: 'SuccessManager', extraEvents: ['GiveupManager'] });
    expect(sim.steps[0]).toEqual({ from: 'CRChecker', events: ['ObjectsGetter', 'GiveupManager'], to: 'GiveupManager' });
    expect(sim.outcome).toEqual({ kind: 'unreachable', at: 'GiveupManager' });
    expect(sim.path).toEqual(['CRChecker', 'GiveupManager']);
    expect(simulationExitCode(sim)).toBe(EXIT.failed);
    expect(formatSimulation(reconciliationGraph, sim, NO_COLORS)).toContain('SuccessManager cannot be reached from GiveupManager');
  });

  it('stops when the extra events send the walk round in a circle', () => {
    // Servicing outranks Stopping as Running's child: offered at every step, it keeps winning.
    const sim = simulate(databaseGraph, { desired: 'Stopping', extraEvents: ['Servicing'] });
    expect(sim.path).toEqual(['Start', 'Running', 'Servicing', 'Running']);
    expect(sim.outcome).toEqual({ kind: 'loop', at: 'Running' });
    expect(formatSimulation(databaseGraph, sim, NO_COLORS)).toContain('path: >Start>(Running<<>>Servicing)x1>Running');
  });

  it('starts from --from and reports an unreachable desired node at once', () => {
    const sim = simulate(databaseGraph, { from: 'End', desired: 'Running' });
    expect(sim.steps).toEqual([]);
    expect(sim.outcome).toEqual({ kind: 'unreachable', at: 'End' });
  });

  it('follows the planner route exactly, on random graphs', () => {
    fc.assert(
      fc.property(graphArb, fc.nat(), fc.nat(), (graph, i, j) => {
        const from = graph.nodeNames[i % graph.nodeNames.length]!;
        const desired = graph.nodeNames[j % graph.nodeNames.length]!;
        const sim = simulate(graph, { from, desired });
        const route = createPlanner(graph).route(from, desired);
        if (route === undefined) expect(sim.outcome.kind).toBe('unreachable');
        else {
          expect(sim.outcome.kind).toBe('arrived');
          expect(sim.path).toEqual([from, ...route]);
        }
      }),
      { numRuns: fcRuns(200) },
    );
  });
});
