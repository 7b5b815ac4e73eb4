// A real sidecar whose actions do nothing: for end-to-end tests and benchmarks of the operator, where
// the actions themselves are not what is being looked at.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Graph } from '../src/graph/index.ts';
import { parseSidecarConfig } from './config.ts';
import { startSidecar, type RunningSidecar } from './server.ts';

const NOOP_ACTION = fileURLToPath(new URL('./noop-action.ts', import.meta.url));

export interface NoopSidecarOptions {
  /** Every node of this graph that has an action gets the no-op one (`true`). */
  graph: Graph;
  /** Nodes whose action hangs instead (`sleep 3600`), to catch the operator mid-action. */
  hang?: readonly string[];
  /**
   * `command` (default): each action spawns `true`, as a real application's would; `module`: an
   * in-process function, so that what is measured is the operator and the sidecar, not process spawns.
   */
  actions?: 'command' | 'module';
  /** 0 (default) picks a free port. */
  port?: number;
  /** The bearer token (default: a fixed test token), for a caller that needs it before the sidecar runs. */
  token?: string;
  /** Actions running at once (the sidecar's default is 1: one application, one action at a time). */
  maxActiveOperations?: number;
  /** Finished operations kept for the operator to read (the sidecar's default is 1000). */
  retainOperations?: number;
}

export interface NoopSidecar {
  readonly url: string;
  readonly token: string;
  readonly sidecar: RunningSidecar;
  /** Stops the sidecar and removes its token and journal. */
  close(): Promise<void>;
}

/**
 * Starts, in this process, a sidecar whose actions succeed at once and raise no event: every node
 * rests until spec.desiredState moves it on.
 */
export async function startNoopSidecar(options: NoopSidecarOptions): Promise<NoopSidecar> {
  const dir = mkdtempSync(path.join(tmpdir(), 'okt-noop-sidecar-'));
  const token = options.token ?? 'noop-sidecar-token-0123456789abcdef';
  writeFileSync(path.join(dir, 'token'), token);
  const nodes: Record<string, unknown> = {};
  for (const name of options.graph.nodeNames) {
    if (!options.graph.node(name).hasAction) continue;
    const hangs = options.hang?.includes(name) ?? false;
    const action = options.actions === 'module' && !hangs ? { module: { path: NOOP_ACTION } } : { command: { argv: hangs ? ['sleep', '3600'] : ['true'] } };
    nodes[name] = { ...action, onSuccess: [] };
  }
  const config: Record<string, unknown> = {
    listen: { host: '127.0.0.1', port: options.port ?? 0 },
    tokenFile: 'token',
    journal: 'journal.jsonl',
    logLevel: 'silent',
    graphs: { [options.graph.name]: { nodes } },
  };
  if (options.maxActiveOperations !== undefined) config.maxActiveOperations = options.maxActiveOperations;
  if (options.retainOperations !== undefined) config.retainOperations = options.retainOperations;
  const sidecar = await startSidecar(parseSidecarConfig(config, dir));
  return {
    url: sidecar.url,
    token,
    sidecar,
    async close() {
      await sidecar.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The HTTP requests the sidecar has answered, by `METHOD route` (its okt_sidecar_http_requests_total,
 * every status summed), its own /metrics aside: what an operator asked of it.
 */
export async function sidecarRequestCounts(sidecar: Pick<NoopSidecar, 'url' | 'token'>): Promise<Record<string, number>> {
  const answer = await fetch(`${sidecar.url}/metrics`, { headers: { authorization: `Bearer ${sidecar.token}` } });
  if (!answer.ok) throw new Error(`the sidecar's /metrics answered ${answer.status}`);
  const counts: Record<string, number> = {};
  for (const line of (await answer.text()).split('\n')) {
    const sample = /^okt_sidecar_http_requests_total\{(.*)\} (\S+)$/.exec(line);
    if (sample === null) continue;
    const label = (name: string) => new RegExp(`${name}="([^"]*)"`).exec(sample[1]!)?.[1] ?? '';
    const request = `${label('method')} ${label('route')}`;
    if (label('route') !== '/metrics') counts[request] = (counts[request] ?? 0) + Number(sample[2]);
  }
  return counts;
}
