import { homedir } from 'node:os';
import { join } from 'node:path';

/** Where okt keeps what outlives a checkout: the built Kubernetes binaries, build logs, control-plane state. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME && env.XDG_CACHE_HOME.startsWith('/') ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'okt');
}

/** A command of a release built from Go modules, cached per release: `bin/v1.37.2/kube-apiserver`. */
export function releaseBinaryPath(version: string, name: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'bin', `v${version}`, name);
}

export function provisionLogPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'provision.log');
}

/** State of the control plane started by `okt cluster up` (one per user). */
export function clusterStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'cluster');
}

/** A node's directories: fixed, because only one node runs per host (its ports and bridge are fixed too). */
export const NODE_DATA_DIR = '/var/lib/okt-node';
export const NODE_RUN_DIR = '/run/okt-node';

/** The node's containerd (its own socket: another containerd on the host is never touched). */
export function nodeContainerdSocket(): string {
  return `${NODE_RUN_DIR}/containerd/containerd.sock`;
}

/** okt's own buildah storage (images it builds, the node:24-slim stand-in), never the system's. */
export function buildahDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'buildah');
}

/** The log of the last image build (base image included) or the last load into a containerd. */
export function imageLogPath(kind: 'build' | 'load', env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), `image-${kind}.log`);
}
