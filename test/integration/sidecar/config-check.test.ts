// `okt sidecar` refuses at start a config that does not fit its graph, or whose module actions cannot
// be run, with one message naming every problem; a config that fits starts. Real processes throughout.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SidecarClient } from '../../../src/sidecar-client/index.ts';
import { okt, type Run } from '../../fixtures/okt-process.ts';
import { REPO, TOKEN, baseConfig, eventually, makeDir, removeDirs, spawnSidecar, writeConfig } from './helpers.ts';

const DATABASE_GRAPH = path.join(REPO, 'graphs/database.ts');
const run = { command: { argv: ['true'] } };

afterAll(removeDirs);

/** A directory with a config, a module of actions and a small graph (`pipeline`) as YAML. */
function setUp(graphs: Record<string, unknown>): { dir: string; config: string } {
  const dir = makeDir();
  writeFileSync(path.join(dir, 'actions.mjs'), 'export const start = () => [];\nexport const retries = 3;\n');
  writeFileSync(path.join(dir, 'broken.mjs'), 'export default () => {\n');
  writeFileSync(path.join(dir, 'needs-env.mjs'), "throw new Error('DATABASE_URL is not set');\n");
  writeFileSync(path.join(dir, 'pipeline.yaml'), 'name: pipeline\nentry: Queued\nnodes:\n  Queued: { children: [Building] }\n  Building: { children: [Testing] }\n  Testing: { children: [Done] }\n  Done: {}\n');
  return { dir, config: writeConfig(dir, baseConfig(dir, graphs)) };
}

/** Refused the way a person can act on: exit 2, never listening, the problems and no stack trace. */
function expectRefused(result: Run): string[] {
  expect(result.code).toBe(2);
  expect(result.stdout).not.toContain('listening');
  expect(result.stderr).toMatch(/^okt sidecar: invalid sidecar config:\n/);
  expect(result.stderr).not.toMatch(/^\s+at /m);
  return result.stderr.trimEnd().split('\n').slice(1).map((line) => line.trim());
}

describe('okt sidecar refuses a config that does not fit', () => {
  it('its graph: a misspelt node, the entry node, a missing export and an export that is no function, all in one message', async () => {
    const { dir, config } = setUp({
      database: {
        graph: DATABASE_GRAPH,
        nodes: {
          Upgradng: run,
          Start: run,
          Running: { module: { path: 'actions.mjs', export: 'run' } },
          Servicing: { module: { path: 'actions.mjs', export: 'retries' } },
          Stopping: run,
        },
      },
    });
    const lines = expectRefused(await okt(['sidecar', '--config', config]));
    const actions = path.join(dir, 'actions.mjs');
    expect(lines).toEqual([
      `graphs.database.nodes.Running.module: ${actions} has no export "run" (its exports: retries, start)`,
      `graphs.database.nodes.Servicing.module: ${actions}: its export "retries" is a number, not a function`,
      'graphs.database.nodes.Start: node Start of graph "database" is the entry node, which has no action (the entry node and the leaves have none)',
      'graphs.database.nodes.Upgradng: graph "database" has no node Upgradng (its nodes with an action: Running, Servicing, Stopping)',
    ]);
  });

  it('without a graph, only its modules: a missing file, a syntax error and a module that throws are named; node names are not checked', async () => {
    const { dir, config } = setUp({
      pipeline: {
        nodes: {
          Upgradng: { module: { path: 'missing.mjs' } },
          Building: { module: { path: 'broken.mjs' } },
          Testing: { module: { path: 'needs-env.mjs' } },
          Deploying: { module: { path: 'actions.mjs', export: 'start' } },
        },
      },
    });
    const lines = expectRefused(await okt(['sidecar', '--config', config]));
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(new RegExp(`^graphs\\.pipeline\\.nodes\\.Building\\.module: ${path.join(dir, 'broken.mjs')} cannot be loaded: .+ \\(run it with node to see the whole error\\)$`));
    expect(lines[1]).toBe(`graphs.pipeline.nodes.Testing.module: ${path.join(dir, 'needs-env.mjs')} cannot be loaded: DATABASE_URL is not set (run it with node to see the whole error)`);
    expect(lines[2]).toBe(`graphs.pipeline.nodes.Upgradng.module: ${path.join(dir, 'missing.mjs')}: no such file`);
  });

  it('a graph file found relative to the config, or given with --graph; one that cannot be loaded, or holds a graph the config does not serve, is named', async () => {
    const { dir, config } = setUp({
      pipeline: { graph: './pipeline.yaml', nodes: { Bilding: run, Testing: { ...run, onSuccess: ['Building'] } } },
      other: { graph: './nope.ts', nodes: { Anything: run } },
    });
    const lines = expectRefused(await okt(['sidecar', '--config', config, '--graph', DATABASE_GRAPH]));
    expect(lines).toEqual([
      `--graph: ${DATABASE_GRAPH} holds graph "database", which this config does not serve (its graphs: pipeline, other)`,
      `graphs.other.graph: ${path.join(dir, 'nope.ts')}: no such file`,
      'graphs.pipeline.nodes.Bilding: graph "pipeline" has no node Bilding; did you mean Building? (its nodes with an action: Building, Testing)',
      'graphs.pipeline.nodes.Testing.onSuccess.0: Building moves nothing from node Testing (its events: Done, DefaultState)',
    ]);
  });

  it('a misspelt key of its YAML (comand:) is named with the key meant and the keys expected, with every other problem', async () => {
    const dir = makeDir();
    const config = path.join(dir, 'sidecar.yaml');
    writeFileSync(
      config,
      'tokenFile: token\njournal: journal.jsonl\ngraphs:\n  database:\n    nodes:\n      Running:\n        comand: { argv: [/bin/true] }\n      Stopping:\n        command: { argv: [/bin/true] }\n        onSucess: [End]\n',
    );
    const lines = expectRefused(await okt(['sidecar', '--config', config]));
    expect(lines).toEqual([
      'graphs.database.nodes.Running: needs one of command, http, module',
      'graphs.database.nodes.Running.comand: unknown key; did you mean command? (expected: command, http, module, timeoutMs, onSuccess, onFailure, idempotent)',
      'graphs.database.nodes.Stopping.onSucess: unknown key; did you mean onSuccess? (expected: command, http, module, timeoutMs, onSuccess, onFailure, idempotent)',
    ]);
  });

  it('--graph checks a config that names no graph', async () => {
    const { config } = setUp({ database: { nodes: { Runing: run } } });
    const lines = expectRefused(await okt(['sidecar', '--config', config, '--graph', DATABASE_GRAPH]));
    expect(lines).toEqual(['graphs.database.nodes.Runing: graph "database" has no node Runing; did you mean Running? (its nodes with an action: Running, Servicing, Stopping)']);
  });
});

