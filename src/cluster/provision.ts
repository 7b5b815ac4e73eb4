import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir, provisionLogPath, releaseBinaryPath } from './paths.ts';
import { acquireLock } from './lock.ts';
import { CommandError, which } from './run.ts';
import { ProvisionError, Steps } from './steps.ts';
import {
  buildReleaseTargets,
  missingReleaseTargets,
  moduleReleaseVersions,
  nodeBinaryPaths,
  releaseHasNode,
  type NodeBinaries,
} from './kubernetes-modules.ts';
import { DEFAULT_KUBERNETES_VERSION, KubernetesVersionError, resolveKubernetesRelease, type KubernetesRelease } from './kubernetes-version.ts';
import { aptGetInstall } from '../util/apt.ts';

export interface Binaries {
  etcd: string;
  kubeApiserver: string;
  /** The release's own kubectl, built with it. */
  kubectl: string;
  /** The release these binaries are (`1.37.2`). */
  kubernetesVersion: string;
  /** What a node runs, when provisioned with `node`. */
  node?: NodeBinaries;
}

export interface ProvisionOptions {
  /**
   * Also what a node needs: kube-controller-manager, kube-scheduler, kubelet, kube-proxy, the pause
   * program and containerd, built from the pinned modules, and Debian's runc, CNI plugins, iptables, buildah.
   */
  node?: boolean;
  /** One line per step, for humans. Default: stderr. */
  progress?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
  /**
   * The Kubernetes release (`1.37`, `1.37.2`). Default: the environment variable OKT_KUBERNETES_VERSION,
   * else DEFAULT_KUBERNETES_VERSION.
   */
  kubernetes?: string;
}

const SYSTEM_DIRS = ['/usr/bin', '/usr/local/bin', '/usr/sbin'];
/** What a node runs on (and builds images with) besides what okt builds; see ../shared/reference/real-node.md. */
const NODE_PACKAGES = ['runc', 'containernetworking-plugins', 'iptables', 'conntrack', 'iproute2', 'buildah', 'debootstrap', 'gcc', 'libc6-dev'];

/**
 * The release `kubernetes` names (`1.37`, `1.37.2`), else the one OKT_KUBERNETES_VERSION names, else
 * the default; a version okt cannot provision is one line naming the ones it can.
 */
export function requestedRelease(kubernetes: string | undefined, env: NodeJS.ProcessEnv = process.env): KubernetesRelease {
  try {
    if (kubernetes !== undefined) return resolveKubernetesRelease(kubernetes, moduleReleaseVersions());
    if (env.OKT_KUBERNETES_VERSION) return resolveKubernetesRelease(env.OKT_KUBERNETES_VERSION, moduleReleaseVersions(), 'OKT_KUBERNETES_VERSION');
    return resolveKubernetesRelease(DEFAULT_KUBERNETES_VERSION, moduleReleaseVersions());
  } catch (error) {
    throw error instanceof KubernetesVersionError ? new ProvisionError(error.message) : error;
  }
}

/** The binaries of `release` (with `node`, the node's too) if they are all cached. */
export function findBinaries(env: NodeJS.ProcessEnv = process.env, release: KubernetesRelease = requestedRelease(undefined, env), node = false): Binaries | undefined {
  if (missingReleaseTargets(release.version, node, env).length > 0) return undefined;
  const path = (name: string) => releaseBinaryPath(release.version, name, env);
  return {
    etcd: path('etcd'),
    kubeApiserver: path('kube-apiserver'),
    kubectl: path('kubectl'),
    kubernetesVersion: release.version,
    ...(node ? { node: nodeBinaryPaths(release.version, env) } : {}),
  };
}

/** Whether everything a node of the default release needs is provisioned (binaries cached, packages installed). */
export function isNodeProvisioned(env: NodeJS.ProcessEnv = process.env): boolean {
  return findBinaries(env, requestedRelease(undefined, env), true) !== undefined && NODE_PACKAGES.every(isInstalled);
}

