// A sidecar config against its graph: every node, event and probe state it names must mean something there.
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { loadSidecarConfig, parseSidecarConfig } from '../../sidecar/config.ts';
import { fitToGraph } from '../../sidecar/graph-fit.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
const FILE = 'graphs/database.ts';
const run = { command: { argv: ['true'] } };

function graphConfig(graph: Record<string, unknown>) {
  return parseSidecarConfig({ tokenFile: 't', journal: 'j', graphs: { database: graph } }, '/').graphs.database!;
}

describe('fitToGraph', () => {
  it('the committed database sidecar config fits the database graph, and names it', () => {
    const config = loadSidecarConfig(path.join(REPO, 'graphs/database.sidecar.yaml'), {});
    const database = config.graphs.database!;
    expect(database.graph).toBe(path.join(REPO, FILE));
    expect(fitToGraph('database', database, databaseGraph, FILE)).toEqual({ problems: [], missingActions: [] });
  });

  it('names a node the graph does not have, suggesting the one meant', () => {
    const { problems } = fitToGraph('database', graphConfig({ nodes: { Runing: run, Servicing: run, Stopping: run } }), databaseGraph, FILE);
    expect(problems).toEqual([
      { field: 'graphs.database.nodes.Runing', reason: 'graph "database" has no node Runing; did you mean Running? (its nodes with an action: Running, Servicing, Stopping)' },
    ]);
  });

  it('keeps the actions of nodes an upgrade renamed or removed (operations started under those names), and still names unknown ones', () => {
    const v2 = defineGraph({
      name: 'database', entry: 'Start', previous: [databaseGraph],
      migrations: { removed: { Stopping: 'End' } },
      nodes: { Start: { children: ['Running'] }, Running: { children: ['Backup', 'End'] }, Backup: { formerly: ['Servicing'], children: ['Running', 'End'] }, End: {} },
    });
    const { problems, missingActions } = fitToGraph('database', graphConfig({ nodes: { Running: run, Servicing: run, Backup: run, Stopping: run, Gone: run } }), v2, FILE);
    expect(problems.map((p) => p.field)).toEqual(['graphs.database.nodes.Gone']);
    expect(missingActions).toEqual([]);
  });

  it('names the entry node and a leaf: they have no action', () => {
    const { problems } = fitToGraph('database', graphConfig({ nodes: { Start: run, End: run } }), databaseGraph, FILE);
    expect(problems.map((p) => [p.field, p.reason])).toEqual([
      ['graphs.database.nodes.Start', expect.stringContaining('is the entry node, which has no action')],
      ['graphs.database.nodes.End', expect.stringContaining('is a leaf, which has no action')],
    ]);
  });

  it('names every event an action would raise that moves nothing from its node', () => {
    const nodes = {
      Running: { ...run, onSuccess: ['DefaultState', 'End'], onFailure: 'Stoping' },
      Servicing: { http: { url: 'http://127.0.0.1:1/', statusEvents: { '503': ['Running', 'Start'] } } },
      Stopping: { ...run, onSuccess: ['End'] },
    };
    const { problems } = fitToGraph('database', graphConfig({ nodes }), databaseGraph, FILE);
    expect(problems).toEqual([
      { field: 'graphs.database.nodes.Running.onSuccess.1', reason: 'End moves nothing from node Running (its events: Servicing, Stopping, DefaultState)' },
      { field: 'graphs.database.nodes.Running.onFailure', reason: 'Stoping moves nothing from node Running; did you mean Stopping? (its events: Servicing, Stopping, DefaultState)' },
      { field: 'graphs.database.nodes.Servicing.http.statusEvents.503.1', reason: 'Start moves nothing from node Servicing (its events: Running, End, DefaultState)' },
    ]);
  });

  it('names probe states that are no node and probe events that are no event', () => {
    const probe = { command: { argv: ['true'] }, states: { '0': 'Running', '1': 'Down' }, events: { '2': 'Stopping', '3': 'DefaultState', '4': 'Crashed' } };
    const { problems } = fitToGraph('database', graphConfig({ probe, nodes: {} }), databaseGraph, FILE);
    expect(problems.map((p) => p.field)).toEqual(['graphs.database.probe.states.1', 'graphs.database.probe.events.4']);
  });

  it('names a graph file that holds another graph than the config\'s key (the operator asks by the graph\'s name)', () => {
    const other = defineGraph({ name: 'db', entry: 'Start', nodes: { Start: { children: ['Running'] }, Running: { children: ['End'] }, End: {} } });
    const { problems } = fitToGraph('database', graphConfig({ nodes: { Running: run } }), other, 'db.yaml');
    expect(problems).toEqual([{ field: 'graphs.database.graph', reason: 'db.yaml holds graph "db", not "database"' }]);
  });

  it('lists the nodes with an action the config leaves out (a warning, not a problem)', () => {
    expect(fitToGraph('database', graphConfig({ nodes: { Running: run } }), databaseGraph, FILE)).toEqual({ problems: [], missingActions: ['Servicing', 'Stopping'] });
  });
});