describe('okt sidecar starts with a config that fits', () => {
  it('its graph, warning of the nodes it has no action for; its module actions run as before', async () => {
    const { config } = setUp({ pipeline: { graph: './pipeline.yaml', nodes: { Building: { module: { path: 'actions.mjs', export: 'start' }, onSuccess: ['Testing'] } } } });
    const sidecar = await spawnSidecar(config);
    const client = new SidecarClient({ baseUrl: sidecar.url, token: TOKEN, retries: 1, backoffMs: 10 });
    try {
      // Written before the listening line, on another pipe: it may arrive just after it.
      await eventually(() => sidecar.stderr().endsWith('\n'), 'the warning');
      expect(sidecar.stderr()).toBe('okt sidecar: warning: graphs.pipeline.nodes: node Testing of graph "pipeline" has an action and this config none: a resource that reaches it stalls (SidecarRefused)\n');
      await client.startOperation('build-1', { node: 'Building' });
      const done = await eventually(async () => {
        const op = await client.getOperation('build-1', { waitMs: 1000 });
        return op.phase === 'Pending' || op.phase === 'Running' ? undefined : op;
      }, 'build-1 to finish');
      expect(done).toMatchObject({ phase: 'Succeeded', events: ['Testing'] });
    } finally {
      await client.close();
      sidecar.child.kill('SIGTERM');
    }
    expect(await sidecar.exited).toBe(0);
  });

  it('the committed graphs/database.sidecar.yaml, checked against graphs/database.ts', async () => {
    const dir = makeDir();
    const env = { OKT_SIDECAR_PORT: '0', OKT_SIDECAR_TOKEN_FILE: path.join(dir, 'token'), OKT_PG_DIR: path.join(dir, 'pg') };
    const sidecar = await spawnSidecar(path.join(REPO, 'graphs/database.sidecar.yaml'), env);
    sidecar.child.kill('SIGTERM');
    expect(await sidecar.exited).toBe(0);
    // No warning either: it has an action for every node of the graph that has one.
    expect(sidecar.stderr()).toBe('');
  });
});
