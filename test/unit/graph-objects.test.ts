// The objects a graph makes: declared at three lifetimes, checked when the graph is defined (every
// problem at once), kept as data without their functions, and rendered per node with okt's labels
// and the owner reference. Applying them is the operator's (test/unit/lifecycle-objects.test.ts, test/e2e/operator-objects.test.ts).
import type { V1ConfigMap, V1Deployment, V1Job, V1PersistentVolumeClaim, V1Service } from '@kubernetes/client-node';
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import {
  defineGraph,
  diffGraphs,
  loadGraph,
  OBJECT_LABELS,
  makesObjectsAt,
  objectsAt,
  renderDot,
  renderMermaid,
  renderObjects,
  sidecarServiceUrl,
  type GraphData,
  type ObjectOwner,
} from '../../src/graph/index.ts';
import { describeValid } from '../../src/cli/graph.ts';
import { formatGraphDiff } from '../../src/cli/graph-diff.ts';
import { NO_COLORS } from '../../src/cli/output.ts';
import { generateCrd, publishedGraph } from '../../src/kube/crd.ts';
import { loadGraphFile } from '../../src/cli/graph-module.ts';
import { problemsOf } from '../fixtures/graph-problems.ts';
import { tempFiles } from '../fixtures/temp-files.ts';

const nodes = {
  Start: { children: ['Running'] },
  Running: { children: ['Servicing', 'Stopping'] },
  Servicing: { children: ['Running', 'End'] },
  Stopping: { children: ['End'] },
  End: {},
} as const;

/** The database, making its workload and Service (the graph's), its data (kept), a backup Job in Servicing, a config from Running until Stopping. */
function appGraph() {
  return defineGraph({
    name: 'app',
    entry: 'Start',
    params: z.object({ image: z.string(), replicas: z.number().int().min(1).default(1) }),
    nodes,
    objects: [
      {
        id: 'workload',
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        render: ({ name, params, node }): V1Deployment => ({
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          metadata: { labels: { app: name } },
          spec: {
            replicas: node === 'Stopping' ? 0 : params.replicas,
            selector: { matchLabels: { app: name } },
            template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'db', image: params.image }] } },
          },
        }),
        ready: (live: V1Deployment) => (live.status?.readyReplicas ?? 0) >= 1,
      },
      {
        id: 'service',
        apiVersion: 'v1',
        kind: 'Service',
        render: ({ name, namespace }): V1Service => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace }, spec: { selector: { app: name }, ports: [{ port: 5432 }] } }),
      },
      {
        id: 'data',
        apiVersion: 'v1',
        kind: 'PersistentVolumeClaim',
        name: 'data',
        deletion: 'Keep',
        render: (): V1PersistentVolumeClaim => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }),
      },
      {
        id: 'backup',
        apiVersion: 'batch/v1',
        kind: 'Job',
        name: 'backup',
        during: 'Servicing',
        render: ({ params }): V1Job => ({ apiVersion: 'batch/v1', kind: 'Job', spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'backup', image: params.image }] } } } }),
      },
      {
        id: 'config',
        apiVersion: 'v1',
        kind: 'ConfigMap',
        name: 'config',
        during: { from: 'Running', until: 'Stopping' },
        render: ({ metadata }): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', data: { owner: metadata.uid } }),
      },
    ],
  });
}

const owner: ObjectOwner = {
  apiVersion: 'okt.dev/v1alpha1',
  kind: 'App',
  metadata: { name: 'db', namespace: 'team', uid: 'uid-1' },
  spec: { params: { image: 'pg:17' } },
};

const ownerReference = { apiVersion: 'okt.dev/v1alpha1', kind: 'App', name: 'db', uid: 'uid-1', controller: true };
const labels = { [OBJECT_LABELS.ownerUid]: 'uid-1', [OBJECT_LABELS.graph]: 'app' };

