import { defineGraph } from '../src/graph/index.ts';

/** The seed's database lifecycle: Start -> Running <-> Servicing -> End, or Running -> Stopping -> End. */
export const databaseGraph = defineGraph({
  name: 'database',
  description: 'The lifecycle of a database server.',
  entry: 'Start',
  nodes: databaseNodes(),
});

/** Its nodes, which graphs/database-app.ts shares (the same lifecycle, making the database's objects). */
export function databaseNodes() {
  return {
    Start: { children: ['Running'], description: 'The entry: nothing runs yet; the first move is to Running.' },
    Running: {
      children: ['Servicing', 'Stopping'],
      description: 'Its action starts the server; then accepting clients, until a go-to Servicing or go-to Stopping event.',
    },
    Servicing: {
      children: ['Running', 'End'],
      description: 'A backup or a configuration change; then back to Running, or End.',
    },
    Stopping: { children: ['End'], description: 'Its action stops the server: every client must disconnect.' },
    End: { description: 'The service is gone.' },
  } as const;
}
