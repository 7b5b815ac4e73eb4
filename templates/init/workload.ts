// What a {{kind}} makes on the cluster, declared with the graph (graph.ts): its workload, a Deployment
// whose Pod runs this project's sidecar (your application's container goes beside it), and the Service
// the operator finds that sidecar at (its port okt-sidecar), both named as the resource. Applying one
// {{kind}} makes them; deleting it deletes them once its deletion path ran.
import type { V1Deployment, V1Service } from '@kubernetes/client-node';
import { withOktSidecar, type ObjectDeclaration } from 'okt';

/** Declared for the graph's whole life (no `during`), so they fit any graph's nodes: `never`. */
export function workload(): ObjectDeclaration<never>[] {
  return [
    {
      id: 'workload',
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      render: ({ name }): V1Deployment => ({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        spec: {
          selector: { matchLabels: { app: name } },
          template: withOktSidecar(
            // Your application's container goes in `containers`, beside its sidecar.
            { metadata: { labels: { app: name } }, spec: { containers: [] } },
            // The sidecar's config and actions are in this project's image; its token is the Secret okt-sidecar-token of the resource's namespace.
            { image: '{{name}}:latest', configFile: '/app/sidecar.yaml', token: { name: 'okt-sidecar-token', key: 'token' } },
          ),
        },
      }),
    },
    {
      id: 'sidecar',
      apiVersion: 'v1',
      kind: 'Service',
      render: ({ name }): V1Service => ({
        apiVersion: 'v1',
        kind: 'Service',
        spec: { selector: { app: name }, ports: [{ name: 'okt-sidecar', port: 8479, targetPort: 'okt-sidecar' }] },
      }),
    },
  ];
}
