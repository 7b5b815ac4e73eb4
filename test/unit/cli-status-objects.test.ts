// What `okt status` and `okt ui` say of each object a CR's inventory names: its readiness judged as
// the operator judges it (kstatus, or the declaration's `ready` when the graph's module is at hand).
import type { KubernetesObject, V1ConfigMap, V1Job } from '@kubernetes/client-node';
import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { NO_COLORS } from '../../src/cli/output.ts';
import { inventoryOf, objectView } from '../../src/cli/status-objects.ts';
import { renderStatusHtml, renderStatusText } from '../../src/cli/status-view.ts';
import { defineGraph, loadGraph } from '../../src/graph/index.ts';

const graph = defineGraph({
  name: 'backup',
  entry: 'Start',
  nodes: { Start: { children: ['Backup'] }, Backup: {} },
  objects: [
    { id: 'job', apiVersion: 'batch/v1', kind: 'Job', during: 'Backup', render: (): V1Job => ({ apiVersion: 'batch/v1', kind: 'Job' }) },
    { id: 'flag', apiVersion: 'v1', kind: 'ConfigMap', ready: (live) => (live as V1ConfigMap).data?.['ready'] === 'yes', render: (): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap' }) },
  ],
});
const job = { id: 'job', apiVersion: 'batch/v1', kind: 'Job', name: 'b-job', hash: 'h' };
const flag = { id: 'flag', apiVersion: 'v1', kind: 'ConfigMap', name: 'b-flag' };
const failedJob = { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'b-job' }, status: { conditions: [{ type: 'Failed', status: 'True', message: 'BackoffLimitExceeded' }] } };

describe('objectView', () => {
  test('kstatus\'s verdict with its message; missing when not found; deleting names the finalizers holding it', () => {
    expect(objectView(graph, job, failedJob)).toEqual({ id: 'job', kind: 'Job', name: 'b-job', readiness: 'Failed', message: 'Job Failed: BackoffLimitExceeded' });
    expect(objectView(graph, job, { ...failedJob, status: {} } as KubernetesObject)).toMatchObject({ readiness: 'InProgress', message: 'Job in progress' });
    expect(objectView(graph, job, undefined)).toMatchObject({ readiness: 'Missing', message: 'not found' });
    const held = { ...failedJob, metadata: { name: 'b-job', deletionTimestamp: new Date(), finalizers: ['example.com/hold'] } };
    expect(objectView(graph, job, held)).toMatchObject({ readiness: 'Deleting', message: 'being deleted, held by its finalizers: example.com/hold' });
  });

  test('the declaration\'s ready predicate when the graph\'s module is known; kstatus for a graph loaded from data', () => {
    const notYet = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'b-flag' }, data: {} };
    expect(objectView(graph, flag, notYet)).toMatchObject({ readiness: 'InProgress', message: 'its ready predicate says not yet' });
    expect(objectView(graph, flag, { ...notYet, data: { ready: 'yes' } } as KubernetesObject)).toMatchObject({ readiness: 'Ready', message: '' });
    expect(objectView(loadGraph(graph.toData()), flag, notYet)).toMatchObject({ readiness: 'Ready' });
  });

  test('inventoryOf takes the well-formed entries of a status read unchecked', () => {
    expect(inventoryOf({ objects: [job, { id: 'x' }, flag] })).toEqual([job, flag]);
    expect(inventoryOf(undefined)).toEqual([]);
  });
});

test('okt status draws one row per object, in text and HTML', () => {
  const view = {
    graph: databaseGraph,
    resource: { kind: 'Database', metadata: { name: 'pg', namespace: 'demo' }, spec: { desiredState: 'Running' } },
    now: new Date(),
    objects: [objectView(graph, job, failedJob), objectView(graph, flag, undefined)],
  };
  const lines = renderStatusText(view, NO_COLORS).split('\n');
  expect(lines).toContain('  OBJECT  KIND       NAME    READY    MESSAGE');
  expect(lines).toContain('  job     Job        b-job   Failed   Job Failed: BackoffLimitExceeded');
  expect(lines).toContain('  flag    ConfigMap  b-flag  Missing  not found');
  expect(renderStatusHtml(view)).toContain('<td>job</td><td>Job</td><td>b-job</td><td>Failed</td><td>Job Failed: BackoffLimitExceeded</td>');
});
