import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { defineGraph, diffGraphs, formatDuration, loadGraph, parseDuration, renderDot, renderMermaid } from '../../src/graph/index.ts';
import { brief, problemsOf } from '../fixtures/graph-problems.ts';


/** The database graph with a backup that may run 10 minutes before it is given up for Failed. */
const timedGraph = defineGraph({
  name: 'database',
  entry: 'Start',
  nodes: {
    Start: { children: ['Running'] },
    Running: { children: ['Servicing', 'Stopping'] },
    Servicing: { children: ['Failed', 'Running', 'End'], deadline: { after: '10m', then: 'Failed' } },
    Failed: { children: ['Running'], deadline: { after: 90_000 } },
    Stopping: { children: ['End'] },
    End: {},
  },
});

describe('durations', () => {
  test('read hours, minutes, seconds and milliseconds, largest first, each once', () => {
    expect(parseDuration('500ms')).toBe(500);
    expect(parseDuration('90s')).toBe(90_000);
    expect(parseDuration('10m')).toBe(600_000);
    expect(parseDuration('1h')).toBe(3_600_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('2h0m5s250ms')).toBe(7_205_250);
    expect(parseDuration(1500)).toBe(1500);
  });

  test('refuse anything else: empty, zero, negative, fractional, spaced, out of order, repeated, unknown units', () => {
    for (const bad of ['', '0s', '0', '10', '-5s', '1.5h', '1 h', '30m1h', '5s5s', '1d', 'm', '10M', 'ms', ' 10m']) expect(parseDuration(bad), bad).toBeUndefined();
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) expect(parseDuration(bad), String(bad)).toBeUndefined();
  });

  test('format to the shortest string that reads back the same', () => {
    expect(formatDuration(5_400_000)).toBe('1h30m');
    expect(formatDuration(90_000)).toBe('1m30s');
    expect(formatDuration(7_205_250)).toBe('2h5s250ms');
    for (const ms of [1, 999, 1000, 61_001, 86_400_000]) expect(parseDuration(formatDuration(ms))).toBe(ms);
  });
});

describe('node deadlines', () => {
  test('are kept on the node (milliseconds, then-child or none) and round-trip through toData() and JSON', () => {
    expect(timedGraph.node('Servicing').deadline).toEqual({ afterMs: 600_000, then: 'Failed' });
    expect(timedGraph.node('Failed').deadline).toEqual({ afterMs: 90_000, then: undefined });
    expect(timedGraph.node('Running').deadline).toBeUndefined();
    const data = timedGraph.toData();
    expect(data.nodes.find((n) => n.name === 'Servicing')?.deadline).toEqual({ after: '10m', then: 'Failed' });
    expect(data.nodes.find((n) => n.name === 'Failed')?.deadline).toEqual({ after: '1m30s' });
    const again = loadGraph(JSON.parse(JSON.stringify(data)));
    expect(again.toData()).toEqual(data);
    expect(again.revision).toBe(timedGraph.revision);
  });

  test('are part of the revision (their duration and their edge); a graph without any keeps its former revision', () => {
    const variant = (deadline: { after: string; then?: 'Failed' | 'Running' } | undefined) =>
      loadGraph({
        name: 'database',
        entry: 'Start',
        nodes: {
          Start: { children: ['Running'] },
          Running: { children: ['Servicing', 'Stopping'] },
          Servicing: { children: ['Failed', 'Running', 'End'], ...(deadline === undefined ? {} : { deadline }) },
          Failed: { children: ['Running'] },
          Stopping: { children: ['End'] },
          End: {},
        },
      }).revision;
    const revisions = [variant(undefined), variant({ after: '10m', then: 'Failed' }), variant({ after: '11m', then: 'Failed' }), variant({ after: '10m', then: 'Running' }), variant({ after: '10m' })];
    expect(new Set(revisions).size).toBe(revisions.length);
    expect(variant({ after: '600s', then: 'Failed' })).toBe(variant({ after: '10m', then: 'Failed' }));
    // Pinned: the revision the database graph had before deadlines existed (crds/database.yaml publishes it).
    expect(databaseGraph.revision).toBe('cb0b55743d723c69');
  });

  test('every deadline problem at once, naming the node: a duration that is none, a then that is no child, on the entry, on a leaf', () => {
    const problems = problemsOf(() =>
      loadGraph({
        name: 'g',
        entry: 'A',
        nodes: {
          A: { children: ['B'], deadline: { after: '1m' } },
          B: { children: ['C', 'End'], deadline: { after: '10 minutes', then: 'A' } },
          C: { children: ['End'], deadline: { after: 0, then: 'End' } },
          End: { deadline: { after: '1h' } },
        },
      }),
    );
    expect(brief(problems)).toEqual(['deadline-on-entry:A', 'deadline-on-leaf:End', 'invalid-deadline:B', 'invalid-deadline:C', 'unknown-deadline-child:B']);
    expect(problems.find((p) => p.code === 'unknown-deadline-child')?.path).toEqual(['nodes', 1, 'deadline', 'then']);
    expect(problems.find((p) => p.node === 'B' && p.code === 'invalid-deadline')?.message).toContain('"10 minutes"');
    expect(brief(problemsOf(() => loadGraph({ name: 'g', entry: 'A', nodes: { A: { children: ['B'] }, B: { children: ['End'], deadline: { then: 'End' } }, End: {} } })))).toEqual(['schema:']);
  });

  test('a changed deadline is a node change of the diff', () => {
    const later = loadGraph({ ...timedGraph.toData(), nodes: timedGraph.toData().nodes.map((n) => (n.name === 'Servicing' ? { ...n, deadline: { after: '20m' } } : n)) });
    const diff = diffGraphs(timedGraph, later);
    expect(diff.same).toBe(false);
    expect(diff.changed).toEqual([{ node: 'Servicing', deadline: { before: { afterMs: 600_000, then: 'Failed' }, after: { afterMs: 1_200_000, then: null } } }]);
  });
});

describe('rendering deadlines', () => {
  test('Mermaid labels the timeout edge and notes a stalling deadline on its node', () => {
    const mermaid = renderMermaid(timedGraph);
    const id = (name: string) => `s${(timedGraph.nodeNames as readonly string[]).indexOf(name)}`;
    expect(mermaid).toContain(`  ${id('Servicing')} --> ${id('Failed')} : 1 timeout 10m\n`);
    expect(mermaid).toContain(`  ${id('Failed')} : deadline 1m30s, then stalls\n`);
    expect(mermaid).not.toContain(`${id('Running')} --> ${id('Servicing')} : 1 timeout`);
  });

  test('DOT labels the timeout edge (dotted) and notes a stalling deadline on its node', () => {
    const dot = renderDot(timedGraph);
    expect(dot).toContain('"Servicing" -> "Failed" [label="1 timeout 10m", style=dotted];');
    expect(dot).toContain('"Failed" [label="Failed", xlabel="deadline 1m30s, then stalls"];');
    expect(dot).toContain('"Running" -> "Servicing" [label="1"];');
  });
});
