// The lifecycle graph of {{name}}: its nodes (states), each listing its children in priority order, the
// last one being the default. A resource's spec.desiredState names the node to reach; the operator takes
// one transition at a time toward it, and entering a node runs that node's action on the sidecar
// (sidecar.yaml). What a resource makes on the cluster (its workload with the sidecar, its Service) is in
// workload.ts. `npx okt graph render graph.ts` draws it; after a change, `npm run generate`.
import { defineGraph, type StateOf } from 'okt';
import { workload } from './workload.ts';

export const graph = defineGraph({
  name: '{{name}}',
  entry: 'Start',
  nodes: {
    Start: { children: ['Running'], description: 'The entry: nothing runs yet.' },
    Running: { children: ['Stopping'], description: 'Its action starts the application (actions/start.ts, a TypeScript module).' },
    Stopping: { children: ['End'], description: 'Its action stops the application (actions/stop.sh, a command).' },
    End: { description: 'The application is gone.' },
  },
  objects: workload(),
});

/** A node of the graph: a misspelt one does not compile. */
export type State = StateOf<typeof graph>;
