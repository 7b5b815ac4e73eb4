import { describe, expect, test } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { databaseGraph } from '../../graphs/database.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import {
  conditionTypeProblem,
  nodeConditionType,
  defineGraph,
  GraphDefinitionError,
  loadGraph,
  renderMermaid,
  type Graph,
} from '../../src/graph/index.ts';
import { brief, problemsOf } from '../fixtures/graph-problems.ts';


describe('defineGraph', () => {
  test('builds nodes with children in priority order, the last as default', () => {
    const running = databaseGraph.node('Running');
    expect(running.children).toEqual(['Servicing', 'Stopping']);
    expect(running.defaultChild).toBe('Stopping');
    expect(running.isLeaf).toBe(false);
    expect(databaseGraph.entry).toBe('Start');
    expect(databaseGraph.nodeNames).toEqual(['Start', 'Running', 'Servicing', 'Stopping', 'End']);
  });

  test('the entry node and the leaves have no action, every other node has one', () => {
    const actions = databaseGraph.nodeNames.map((n) => [n, databaseGraph.node(n).hasAction]);
    expect(Object.fromEntries(actions)).toEqual({ Start: false, Running: true, Servicing: true, Stopping: true, End: false });
    expect(databaseGraph.node('End').isLeaf).toBe(true);
    expect(databaseGraph.node('End').defaultChild).toBeUndefined();
  });

  test('triggers come before the declared children and never become the default', () => {
    const checker = reconciliationGraph.node('CRChecker');
    expect(checker.children).toEqual(['ErrorManager', 'GiveupManager', 'CRFinalizer', 'ObjectsGetter']);
    expect(checker.triggers).toEqual(['ErrorManager', 'GiveupManager']);
    expect(checker.defaultChild).toBe('ObjectsGetter');
    expect(reconciliationGraph.node('ErrorManager').children).toEqual(['GiveupManager', 'End']);
  });

  test('has() tells node names apart; node() rejects an unknown name', () => {
    expect(databaseGraph.has('Running')).toBe(true);
    expect(databaseGraph.has('Runing')).toBe(false);
    expect(() => databaseGraph.node('Runing' as 'Running')).toThrow(/no node "Runing"/);
  });

  test('accepts a declared action that agrees with the rule', () => {
    const g = defineGraph({ name: 'g', entry: 'A', nodes: { A: { children: ['B'], action: false }, B: { children: ['C'], action: true }, C: { action: false } } });
    expect(g.node('B').hasAction).toBe(true);
  });

  test('a single-node graph is valid: its entry is also its leaf', () => {
    const g = defineGraph({ name: 'one', entry: 'Only', nodes: { Only: {} } });
    expect(g.node('Only').isLeaf).toBe(true);
  });
});