/**
 * Make the requested release available (ProvisionOptions.kubernetes): build kube-apiserver, etcd and
 * kubectl once from the release's pinned Go modules into the okt cache (no root needed); with `node`,
 * also the node's commands, the pause program and containerd, and install what a node needs from
 * Debian (root). A second call returns at once.
 */
export async function provision(options: ProvisionOptions = {}): Promise<Binaries> {
  const env = options.env ?? process.env;
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const node = options.node ?? false;
  const release = requestedRelease(options.kubernetes, env);
  if (node && !releaseHasNode(release.version)) {
    const withNode = moduleReleaseVersions().filter(releaseHasNode);
    throw new ProvisionError(
      `Kubernetes ${release.version} is provisioned as a control plane alone (its k8s/v${release.version}/tools.go names no node commands); a node (--node) runs ${withNode.join(', ') || 'no release'}`,
    );
  }
  const missingPackages = () => (node ? NODE_PACKAGES.filter((p) => !isInstalled(p)) : []);
  const ready = () => (missingPackages().length === 0 ? findBinaries(env, release, node) : undefined);
  const cached = ready();
  if (cached) return cached;
  if (process.platform !== 'linux') throw new ProvisionError(`okt builds Kubernetes ${release.version} on Linux only; this is ${process.platform}`);
  if (missingPackages().length > 0) refuseUnlessAble();
  mkdirSync(cacheDir(env), { recursive: true });
  const unlock = await acquireLock(join(cacheDir(env), 'provision.lock'), (pid) =>
    progress(`okt cluster: another provisioning (pid ${pid}) is running; waiting for it`),
  );
  try {
    const again = ready();
    if (again) return again;
    const logPath = provisionLogPath(env);
    writeFileSync(logPath, `okt provisioning started ${new Date().toISOString()}\n`);
    progress(`okt cluster: provisioning Kubernetes ${release.version}${node ? ' with a node' : ''} from its pinned Go modules (log: ${logPath})`);
    const packages = missingPackages();
    const targets = missingReleaseTargets(release.version, node, env);
    const steps = new Steps(progress, targets.length + (packages.length > 0 ? 1 : 0));
    if (packages.length > 0) await steps.run(`installing ${packages.join(' ')} with apt-get`, () => aptGetInstall(packages));
    await asProvisionError(() => buildReleaseTargets(release.version, targets, steps, logPath, env));
    const binaries = findBinaries(env, release, node);
    if (!binaries) throw new ProvisionError(`provisioning finished but a binary of Kubernetes ${release.version} is missing`);
    progress(`okt cluster: Kubernetes ${release.version}${node ? ' and its node' : ''} ready to start (${steps.totalSeconds()} s)`);
    return binaries;
  } finally {
    unlock();
  }
}

/** A failed command becomes a ProvisionError that shows the end of its log. */
async function asProvisionError<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof CommandError) {
      throw new ProvisionError(`${error.message}\n--- last lines of ${error.logPath} ---\n${error.logTail}\n--- full log: ${error.logPath}`);
    }
    throw error;
  }
}

function refuseUnlessAble(): void {
  const reasons: string[] = [];
  if (process.platform !== 'linux') reasons.push(`this is ${process.platform}, not Linux`);
  else if (!which('apt-get', SYSTEM_DIRS)) reasons.push('apt-get is not available (not a Debian-like system)');
  else if (process.getuid?.() !== 0) reasons.push('it does not run as root (apt-get install needs root)');
  if (reasons.length === 0) return;
  throw new ProvisionError(
    [
      `okt cannot provision a node here: ${reasons.join('; ')}.`,
      `Either install what a node needs by hand (Debian: apt-get install ${NODE_PACKAGES.join(' ')}) and run it again,`,
      'or point okt at an existing cluster instead:',
      '  - export OKT_E2E_KUBECONFIG=/path/to/kubeconfig   (the end-to-end tests use it instead of starting one)',
      '  - export KUBECONFIG=/path/to/kubeconfig           (okt commands)',
    ].join('\n'),
  );
}

function isInstalled(pkg: string): boolean {
  try {
    return execFileSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).includes(
      'install ok installed',
    );
  } catch {
    return false;
  }
}
