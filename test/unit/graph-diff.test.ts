import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { formatGraphDiff } from '../../src/cli/graph-diff.ts';
import { NO_COLORS } from '../../src/cli/output.ts';
import { defineGraph, diffGraphs, loadGraph, type GraphData, type NodeData } from '../../src/graph/index.ts';

const v1 = databaseGraph;
const data = v1.toData();

/** The database graph with some nodes' data replaced (and the rest of the graph as given). */
function withNodes(changes: Record<string, Partial<NodeData>>, rest: Partial<GraphData> = {}) {
  return loadGraph({ ...data, ...rest, nodes: data.nodes.map((n) => ({ ...n, ...changes[n.name] })) });
}

const noNodeChanges = { added: [], removed: [], renamed: [] };

describe('diffGraphs', () => {
  test('a graph against itself, or against the same graph in other words and node order, is the same', () => {
    const reworded = loadGraph({ ...data, description: 'other words', nodes: [...data.nodes].reverse().map((n) => ({ ...n, description: 'x' })) });
    for (const next of [v1, reworded]) {
      expect(diffGraphs(v1, next)).toEqual({
        from: { graph: 'database', revision: v1.revision },
        to: { graph: 'database', revision: v1.revision },
        same: true,
        nodes: noNodeChanges,
        changed: [],
      });
    }
  });

  test('a rename with the same structure reports the rename only, the entry included', () => {
    const renamed = defineGraph({
      name: 'database',
      entry: 'Begin',
      nodes: {
        Begin: { formerly: ['Start'], children: ['Serving'] },
        Serving: { formerly: ['Running'], children: ['Servicing', 'Stopping'] },
        Servicing: { children: ['Serving', 'End'] },
        Stopping: { children: ['End'] },
        End: {},
      },
    });
    const diff = diffGraphs(v1, renamed);
    expect(diff.same).toBe(false);
    expect(diff.nodes).toEqual({ added: [], removed: [], renamed: [{ from: 'Start', to: 'Begin' }, { from: 'Running', to: 'Serving' }] });
    expect(diff.changed).toEqual([]);
    expect(diff.entry).toBeUndefined();
    expect(diff.to.revision).not.toBe(diff.from.revision);
  });

  test('added, removed (with where their CRs go), renamed, and the renamed node compared with its old self', () => {
    const v2 = defineGraph({
      name: 'database',
      entry: 'Start',
      migrations: { policy: 'Manual', removed: { Servicing: 'Serving', Stopping: { refuse: 'stop it on revision 1 first' } } },
      nodes: {
        Start: { children: ['Serving'] },
        Serving: { formerly: ['Running'], children: ['Draining', 'End'] },
        Draining: { children: ['End'] },
        End: {},
      },
    });
    const diff = diffGraphs(v1, v2);
    expect(diff.nodes).toEqual({
      added: ['Draining'],
      removed: [
        { node: 'Servicing', fate: { kind: 'moved', node: 'Serving' } },
        { node: 'Stopping', fate: { kind: 'refused', reason: 'stop it on revision 1 first' } },
      ],
      renamed: [{ from: 'Running', to: 'Serving' }],
    });
    // Start's child Running is Serving now: no change there.
    expect(diff.changed).toEqual([
      {
        node: 'Serving',
        children: { before: ['Servicing', 'Stopping'], after: ['Draining', 'End'], reordered: false },
        defaultChild: { before: 'Stopping', after: 'End' },
      },
    ]);
    expect(diff.policy).toEqual({ before: 'Automatic', after: 'Manual' });
    expect(diff.same).toBe(false);
    expect(formatGraphDiff(diff, NO_COLORS)).toBe(
      [
        `graph "database": ${v1.revision} -> ${v2.revision}`,
        '+ node Draining',
        '- node Servicing (CRs go to Serving)',
        '- node Stopping (refused: stop it on revision 1 first)',
        '~ node Running -> Serving (renamed)',
        '~ migration policy Automatic -> Manual',
        '~ Serving: children [Servicing, Stopping] -> [Draining, End]; default Stopping -> End',
        '',
      ].join('\n'),
    );
  });

  test('a removed node nothing maps is stranded', () => {
    const withoutServicing = loadGraph({ ...data, nodes: data.nodes.filter((n) => n.name !== 'Servicing').map((n) => (n.name === 'Running' ? { ...n, children: ['Stopping'] } : n)) });
    const diff = diffGraphs(v1, withoutServicing);
    expect(diff.nodes.removed).toEqual([{ node: 'Servicing', fate: { kind: 'stranded' } }]);
    // The default child stayed Stopping: only what changed is printed.
    expect(formatGraphDiff(diff, NO_COLORS)).toContain('\n- node Servicing (stranded: no migration)\n~ Running: children [Servicing, Stopping] -> [Stopping]\n');
  });

  test('priorities: the same children in another order are reordered, and the default moves', () => {
    const diff = diffGraphs(v1, withNodes({ Running: { children: ['Stopping', 'Servicing'] } }));
    expect(diff.changed).toEqual([
      { node: 'Running', children: { before: ['Servicing', 'Stopping'], after: ['Stopping', 'Servicing'], reordered: true }, defaultChild: { before: 'Stopping', after: 'Servicing' } },
    ]);
    expect(formatGraphDiff(diff, NO_COLORS)).toContain('~ Running: children [Servicing, Stopping] -> [Stopping, Servicing] (reordered); default Stopping -> Servicing\n');
  });

  test('a child added behind the others keeps their order: not reordered', () => {
    const diff = diffGraphs(v1, withNodes({ Running: { children: ['Servicing', 'End', 'Stopping'] } }));
    expect(diff.changed).toEqual([{ node: 'Running', children: { before: ['Servicing', 'Stopping'], after: ['Servicing', 'End', 'Stopping'], reordered: false } }]);
  });

  test('a new trigger is a trigger change, not a change of the declared children', () => {
    const diff = diffGraphs(v1, withNodes({ Running: { triggers: ['End'] } }));
    expect(diff.changed).toEqual([{ node: 'Running', triggers: { before: [], after: ['End'], reordered: false } }]);
    expect(formatGraphDiff(diff, NO_COLORS)).toContain('~ Running: triggers [] -> [End]\n');
  });

  test('retry, cancellable and onDelete changes; an onDelete equal to the default child is no onDelete', () => {
    const next = withNodes({ Running: { retry: { attempts: 3 }, cancellable: true, onDelete: 'Servicing' }, Stopping: { onDelete: 'End' } });
    const diff = diffGraphs(v1, next);
    expect(diff.changed).toEqual([
      {
        node: 'Running',
        retry: { before: null, after: { attempts: 3, backoffMs: 1000 } },
        cancellable: { before: { onDelete: false, onDesiredChange: false }, after: { onDelete: true, onDesiredChange: true } },
        onDelete: { before: null, after: 'Servicing' },
      },
    ]);
    expect(formatGraphDiff(diff, NO_COLORS)).toContain('~ Running: retry none -> 3 attempts, backoff 1000ms; cancellable no -> yes; onDelete none -> Servicing\n');
    expect(diffGraphs(next, v1).changed[0]).toMatchObject({ onDelete: { before: 'Servicing', after: null }, retry: { before: { attempts: 3 }, after: null } });
  });

  test('a cancellable policy narrowed to one case is a change, named by its case', () => {
    const both = withNodes({ Servicing: { cancellable: true } });
    const diff = diffGraphs(both, withNodes({ Servicing: { cancellable: { onDesiredChange: true } } }));
    expect(diff.changed).toEqual([{ node: 'Servicing', cancellable: { before: { onDelete: true, onDesiredChange: true }, after: { onDelete: false, onDesiredChange: true } } }]);
    expect(formatGraphDiff(diff, NO_COLORS)).toContain('~ Servicing: cancellable yes -> on desired change\n');
    expect(formatGraphDiff(diffGraphs(v1, withNodes({ Servicing: { cancellable: { onDelete: true } } })), NO_COLORS)).toContain('cancellable no -> on delete');
  });

  test('a new entry: the entry changes, and the old entry gains an action', () => {
    const next = loadGraph({ ...data, entry: 'Boot', nodes: [{ name: 'Boot', children: ['Start'] }, ...data.nodes] });
    const diff = diffGraphs(v1, next);
    expect(diff.entry).toEqual({ before: 'Start', after: 'Boot' });
    expect(diff.nodes.added).toEqual(['Boot']);
    expect(diff.changed).toEqual([{ node: 'Start', action: { before: false, after: true } }]);
    expect(formatGraphDiff(diff, NO_COLORS)).toContain('\n+ node Boot\n~ entry Start -> Boot\n~ Start: action no -> yes\n');
  });

  test('a node merged into one that kept its name is compared with its namesake', () => {
    const merged = loadGraph({
      ...data,
      nodes: data.nodes.filter((n) => n.name !== 'Stopping').map((n) => (n.name === 'Running' ? { ...n, children: ['Servicing', 'End'] } : n.name === 'End' ? { ...n, formerly: ['Stopping'] } : n)),
    });
    const diff = diffGraphs(v1, merged);
    expect(diff.nodes).toEqual({ added: [], removed: [], renamed: [{ from: 'Stopping', to: 'End' }] });
    // Running's old default Stopping is End now, so its children did not change; End stayed a leaf.
    expect(diff.changed).toEqual([]);
  });

  test('another graph name is a difference, even with nothing else changed', () => {
    const diff = diffGraphs(v1, loadGraph({ ...data, name: 'db' }));
    expect(diff).toMatchObject({ same: false, from: { graph: 'database' }, to: { graph: 'db' }, nodes: noNodeChanges, changed: [] });
    expect(formatGraphDiff(diff, NO_COLORS)).toBe(`graph "database" ${v1.revision} -> graph "db" ${diff.to.revision}\n`);
  });

  test('no change prints one line with the revision', () => {
    expect(formatGraphDiff(diffGraphs(v1, v1), NO_COLORS)).toBe(`graph "database": no change (revision ${v1.revision})\n`);
  });
});