describe('validation: every problem, at once, naming the node and the reason', () => {
  test('unknown child and unknown trigger', () => {
    const problems = problemsOf(() =>
      loadGraph({ name: 'g', entry: 'A', nodes: [{ name: 'A', children: ['B', 'Nope'], triggers: ['Ghost'] }, { name: 'B' }] }),
    );
    expect(brief(problems)).toEqual(['unknown-child:A', 'unknown-child:A']);
    expect(problems.map((p) => p.message).join('\n')).toMatch(/node "A": child "Nope" is not a node of the graph/);
    expect(problems.find((p) => p.message.includes('Ghost'))?.path).toEqual(['nodes', 0, 'triggers', 0]);
  });

  test('unknown entry', () => {
    expect(brief(problemsOf(() => loadGraph({ name: 'g', entry: 'X', nodes: [{ name: 'A' }] })))).toEqual(['unknown-entry:X']);
  });

  test('duplicate node', () => {
    const problems = problemsOf(() => loadGraph({ name: 'g', entry: 'A', nodes: [{ name: 'A', children: ['B'] }, { name: 'B' }, { name: 'B' }] }));
    expect(brief(problems)).toEqual(['duplicate-node:B']);
    expect(problems[0]?.path).toEqual(['nodes', 2, 'name']);
  });

  test('duplicate child, within children and across children and triggers', () => {
    const problems = problemsOf(() =>
      loadGraph({ name: 'g', entry: 'A', nodes: [{ name: 'A', children: ['B', 'B'] }, { name: 'B', triggers: ['C'], children: ['C'] }, { name: 'C' }] }),
    );
    expect(brief(problems)).toEqual(['duplicate-child:A', 'duplicate-child:B']);
  });

  test('no entry node: every node has a parent', () => {
    const problems = problemsOf(() => loadGraph({ name: 'g', nodes: [{ name: 'A', children: ['B'] }, { name: 'B', children: ['A'] }] }));
    expect(brief(problems)).toContain('no-entry:');
  });

  test('several entry nodes', () => {
    const problems = problemsOf(() => loadGraph({ name: 'g', nodes: [{ name: 'A', children: ['C'] }, { name: 'B', children: ['C'] }, { name: 'C' }] }));
    expect(brief(problems)).toEqual(['several-entries:']);
    expect(problems[0]?.message).toMatch(/"A", "B"/);
  });

  test('the entry is inferred when only one node has no parent', () => {
    const g = loadGraph({ name: 'g', nodes: [{ name: 'B', children: ['C'] }, { name: 'A', children: ['B'] }, { name: 'C' }] });
    expect(g.entry).toBe('A');
  });

  test('unreachable node', () => {
    const problems = problemsOf(() =>
      defineGraph({ name: 'g', entry: 'A', nodes: { A: { children: ['End'] }, Lost: { children: ['End'] }, End: {} } }),
    );
    expect(brief(problems)).toEqual(['unreachable:Lost']);
  });

  test('trap: no leaf reachable', () => {
    const problems = problemsOf(() =>
      defineGraph({ name: 'g', entry: 'A', nodes: { A: { children: ['B', 'End'] }, B: { children: ['C'] }, C: { children: ['B'] }, End: {} } }),
    );
    expect(brief(problems)).toEqual(['trap:B', 'trap:C']);
    expect(problems[0]?.message).toMatch(/no leaf is reachable/);
  });

  test('action on the entry, action on a leaf, missing action on an inner node', () => {
    const problems = problemsOf(() =>
      defineGraph({ name: 'g', entry: 'A', nodes: { A: { children: ['B'], action: true }, B: { children: ['C'], action: false }, C: { action: true } } }),
    );
    expect(brief(problems)).toEqual(['action-on-entry:A', 'action-on-leaf:C', 'missing-action:B']);
  });

  test('triggers without a default child', () => {
    const problems = problemsOf(() => defineGraph({ name: 'g', entry: 'A', nodes: { A: { triggers: ['B'] }, B: {} } }));
    expect(brief(problems)).toEqual(['triggers-without-default:A']);
  });

  test('a name that is not a Kubernetes condition type', () => {
    const problems = problemsOf(() =>
      loadGraph({ name: 'g', entry: 'A', nodes: [{ name: 'A', children: ['bad name', '-Dash', 'Ok_1'] }, { name: 'bad name' }, { name: '-Dash' }, { name: 'Ok_1' }] }),
    );
    expect(brief(problems)).toEqual(['invalid-name:-Dash', 'invalid-name:bad name']);
  });

  test('condition type names: optional DNS prefix, 63-character name part, 316 overall', () => {
    expect(conditionTypeProblem('Running')).toBeUndefined();
    expect(conditionTypeProblem('db.example.com/Running')).toBeUndefined();
    expect(conditionTypeProblem('Db.Example/Running')).toMatch(/prefix/);
    expect(conditionTypeProblem('a/b/c')).toBeDefined();
    expect(conditionTypeProblem('x'.repeat(63))).toBeUndefined();
    expect(conditionTypeProblem('x'.repeat(64))).toMatch(/63/);
    expect(conditionTypeProblem(`${'a'.repeat(253)}/${'b'.repeat(63)}`)).toMatch(/316/);
    expect(conditionTypeProblem('')).toMatch(/empty/);
  });

  test('reserved name: only DefaultState (the event); Ready, Reconciling and Stalled are node names like any other', () => {
    const problems = problemsOf(() => loadGraph({ name: 'g', entry: 'A', nodes: [{ name: 'A', children: ['DefaultState'] }, { name: 'DefaultState' }] }));
    expect(brief(problems)).toEqual(['reserved-name:DefaultState']);
    for (const kstatus of ['Ready', 'Reconciling', 'Stalled']) {
      const graph = loadGraph({ name: 'g', entry: 'A', nodes: [{ name: 'A', children: [kstatus] }, { name: kstatus }] });
      expect(graph.has(kstatus)).toBe(true);
      expect(nodeConditionType(kstatus)).toBe(`node.okt.dev/${kstatus}`);
    }
    expect(nodeConditionType('Running')).toBe('Running');
  });

  test('two nodes whose conditions would share a type are refused', () => {
    const problems = problemsOf(() => loadGraph({ name: 'g', entry: 'A', nodes: { A: { children: ['Ready', 'node.okt.dev/Ready'] }, Ready: {}, 'node.okt.dev/Ready': {} } }));
    expect(brief(problems)).toEqual(['condition-collision:node.okt.dev/Ready']);
  });

  test('node policies: retry and cancellable need an action, onDelete names a child, and deletion never loops', () => {
    const problems = problemsOf(() =>
      loadGraph({
        name: 'g',
        entry: 'A',
        nodes: {
          A: { children: ['B'], retry: { attempts: 2 } },
          B: { children: ['C', 'End'], onDelete: 'A' },
          C: { children: ['D'] },
          D: { children: ['End', 'C'] },
          End: { cancellable: true },
        },
      }),
    );
    expect(brief(problems)).toEqual(['deletion-cycle:C', 'policy-without-action:A', 'policy-without-action:End', 'unknown-delete-child:B']);
    expect(problems.find((p) => p.code === 'deletion-cycle')?.message).toContain('"C" -> "D"');
    expect(problems.find((p) => p.code === 'unknown-delete-child')?.path).toEqual(['nodes', 1, 'onDelete']);
    expect(brief(problemsOf(() => loadGraph({ name: 'g', entry: 'A', nodes: { A: { children: ['B'] }, B: { children: ['End'], retry: { attempts: 0 } }, End: {} } })))).toEqual(['schema:']);
  });

  test('node policies are kept: retry with its default backoff, cancellable, onDelete, and they round-trip through toData()', () => {
    const graph = defineGraph({
      name: 'g',
      entry: 'A',
      nodes: { A: { children: ['B'] }, B: { children: ['Drain', 'End'], retry: { attempts: 3 }, cancellable: true, onDelete: 'Drain' }, Drain: { children: ['End'] }, End: {} },
    });
    // `cancellable: true` cancels on both a deletion and a change of spec.desiredState.
    expect(graph.node('B')).toMatchObject({ retry: { attempts: 3, backoffMs: 1000 }, cancellable: { onDelete: true, onDesiredChange: true }, deletionChild: 'Drain', defaultChild: 'End' });
    expect(graph.node('Drain')).toMatchObject({ retry: undefined, cancellable: { onDelete: false, onDesiredChange: false }, deletionChild: 'End' });
    expect(graph.node('End').deletionChild).toBeUndefined();
    expect(loadGraph(JSON.parse(JSON.stringify(graph.toData()))).toData()).toEqual(graph.toData());
  });

  test("deletion takes no child from the entry node unless it declares onDelete: its default child leads into the lifecycle; the path may end there", () => {
    const graph = defineGraph({ name: 'g', entry: 'A', nodes: { A: { children: ['B'] }, B: { children: ['A', 'End'], onDelete: 'A' }, End: {} } });
    expect(graph.node('A').deletionChild).toBeUndefined();
    expect(graph.node('B').deletionChild).toBe('A');
    // A -> B -> A loops by default children; deletion ends at A, so it is no deletion cycle.
    const declared = problemsOf(() => loadGraph({ name: 'g', entry: 'A', nodes: { A: { children: ['B'], onDelete: 'B' }, B: { children: ['A', 'End'], onDelete: 'A' }, End: {} } }));
    expect(brief(declared)).toEqual(['deletion-cycle:A']);
  });

  test('cancellable names its cases: one alone, both (written back as true), none; the object form needs an action too', () => {
    const nodes = (cancellable: unknown) => ({ A: { children: ['B'] }, B: { children: ['End'], cancellable }, End: {} });
    const policyOf = (cancellable: unknown) => loadGraph({ name: 'g', entry: 'A', nodes: nodes(cancellable) }).node('B').cancellable;
    expect(policyOf({ onDesiredChange: true })).toEqual({ onDelete: false, onDesiredChange: true });
    expect(policyOf({ onDelete: true })).toEqual({ onDelete: true, onDesiredChange: false });
    expect(policyOf({})).toEqual({ onDelete: false, onDesiredChange: false });
    const dataOf = (cancellable: unknown) => loadGraph({ name: 'g', entry: 'A', nodes: nodes(cancellable) }).toData().nodes.find((n) => n.name === 'B')?.cancellable;
    expect(dataOf({ onDesiredChange: true })).toEqual({ onDesiredChange: true });
    expect(dataOf({ onDelete: true, onDesiredChange: false })).toEqual({ onDelete: true });
    expect(dataOf({ onDelete: true, onDesiredChange: true })).toBe(true);
    expect(dataOf({ onDelete: false })).toBeUndefined();
    const problems = problemsOf(() =>
      loadGraph({ name: 'g', entry: 'A', nodes: { A: { children: ['B'], cancellable: { onDesiredChange: true } }, B: { children: ['End'] }, End: { cancellable: { onDelete: true } } } }),
    );
    expect(brief(problems)).toEqual(['policy-without-action:A', 'policy-without-action:End']);
    expect(brief(problemsOf(() => loadGraph({ name: 'g', entry: 'A', nodes: nodes({ onChange: true }) })))).toEqual(['schema:']);
  });

  test('reports every problem of a graph at once, and lists them in the message', () => {
    const error = (() => {
      try {
        loadGraph({ name: 'broken', entry: 'A', nodes: [{ name: 'A', children: ['DefaultState', 'Missing'], action: true }, { name: 'DefaultState' }, { name: 'Orphan' }] });
      } catch (e) {
        return e as GraphDefinitionError;
      }
      throw new Error('expected an error');
    })();
    expect(brief([...error.problems])).toEqual(['action-on-entry:A', 'reserved-name:DefaultState', 'unknown-child:A', 'unreachable:Orphan']);
    expect(error.message).toMatch(/^graph "broken" is invalid \(4 problems\)/);
    expect(error.graph).toBe('broken');
  });
});

