import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { z } from 'zod';
import { readyzStatus, startControlPlane, stopControlPlane, type StartOptions } from './control-plane.ts';
import { clusterStateDir } from './paths.ts';
import { repairNodeHost, type NodeCleanup } from './node.ts';
import { isStillOurs } from './processes.ts';
import { requestedRelease } from './provision.ts';

// The one control plane per user that `okt cluster up` leaves running and `okt cluster down` stops.

const ProcessRecordSchema = z.object({ name: z.string(), pid: z.number().int().positive(), executable: z.string(), marker: z.string() });

const LocalClusterState = z.object({
  kubeconfigPath: z.string(),
  server: z.string(),
  token: z.string(),
  dataDir: z.string(),
  startedAt: z.string(),
  processes: z.array(ProcessRecordSchema),
  /** The Kubernetes release it runs; absent in the state of an okt before releases could be chosen (STATE_WITHOUT_VERSION). */
  kubernetesVersion: z.string().optional(),
  /** The release's own kubectl, when built with it. */
  kubectl: z.string().optional(),
  /** The node's components, when started with `--node`. */
  node: z.object({ name: z.string(), address: z.string(), processes: z.array(ProcessRecordSchema) }).optional(),
});
export type LocalClusterState = z.infer<typeof LocalClusterState>;

/** The release a state file without `kubernetesVersion` runs: an okt before releases could be chosen ran only Debian's 1.20.2. */
export const STATE_WITHOUT_VERSION = '1.20.2';

export function localStatePath(env: NodeJS.ProcessEnv = process.env): string {
  return join(clusterStateDir(env), 'state.json');
}

export function readLocalState(env: NodeJS.ProcessEnv = process.env): LocalClusterState | undefined {
  const path = localStatePath(env);
  if (!existsSync(path)) return undefined;
  const parsed = LocalClusterState.safeParse(JSON.parse(readFileSync(path, 'utf8')));
  if (!parsed.success) throw new Error(`${path} is not an okt control-plane state file: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

function writeLocalState(state: LocalClusterState, env: NodeJS.ProcessEnv): void {
  const path = localStatePath(env);
  mkdirSync(clusterStateDir(env), { recursive: true });
  writeFileSync(`${path}.partial`, JSON.stringify(state, null, 2) + '\n', { mode: 0o600 });
  renameSync(`${path}.partial`, path);
}

/** Whether the recorded control plane (and node) still runs (every process is ours) and answers /readyz. */
export async function isLocalClusterUp(state: LocalClusterState): Promise<boolean> {
  const processes = [...state.processes, ...(state.node?.processes ?? [])];
  return processes.every(isStillOurs) && (await readyzStatus(state.server, state.token)) === 200;
}

export type UpResult = { kind: 'already-up'; state: LocalClusterState } | { kind: 'started'; state: LocalClusterState; readyAfterMs: number };

/** Start the user's control plane (and node), detached, unless it is already up. */
export async function localClusterUp(options: Pick<StartOptions, 'progress' | 'node' | 'kubernetes'> = {}, env: NodeJS.ProcessEnv = process.env): Promise<UpResult> {
  const previous = readLocalState(env);
  if (previous && (await isLocalClusterUp(previous))) {
    const running = previous.kubernetesVersion ?? STATE_WITHOUT_VERSION;
    const wanted = options.kubernetes === undefined ? undefined : requestedRelease(options.kubernetes, env).version;
    if (wanted !== undefined && wanted !== running) {
      throw new Error(`Kubernetes ${running} is up: stop it with \`npx okt cluster down\`, then run \`npx okt cluster up --kubernetes ${wanted}\``);
    }
    if (options.node && !previous.node) {
      throw new Error('a control plane without a node is up: stop it with `npx okt cluster down`, then run `npx okt cluster up --node`');
    }
    return { kind: 'already-up', state: previous };
  }
  if (previous) await localClusterDown(env); // half dead: clean up what is left
  const plane = await startControlPlane({ ...options, detached: true });
  const state: LocalClusterState = {
    kubeconfigPath: plane.kubeconfigPath,
    server: plane.server,
    token: plane.token,
    dataDir: plane.dataDir,
    startedAt: new Date().toISOString(),
    processes: [...plane.processes],
    kubernetesVersion: plane.kubernetesVersion,
    ...(plane.kubectl ? { kubectl: plane.kubectl } : {}),
    ...(plane.node ? { node: { name: plane.node.name, address: plane.node.address, processes: [...plane.node.processes] } } : {}),
  };
  try {
    writeLocalState(state, env);
  } catch (error) {
    await plane.stop();
    throw error;
  }
  return { kind: 'started', state, readyAfterMs: plane.readyAfterMs };
}

export interface DownResult {
  /** What was recorded as running, if anything. */
  state?: LocalClusterState;
  /** What the node's stop (or the repair of a crashed node) put back on the host. */
  cleanup?: NodeCleanup;
}

/** Stop the user's control plane and node, and put back what a crashed node left on the host. */
export async function localClusterDown(env: NodeJS.ProcessEnv = process.env): Promise<DownResult> {
  const state = readLocalState(env);
  if (!state) {
    const cleanup = repairNodeHost();
    return cleanup ? { cleanup } : {};
  }
  const cleanup = await stopControlPlane({ ...state, nodeProcesses: state.node?.processes });
  rmSync(localStatePath(env), { force: true });
  return cleanup ? { state, cleanup } : { state };
}

/** `export KUBECONFIG='…'`, quoted for POSIX shells. */
export function kubeconfigExport(kubeconfigPath: string): string {
  return `export KUBECONFIG=${shellQuote(kubeconfigPath)}`;
}

/** `export PATH='…':"$PATH"`: the directory of the release's own kubectl first. */
export function kubectlPathExport(kubectl: string): string {
  return `export PATH=${shellQuote(dirname(kubectl))}:"$PATH"`;
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