describe('declaring objects', () => {
  test('each at its lifetime: the graph, a node, a span (the nodes after its start from which its end can still be reached)', () => {
    const graph = appGraph();
    expect(graph.objects.map((o) => [o.id, o.lifetime])).toEqual([
      ['workload', { kind: 'graph' }],
      ['service', { kind: 'graph' }],
      ['data', { kind: 'graph' }],
      ['backup', { kind: 'node', node: 'Servicing' }],
      ['config', { kind: 'span', from: 'Running', until: 'Stopping', nodes: ['Running', 'Servicing', 'Stopping'] }],
    ]);
    expect(graph.objects.find((o) => o.id === 'data')?.deletion).toBe('Keep');
    expect(graph.objects.find((o) => o.id === 'workload')?.deletion).toBe('Delete');
    expect(objectsAt(graph, 'Start').map((o) => o.id)).toEqual(['workload', 'service', 'data']);
    expect(objectsAt(graph, 'Servicing').map((o) => o.id)).toEqual(['workload', 'service', 'data', 'backup', 'config']);
    expect(objectsAt(graph, 'End').map((o) => o.id)).toEqual(['workload', 'service', 'data']);
  });

  test("a node the graph lacks (where a CR of an earlier revision stands until it migrates) makes no objects, and is no error", () => {
    const graph = appGraph();
    expect(makesObjectsAt(graph, 'Servicing')).toBe(true);
    expect(makesObjectsAt(graph, 'RenamedSinceRevision1')).toBe(false);
    expect(() => objectsAt(graph, 'RenamedSinceRevision1')).toThrow(RangeError);
  });

  test('as data the declarations keep all but their functions; a graph loaded from it has the same revision', () => {
    const graph = appGraph();
    const data = graph.toData();
    expect(data.objects).toEqual([
      { id: 'workload', apiVersion: 'apps/v1', kind: 'Deployment' },
      { id: 'service', apiVersion: 'v1', kind: 'Service' },
      { id: 'data', apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'data', deletion: 'Keep' },
      { id: 'backup', apiVersion: 'batch/v1', kind: 'Job', name: 'backup', during: 'Servicing' },
      { id: 'config', apiVersion: 'v1', kind: 'ConfigMap', name: 'config', during: { from: 'Running', until: 'Stopping' } },
    ]);
    const loaded = loadGraph(JSON.parse(JSON.stringify(data)));
    expect(loaded.revision).toBe(graph.revision);
    expect(loaded.objects.every((o) => o.render === undefined && o.ready === undefined)).toBe(true);
    expect(loaded.toData()).toEqual(data);
  });

  test('objects are part of the revision, only when declared', () => {
    const without = defineGraph({ name: 'app', entry: 'Start', params: z.object({ image: z.string(), replicas: z.number().int().min(1).default(1) }), nodes });
    const { objects: _objects, ...data } = appGraph().toData();
    expect(loadGraph(data).revision).toBe(without.revision);
    expect(appGraph().revision).not.toBe(without.revision);
    const kept = loadGraph({ ...appGraph().toData(), objects: appGraph().toData().objects?.map((o) => (o.id === 'data' ? { ...o, deletion: 'Delete' } : o)) });
    expect(kept.revision).not.toBe(appGraph().revision);
  });

  test('the CRD publishes them (kinds, names, lifetimes), without functions', () => {
    const graph = appGraph();
    const crd = generateCrd(graph, { group: 'okt.dev', version: 'v1alpha1', kind: 'App' }) as { metadata: { annotations: Record<string, string> } };
    const published = publishedGraph(crd.metadata.annotations);
    expect(published?.toData().objects).toEqual(graph.toData().objects);
  });

  test('okt graph validate lists them; Mermaid and DOT note what each node makes', () => {
    const graph = appGraph();
    expect(describeValid({ graph, file: 'app.ts', exportName: undefined }).split('\n').slice(1)).toEqual([
      '  object workload: Deployment <cr> (apps/v1) for the graph',
      '  object service: Service <cr> (v1) for the graph',
      '  object data: PersistentVolumeClaim <cr>-data (v1) for the graph, kept',
      '  object backup: Job <cr>-backup (batch/v1) during Servicing',
      '  object config: ConfigMap <cr>-config (v1) from Running until Stopping',
    ]);
    const mermaid = renderMermaid(graph);
    expect(mermaid).toContain('  s0 : makes Deployment {cr} for the graph\n');
    expect(mermaid).toContain('  s2 : makes Job {cr}-backup\n');
    expect(mermaid).toContain('  s1 : makes ConfigMap {cr}-config until Stopping\n');
    expect(renderDot(graph)).toContain('"Servicing" [label="Servicing", xlabel="makes Job {cr}-backup"];');
  });

  test('okt graph diff says which objects were added, removed or changed', () => {
    const before = appGraph();
    const data = before.toData();
    const after = loadGraph({
      ...data,
      objects: [...(data.objects ?? []).filter((o) => o.id !== 'backup').map((o) => (o.id === 'data' ? { ...o, deletion: 'Delete' as const } : o)), { id: 'secret', apiVersion: 'v1', kind: 'Secret', name: 'auth' }],
    });
    const diff = diffGraphs(before, after);
    expect(diff.same).toBe(false);
    expect(formatGraphDiff(diff, NO_COLORS).split('\n').slice(1, -1)).toEqual([
      '~ object data: PersistentVolumeClaim <cr>-data (v1) for the graph, kept -> PersistentVolumeClaim <cr>-data (v1) for the graph',
      '+ object secret: Secret <cr>-auth (v1) for the graph',
      '- object backup: Job <cr>-backup (batch/v1) during Servicing',
      'objects of the CRs once migrated:',
      '  object workload (Deployment <cr>): kept at every node, applied again only if its render changed',
      '  object service (Service <cr>): kept at every node, applied again only if its render changed',
      '  object data (PersistentVolumeClaim <cr>-data): kept at every node, applied again only if its render changed',
      '  object config (ConfigMap <cr>-config): kept at Running, Servicing, Stopping, applied again only if its render changed',
      '  object secret (Secret <cr>-auth): made at every node',
      '  object backup: pruned at Servicing, once the objects of the node they stand at are applied',
    ]);
    expect(diffGraphs(before, loadGraph(data)).same).toBe(true);
  });
});

