// Type-level checks: `npx tsc --noEmit` fails if any @ts-expect-error below stops being an error.
import type { V1ConfigMap, V1Job } from '@kubernetes/client-node';
import { expect, test } from 'vitest';
import { z } from 'zod';
import { databaseGraph } from '../../graphs/database.ts';
import { defineGraph, GraphDefinitionError, type StateOf } from '../../src/graph/index.ts';
import { decide } from '../../src/machine/index.ts';
import { createPlanner } from '../../src/plan/index.ts';

type DatabaseState = StateOf<typeof databaseGraph>;

test('state names are a literal union: a misspelt state is a compile error', () => {
  const desired: DatabaseState = 'Running';
  // @ts-expect-error 'Runing' is not a state of the database graph
  const misspelt: DatabaseState = 'Runing';
  const planner = createPlanner(databaseGraph);
  // @ts-expect-error the planner only takes states of its graph
  expect(() => planner.next('Start', 'Runing')).toThrow(/no node "Runing"/);
  // @ts-expect-error decide() only takes a state of its graph as the current node
  expect(() => decide(databaseGraph, 'Stoped', [])).toThrow(/no node "Stoped"/);
  expect([desired, misspelt]).toEqual(['Running', 'Runing']);
});

test('a misspelt child or entry in defineGraph is a compile error (and a runtime one)', () => {
  expect(() =>
    defineGraph({
      name: 'typo',
      entry: 'Start',
      // @ts-expect-error 'Ned' is not a key of nodes
      nodes: { Start: { children: ['Ned'] }, End: {} },
    }),
  ).toThrow(GraphDefinitionError);
  expect(() =>
    defineGraph({
      name: 'typo',
      // @ts-expect-error 'Strat' is not a key of nodes
      entry: 'Strat',
      nodes: { Start: { children: ['End'] }, End: {} },
    }),
  ).toThrow(GraphDefinitionError);
});

test('a misspelt deadline edge is a compile error (and a runtime one), and the node keeps its type', () => {
  expect(() =>
    defineGraph({
      name: 'typo',
      entry: 'Start',
      nodes: {
        Start: { children: ['Waiting'] },
        // @ts-expect-error 'Expird' is not a key of nodes
        Waiting: { children: ['Expired', 'End'], deadline: { after: '10m', then: 'Expird' } },
        Expired: { children: ['End'] },
        End: {},
      },
    }),
  ).toThrow(GraphDefinitionError);
  const graph = defineGraph({ name: 'ok', entry: 'Start', nodes: { Start: { children: ['Waiting'] }, Waiting: { children: ['End'], deadline: { after: '1m', then: 'End' } }, End: {} } });
  const then: 'Start' | 'Waiting' | 'End' | undefined = graph.node('Waiting').deadline?.then;
  expect(then).toBe('End');
});

test('objects: a lifetime names nodes of the graph, render gets the graph\'s params typed and returns an object', () => {
  const base = { name: 'objects', entry: 'Start', params: z.object({ image: z.string() }), nodes: { Start: { children: ['End'] }, End: {} } } as const;
  const graph = defineGraph({
    ...base,
    objects: [
      {
        id: 'config',
        apiVersion: 'v1',
        kind: 'ConfigMap',
        render: ({ params, node }): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', data: { image: params.image, node } }),
      },
      {
        id: 'job',
        apiVersion: 'batch/v1',
        kind: 'Job',
        during: { from: 'Start', until: 'End' },
        ready: (job: V1Job) => job.status?.succeeded === 1,
        render: (): V1Job => ({ apiVersion: 'batch/v1', kind: 'Job' }),
      },
    ],
  });
  expect(graph.objects.map((o) => o.id)).toEqual(['config', 'job']);
  // @ts-expect-error 'Ned' is not a node of the graph
  expect(() => defineGraph({ ...base, objects: [{ id: 'a', apiVersion: 'v1', kind: 'ConfigMap', during: 'Ned', render: () => ({}) }] })).toThrow(GraphDefinitionError);
  // @ts-expect-error the graph's params have no 'tag'
  expect(defineGraph({ ...base, objects: [{ id: 'a', apiVersion: 'v1', kind: 'ConfigMap', render: ({ params }) => ({ kind: params.tag }) }] }).objects).toHaveLength(1);
  // @ts-expect-error render returns a Kubernetes object
  expect(defineGraph({ ...base, objects: [{ id: 'a', apiVersion: 'v1', kind: 'ConfigMap', render: () => 3 }] }).objects).toHaveLength(1);
});