describe('loadGraph from plain data', () => {
  test('round-trips through toData() and JSON', () => {
    for (const graph of [databaseGraph, reconciliationGraph] as Graph[]) {
      const again = loadGraph(JSON.parse(JSON.stringify(graph.toData())));
      expect(again.toData()).toEqual(graph.toData());
      expect(again.nodeNames.map((n) => again.node(n))).toEqual(graph.nodeNames.map((n) => graph.node(n)));
    }
  });

  test('loads YAML with nodes as a map keyed by name', () => {
    const graph = loadGraph(
      parseYaml(`
name: database
entry: Start
nodes:
  Start: { children: [Running] }
  Running: { children: [Servicing, Stopping] }
  Servicing: { children: [Running, End] }
  Stopping: { children: [End] }
  End: {}
`),
    );
    expect(graph.toData().nodes.map((n) => [n.name, n.children])).toEqual(
      databaseGraph.toData().nodes.map((n) => [n.name, n.children]),
    );
  });

  test('shape errors come back as zod issues with their paths', () => {
    let error: GraphDefinitionError | undefined;
    try {
      loadGraph({ name: '', nodes: [{ name: 'A', childs: ['B'] }, { name: 3 }] });
    } catch (e) {
      error = e as GraphDefinitionError;
    }
    expect(error).toBeInstanceOf(GraphDefinitionError);
    const paths = error!.issues.map((i) => i.path.join('.'));
    expect(paths).toEqual(expect.arrayContaining(['name']));
    expect(error!.problems.every((p) => p.code === 'schema')).toBe(true);
    expect(error!.message).toMatch(/childs|nodes/);
  });

  test('rejects what is not an object at all', () => {
    expect(() => loadGraph(null)).toThrow(GraphDefinitionError);
    expect(() => loadGraph('database')).toThrow(/invalid/);
  });
});

describe('renderMermaid', () => {
  test('draws every edge with its priority and role, the entry and the leaves', () => {
    const text = renderMermaid(databaseGraph);
    expect(text).toContain('stateDiagram-v2');
    expect(text).toContain('state "Running" as s1');
    expect(text).toContain('[*] --> s0');
    expect(text).toContain('s1 --> s2 : 1\n');
    expect(text).toContain('s1 --> s3 : 2 default');
    expect(text).toContain('s4 --> [*]');
    expect(renderMermaid(reconciliationGraph)).toContain('s0 --> s6 : 1 trigger');
  });
});