describe('a graph file (YAML) declares its objects without functions', () => {
  const { file } = tempFiles('okt-graph-objects-');
  const yaml = (objects: string) => `name: app\nentry: Start\nnodes:\n  Start: { children: [Running] }\n  Running: { children: [End] }\n  End: {}\nobjects:\n${objects}`;

  test('loaded, listed by okt graph validate', async () => {
    const loaded = await loadGraphFile(file('app.yaml', yaml('  - { id: data, apiVersion: v1, kind: PersistentVolumeClaim, name: data, deletion: Keep }\n  - { id: job, apiVersion: batch/v1, kind: Job, name: job, during: Running }\n')));
    expect(describeValid(loaded).split('\n').slice(1)).toEqual(['  object data: PersistentVolumeClaim <cr>-data (v1) for the graph, kept', '  object job: Job <cr>-job (batch/v1) during Running']);
  });

  test('every problem named, one line each', async () => {
    const error = await loadGraphFile(file('bad.yaml', yaml('  - { id: ns, apiVersion: v1, kind: Namespace }\n  - { id: job, apiVersion: batch/v1, kind: Job, during: Nowhere, render: yes }\n'))).catch((e: unknown) => e as Error);
    expect((error as Error).message.split('\n').filter((line) => line.startsWith('- '))).toEqual([
      '- object "ns": Namespace is cluster-scoped; a graph\'s objects live in the CR\'s namespace',
      '- object "job": during "Nowhere" is not a node of the graph',
      '- object "job": render is not a function',
    ]);
  });
});

