// The graph of the objects bench: the database graph's nodes, and three objects per CR for as long as
// it lives, ready on creation on an API server without a node: a headless Service named as the CR
// (headless: the control plane's service IP range holds 254 addresses, fewer than the bench's
// Services), a Secret <cr>-keys, and a ConfigMap <cr>-config naming the node the CR stands at (so each
// transition changes one object). The controller-runtime peer makes the same three with the same content
// (bench/peer/controller-runtime/objects.go).
import type { V1ConfigMap, V1Secret, V1Service } from '@kubernetes/client-node';
import { databaseGraph } from '../graphs/database.ts';
import { defineGraph } from '../src/graph/index.ts';

export const STACKS = { group: 'okt.dev', version: 'v1alpha1', plural: 'stacks', kind: 'Stack' } as const;

export const stackGraph = defineGraph({
  name: 'stack',
  description: 'The database lifecycle, making a Service, a Secret and a ConfigMap per CR.',
  entry: databaseGraph.entry,
  nodes: Object.fromEntries(databaseGraph.nodeNames.map((name) => [name, { children: [...databaseGraph.node(name).children] }])),
  objects: [
    { id: 'service', apiVersion: 'v1', kind: 'Service', render: ({ name }): V1Service => ({ apiVersion: 'v1', kind: 'Service', spec: { clusterIP: 'None', selector: { app: name }, ports: [{ port: 80 }] } }) },
    { id: 'keys', apiVersion: 'v1', kind: 'Secret', name: 'keys', render: (): V1Secret => ({ apiVersion: 'v1', kind: 'Secret', data: { key: Buffer.from('kept').toString('base64') } }) },
    { id: 'config', apiVersion: 'v1', kind: 'ConfigMap', name: 'config', render: ({ node }): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', data: { node } }) },
  ],
});
