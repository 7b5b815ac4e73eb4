import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { defineGraph, fateOf, loadGraph } from '../../src/graph/index.ts';
import { brief, problemsOf } from '../fixtures/graph-problems.ts';

const v1 = databaseGraph;
const v2 = defineGraph({
  name: 'database',
  entry: 'Start',
  previous: [v1],
  migrations: { removed: { Servicing: 'Serving', Stopping: { refuse: 'stop it on revision 1 first' } } },
  nodes: {
    Start: { children: ['Serving'] },
    Serving: { formerly: ['Running'], children: ['End'] },
    End: {},
  },
});

describe('graph revisions', () => {
  test('a revision hashes what the graph does: descriptions, node order and formerly leave it alone, an edge changes it', () => {
    const data = databaseGraph.toData();
    expect(databaseGraph.revision).toMatch(/^[0-9a-f]{16}$/);
    expect(loadGraph({ ...data, description: 'other words', nodes: [...data.nodes].reverse() }).revision).toBe(databaseGraph.revision);
    const withRetryDefault = loadGraph({ ...data, nodes: data.nodes.map((n) => (n.name === 'Servicing' ? { ...n, retry: { attempts: 2 } } : n)) });
    const withRetryExplicit = loadGraph({ ...data, nodes: data.nodes.map((n) => (n.name === 'Servicing' ? { ...n, retry: { attempts: 2, backoffMs: 1000 } } : n)) });
    expect(withRetryDefault.revision).toBe(withRetryExplicit.revision);
    expect(withRetryDefault.revision).not.toBe(databaseGraph.revision);
    const reordered = loadGraph({ ...data, nodes: data.nodes.map((n) => (n.name === 'Running' ? { ...n, children: ['Stopping', 'Servicing'] } : n)) });
    expect(reordered.revision).not.toBe(databaseGraph.revision);
  });

  test('each case of the cancellable policy is part of the revision; cancelled on nothing is no policy', () => {
    const data = databaseGraph.toData();
    const servicing = (cancellable: unknown) => loadGraph({ ...data, nodes: data.nodes.map((n) => (n.name === 'Servicing' ? { ...n, cancellable } : n)) }).revision;
    expect(servicing(false)).toBe(databaseGraph.revision);
    expect(servicing({ onDelete: false })).toBe(databaseGraph.revision);
    expect(servicing({ onDelete: true, onDesiredChange: true })).toBe(servicing(true));
    const revisions = [databaseGraph.revision, servicing(true), servicing({ onDelete: true }), servicing({ onDesiredChange: true })];
    expect(new Set(revisions).size).toBe(4);
  });

  test("the entry node's onDelete is part of the revision, even naming its default child; without one the revision is the one it had before deletion stopped taking the entry's default child", () => {
    const data = databaseGraph.toData();
    const entryOnDelete = (onDelete: string) => loadGraph({ ...data, nodes: data.nodes.map((n) => (n.name === 'Start' ? { ...n, onDelete } : n)) });
    // Pinned before that change (graph-deadline.test.ts pins it too): CRs recorded under it keep their revision.
    expect(databaseGraph.revision).toBe('cb0b55743d723c69');
    const declared = entryOnDelete('Running');
    expect(declared.node('Start').deletionChild).toBe('Running');
    expect(databaseGraph.node('Start').deletionChild).toBeUndefined();
    expect(declared.revision).not.toBe(databaseGraph.revision);
    expect(declared.toData().nodes.find((n) => n.name === 'Start')?.onDelete).toBe('Running');
    expect(loadGraph(JSON.parse(JSON.stringify(declared.toData()))).revision).toBe(declared.revision);
  });

  test('the fate of a node of an earlier revision: kept, renamed, moved, refused, stranded', () => {
    expect(fateOf(v2, 'End')).toEqual({ kind: 'kept', node: 'End' });
    expect(fateOf(v2, 'Running')).toEqual({ kind: 'renamed', node: 'Serving' });
    expect(fateOf(v2, 'Servicing')).toEqual({ kind: 'moved', node: 'Serving' });
    expect(fateOf(v2, 'Stopping')).toEqual({ kind: 'refused', reason: 'stop it on revision 1 first' });
    expect(fateOf(v2, 'Elsewhere')).toEqual({ kind: 'stranded' });
  });

  test('migrations, formerly and earlier revisions round-trip through toData() and JSON', () => {
    const again = loadGraph(JSON.parse(JSON.stringify(v2.toData())));
    expect(again.toData()).toEqual(v2.toData());
    expect(again.revision).toBe(v2.revision);
    expect(again.previous.map((g) => g.revision)).toEqual([v1.revision]);
    expect(again.migrations.policy).toBe('Automatic');
    expect(again.node('Serving').formerly).toEqual(['Running']);
  });

  test('every problem of the migration declarations is named', () => {
    expect(
      brief(problemsOf(() =>
        loadGraph({
          name: 'database',
          entry: 'Start',
          previous: [v1.toData(), { ...v1.toData(), name: 'other' }],
          migrations: { removed: { Serving: 'End', Running: 'End', Gone: 'Nowhere' } },
          nodes: { Start: { children: ['Serving'] }, Serving: { formerly: ['Running', 'End', 'bad name'], children: ['End'] }, End: { formerly: ['Running'] } },
        }),
      )),
    ).toEqual([
      'formerly-conflict:End',
      'formerly-conflict:Serving',
      'invalid-name:Serving',
      'previous-revision:',
      'removed-conflict:Running',
      'removed-conflict:Serving',
      'unknown-migration-target:Gone',
      'unmapped-node:Servicing',
      'unmapped-node:Stopping',
    ]);
  });
});