describe('checked when the graph is defined', () => {
  test('every problem at once, each naming where', () => {
    const render = () => ({});
    const data: GraphData = {
      name: 'app',
      entry: 'Start',
      nodes: Object.entries(nodes).map(([name, node]) => ({ name, ...node, children: [...((node as { children?: readonly string[] }).children ?? [])] })),
      objects: [
        { id: 'ns', apiVersion: 'v1', kind: 'Namespace', render },
        { id: 'sc', apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', render },
        { id: 'web', apiVersion: 'apps/v1', kind: 'Deployment', render },
        { id: 'web2', apiVersion: 'apps/v2', kind: 'Deployment', render },
        { id: 'web', apiVersion: 'v1', kind: 'Service', render },
        { id: 'job', apiVersion: 'batch/v1', kind: 'Job', name: 'job', during: 'Backup', render },
        { id: 'span', apiVersion: 'v1', kind: 'ConfigMap', name: 'span', during: { from: 'Nowhere', until: 'Running' }, render },
        { id: 'back', apiVersion: 'v1', kind: 'ConfigMap', name: 'back', during: { from: 'Stopping', until: 'Running' }, render },
        { id: 'Bad Id', apiVersion: 'apps', kind: 'deployment', name: 'Data_1', render: 'no' },
      ],
    };
    expect(problemsOf(() => loadGraph(data)).map((p) => [p.code, p.path.join('.'), p.message])).toEqual([
      ['cluster-scoped-object', 'objects.0.kind', 'object "ns": Namespace is cluster-scoped; a graph\'s objects live in the CR\'s namespace'],
      ['cluster-scoped-object', 'objects.1.kind', 'object "sc": StorageClass.storage.k8s.io is cluster-scoped; a graph\'s objects live in the CR\'s namespace'],
      ['duplicate-object', 'objects.3.name', 'object "web2": Deployment named as the CR is also declared by object "web" (one object, two declarations)'],
      ['duplicate-object-id', 'objects.4.id', 'object "web": id declared more than once (an id names one object in the CR\'s inventory)'],
      ['unknown-object-node', 'objects.5.during', 'object "job": during "Backup" is not a node of the graph'],
      ['unknown-object-node', 'objects.6.during.from', 'object "span": during.from "Nowhere" is not a node of the graph'],
      ['unreachable-span', 'objects.7.during', 'object "back": during.until "Running" is not reachable from during.from "Stopping", so the span would never end'],
      ['invalid-object', 'objects.8.id', 'objects[8]: id "Bad Id" is not a label value (1-63 letters, digits, "-", "_" or ".", starting and ending with a letter or digit); it labels the object'],
      ['invalid-object', 'objects.8.apiVersion', 'object "Bad Id": apiVersion "apps" is not "v1" or "<group>/<version>" (apps/v1, batch/v1)'],
      ['invalid-object', 'objects.8.kind', 'object "Bad Id": kind "deployment" is not a kind (CamelCase: Deployment, Service)'],
      ['invalid-object', 'objects.8.name', 'object "Bad Id": name "Data_1" is not a DNS label (1-63 lowercase letters, digits or "-", starting and ending with a letter or digit); the object is named "<CR name>-Data_1"'],
      ['invalid-object', 'objects.8.render', 'object "Bad Id": render is not a function'],
    ]);
  });

  test('a kind of another group (a CRD\'s) is taken as namespaced, whatever its name', () => {
    const graph = loadGraph({ name: 'g', nodes: { Start: { children: ['End'] }, End: {} }, objects: [{ id: 'n', apiVersion: 'example.com/v1', kind: 'Node' }] });
    expect(graph.objects.map((o) => o.kind)).toEqual(['Node']);
  });

  test('a graph that declares objects labels them with its name, so its name must be a label value', () => {
    const problems = problemsOf(() => loadGraph({ name: 'my graph', nodes: { Start: { children: ['End'] }, End: {} }, objects: [{ id: 'c', apiVersion: 'v1', kind: 'ConfigMap' }] }));
    expect(problems.map((p) => p.code)).toEqual(['invalid-object']);
    expect(problems[0]?.message).toMatch(/^name "my graph": a graph that declares objects labels them with its name/);
  });
});

describe('renderObjects', () => {
  test('renders what lives at the node, named, in the CR\'s namespace, labelled and owned by the CR', () => {
    const { objects, problems } = renderObjects(appGraph(), owner, 'Servicing');
    expect(problems).toEqual([]);
    expect(objects.map(({ object }) => [object.kind, object.metadata?.name, object.metadata?.namespace])).toEqual([
      ['Deployment', 'db', 'team'],
      ['Service', 'db', 'team'],
      ['PersistentVolumeClaim', 'db-data', 'team'],
      ['Job', 'db-backup', 'team'],
      ['ConfigMap', 'db-config', 'team'],
    ]);
    for (const { declaration, object } of objects) {
      expect(object.metadata?.ownerReferences).toEqual([ownerReference]);
      expect(object.metadata?.labels).toMatchObject({ ...labels, [OBJECT_LABELS.objectId]: declaration.id });
    }
    const deployment = objects[0]?.object as V1Deployment;
    expect(deployment.metadata?.labels).toEqual({ app: 'db', ...labels, [OBJECT_LABELS.objectId]: 'workload' });
    // the graph's params, checked, their defaults filled in
    expect(deployment.spec?.replicas).toBe(1);
    expect(deployment.spec?.template.spec?.containers[0]?.image).toBe('pg:17');
  });

  test('the CR\'s shard key label goes on its objects (a shard of operators caches its CRs\' objects only); a CR without one gives none', () => {
    const keyed = { ...owner, metadata: { ...owner.metadata, labels: { [OBJECT_LABELS.shardKey]: '17', tier: 'gold' } } };
    for (const { object } of renderObjects(appGraph(), keyed, 'Servicing').objects) {
      expect(object.metadata?.labels?.[OBJECT_LABELS.shardKey]).toBe('17');
      expect(object.metadata?.labels?.['tier']).toBeUndefined();
    }
    expect(renderObjects(appGraph(), owner, 'Servicing').objects.every(({ object }) => object.metadata?.labels?.[OBJECT_LABELS.shardKey] === undefined)).toBe(true);
  });

  test('where the CR stands reaches the render; a node\'s object is not rendered elsewhere', () => {
    const { objects } = renderObjects(appGraph(), owner, 'Stopping');
    expect(objects.map((o) => o.declaration.id)).toEqual(['workload', 'service', 'data', 'config']);
    expect((objects[0]?.object as V1Deployment).spec?.replicas).toBe(0);
    expect(renderObjects(appGraph(), owner, 'End').objects.map((o) => o.declaration.id)).toEqual(['workload', 'service', 'data']);
  });

  test('what a render returns is checked against its declaration, every problem at once', () => {
    const wrong = (render: () => unknown, extra: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', render, ...extra });
    const graph = loadGraph({
      name: 'g',
      nodes: { Start: { children: ['End'] }, End: {} },
      objects: [
        { id: 'kind', ...wrong(() => ({ apiVersion: 'v1', kind: 'Secret' })) },
        { id: 'version', ...wrong(() => ({ apiVersion: 'v2', kind: 'ConfigMap' })), name: 'v' },
        { id: 'name', ...wrong(() => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' } })), name: 'n' },
        { id: 'namespace', ...wrong(() => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { namespace: 'kube-system' } })), name: 'ns' },
        { id: 'controller', ...wrong(() => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: 'u', controller: true }] } })), name: 'c' },
        { id: 'throws', ...wrong(() => { throw new Error('no image'); }), name: 't' },
        { id: 'none', ...wrong(() => 'text'), name: 'x' },
        { id: 'function', ...wrong(() => ({ apiVersion: 'v1', kind: 'ConfigMap', data: { f: () => 1 } })), name: 'f' },
        { id: 'fine', ...wrong(() => ({ apiVersion: 'v1', kind: 'ConfigMap' })), name: 'fine' },
      ],
    });
    const { objects, problems } = renderObjects(graph, owner, 'Start');
    expect(objects.map((o) => o.declaration.id)).toEqual(['fine']);
    expect(problems.map((p) => p.message)).toEqual([
      'object "kind": kind is "Secret", declared "ConfigMap"',
      'object "version": apiVersion is "v2", declared "v1"',
      'object "name": metadata.name is "other", declared "db-n" (leave it out to get it)',
      'object "namespace": metadata.namespace is "kube-system", not the CR\'s "team" (leave it out to get it)',
      'object "controller": metadata.ownerReferences names a controller (Pod "p"): the CR is its controller',
      'object "throws": render threw: no image',
      'object "none": render returned no object',
      expect.stringMatching(/^object "function": render returned what is not plain data \(/),
    ]);
    expect(problems.map((p) => p.id)).toEqual(['kind', 'version', 'name', 'namespace', 'controller', 'throws', 'none', 'function']);
  });

  test('spec.params the graph refuses: nothing is rendered, each field named', () => {
    const { objects, problems } = renderObjects(appGraph(), { ...owner, spec: { params: { replicas: 0 } } }, 'Running');
    expect(objects).toEqual([]);
    expect(problems.map((p) => [p.id, p.message.split(':')[0]])).toEqual([
      [undefined, 'spec.params.image'],
      [undefined, 'spec.params.replicas'],
    ]);
  });

  test('a graph loaded from data has no render functions: each of its objects says so', () => {
    const { objects, problems } = renderObjects(loadGraph(appGraph().toData()), owner, 'Start');
    expect(objects).toEqual([]);
    expect(problems[0]?.message).toBe('object "workload": has no render function (a graph loaded from data: the functions stay in its module)');
    expect(problems).toHaveLength(3);
  });

  test('a render cannot change what another render gets, nor keep a hold on the object okt stamps', () => {
    const shared = { apiVersion: 'v1', kind: 'ConfigMap', data: { a: 'b' } };
    const graph = defineGraph({
      name: 'g',
      entry: 'Start',
      params: z.object({ list: z.array(z.string()).default([]) }),
      nodes: { Start: { children: ['End'] }, End: {} },
      objects: [
        { id: 'a', apiVersion: 'v1', kind: 'ConfigMap', name: 'a', render: ({ params, metadata }) => (params.list.push('x'), ((metadata as { name: string }).name = 'changed'), shared) },
        { id: 'b', apiVersion: 'v1', kind: 'ConfigMap', name: 'b', render: ({ params, metadata }): V1ConfigMap => ({ ...shared, data: { n: String(params.list.length), owner: metadata.name } }) },
      ],
    });
    const { objects } = renderObjects(graph, owner, 'Start');
    expect((objects[1]?.object as V1ConfigMap).data).toEqual({ n: '0', owner: 'db' });
    expect(owner.metadata.name).toBe('db');
    expect(shared).toEqual({ apiVersion: 'v1', kind: 'ConfigMap', data: { a: 'b' } });
  });

  test('an unknown node is the caller\'s mistake', () => {
    expect(() => renderObjects(appGraph(), owner, 'Nowhere')).toThrow(RangeError);
  });
});

describe('sidecarServiceUrl: where the sidecar of a CR naming none is', () => {
  const serviceGraph = (ports: { name?: string; port: number }[], during?: 'Running') =>
    defineGraph({
      name: 'app',
      entry: 'Start',
      params: z.object({ port: z.number().int().default(8479) }),
      nodes,
      objects: [
        { id: 'other', apiVersion: 'v1', kind: 'Service', name: 'other', render: (): V1Service => ({ apiVersion: 'v1', kind: 'Service', spec: { ports: [{ name: 'http', port: 80 }] } }) },
        { id: 'service', apiVersion: 'v1', kind: 'Service', ...(during ? { during } : {}), render: ({ params }): V1Service => ({ apiVersion: 'v1', kind: 'Service', spec: { ports: ports.map((p) => (p.port === 0 ? { ...p, port: params.port } : p)) } }) },
      ],
    });

  test('the graph\'s Service with a port named okt-sidecar: its name in the CR\'s namespace, that port (as rendered for the CR)', () => {
    expect(sidecarServiceUrl(serviceGraph([{ name: 'pg', port: 5432 }, { name: 'okt-sidecar', port: 0 }]), owner)).toBe('http://db.team.svc:8479');
    expect(sidecarServiceUrl(serviceGraph([{ name: 'okt-sidecar', port: 0 }]), { ...owner, spec: { params: { port: 9000 } } })).toBe('http://db.team.svc:9000');
  });

  test('none: no port so named, a Service of a node only, params the graph refuses, or no Service', () => {
    expect(sidecarServiceUrl(serviceGraph([{ port: 8479 }]), owner)).toBeUndefined();
    expect(sidecarServiceUrl(serviceGraph([{ name: 'okt-sidecar', port: 8479 }], 'Running'), owner)).toBeUndefined();
    expect(sidecarServiceUrl(serviceGraph([{ name: 'okt-sidecar', port: 0 }]), { ...owner, spec: { params: { port: 'x' } } })).toBeUndefined();
    expect(sidecarServiceUrl(appGraph(), owner)).toBeUndefined();
  });
});
