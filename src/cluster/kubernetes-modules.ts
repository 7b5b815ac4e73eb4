// Releases built from Go modules: `k8s/v<version>/go.mod` and `go.sum` (in the repository and the
// npm package) pin k8s.io/kubernetes, each of its staging modules and etcd with their checksums, and
// `k8s/containerd/` the node's container runtime; `go build -mod=readonly` builds from exactly those,
// verified against go.sum, and the binaries are cached per release.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { oktPackageRoot } from '../util/package-root.ts';
import {
  CONTAINERD_COMMANDS,
  CONTROL_PLANE_COMMANDS,
  containerdLdflags,
  NODE_COMMANDS,
  pinnedContainerdVersion,
  pinsNodeCommands,
  compareVersions,
  goToolchainVersion,
  moduleDirVersion,
  pinnedKubernetesVersion,
  requiredGoVersion,
  versionLdflags,
  type ModuleCommand,
} from './kubernetes-version.ts';
import { cacheDir, releaseBinaryPath } from './paths.ts';
import { installAtomically, ProvisionError, type Steps } from './steps.ts';
import { runLogged } from './run.ts';

/** The directory of the pinned modules, one `v<version>` directory per release. */
export function kubernetesModulesRoot(): string {
  return join(oktPackageRoot(), 'k8s');
}

/** The releases whose modules are pinned here, each checked against its go.mod. */
export function moduleReleaseVersions(root: string = kubernetesModulesRoot()): string[] {
  if (!existsSync(root)) return [];
  const versions: string[] = [];
  for (const dir of readdirSync(root)) {
    const version = moduleDirVersion(dir);
    if (!version) continue;
    const pinned = pinnedKubernetesVersion(readFileSync(join(root, dir, 'go.mod'), 'utf8'));
    if (pinned !== version) throw new ProvisionError(`${join(root, dir, 'go.mod')} requires k8s.io/kubernetes ${pinned ? `v${pinned}` : 'nothing'}, not v${version} as its directory says`);
    versions.push(version);
  }
  return versions.sort(compareVersions);
}

/** What a node of a module-built release runs, all cached: its Kubernetes commands, the pause program and containerd. */
export interface NodeBinaries {
  readonly kubelet: string;
  readonly kubeProxy: string;
  readonly kubeControllerManager: string;
  readonly kubeScheduler: string;
  /** The pause image's program (build/pause/linux/pause.c of the release's module), compiled static. */
  readonly pause: string;
  readonly containerd: string;
  /** containerd's runc shim: containerd finds it on its PATH, so its directory goes first there. */
  readonly containerdShim: string;
  readonly ctr: string;
}

/** The directory pinning the node's container runtime. */
export function containerdModuleDir(): string {
  return join(kubernetesModulesRoot(), 'containerd');
}

/** The containerd version k8s/containerd pins. */
export function containerdVersion(): string {
  const goMod = join(containerdModuleDir(), 'go.mod');
  const version = pinnedContainerdVersion(readFileSync(goMod, 'utf8'));
  if (!version) throw new ProvisionError(`${goMod} requires no github.com/containerd/containerd/v2`);
  return version;
}

/** A command of the pinned containerd, cached per containerd version: `bin/containerd-v2.4.2/ctr`. */
export function containerdBinaryPath(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'bin', `containerd-v${containerdVersion()}`, name);
}

/** Whether a node can be provisioned for `version` (its tools.go names the node's commands). */
export function releaseHasNode(version: string): boolean {
  return pinsNodeCommands(readFileSync(join(kubernetesModulesRoot(), `v${version}`, 'tools.go'), 'utf8'));
}

/** Where each of a node's binaries is cached. */
export function nodeBinaryPaths(version: string, env: NodeJS.ProcessEnv): NodeBinaries {
  const kube = (name: string) => releaseBinaryPath(version, name, env);
  const runtime = (name: string) => containerdBinaryPath(name, env);
  return {
    kubelet: kube('kubelet'),
    kubeProxy: kube('kube-proxy'),
    kubeControllerManager: kube('kube-controller-manager'),
    kubeScheduler: kube('kube-scheduler'),
    pause: kube(PAUSE_PROGRAM),
    containerd: runtime('containerd'),
    containerdShim: runtime('containerd-shim-runc-v2'),
    ctr: runtime('ctr'),
  };
}

const PAUSE_PROGRAM = 'pause';

/** One thing to build and cache: a command of a pinned module, or the pause program. */
interface BuildTarget {
  readonly title: string;
  readonly dest: string;
  build(outDir: string, go: GoBuild): Promise<string>;
}

/** The Go a module's builds use, with the environment and log they share. */
interface GoBuild {
  readonly go: string;
  readonly env: NodeJS.ProcessEnv;
  readonly logPath: string;
}

/** What of a release is not cached yet: its control plane, and with `node` the node's binaries. */
export function missingReleaseTargets(version: string, node: boolean, env: NodeJS.ProcessEnv): BuildTarget[] {
  const moduleDir = join(kubernetesModulesRoot(), `v${version}`);
  const command = (c: ModuleCommand, dir: string, ldflags: string, dest: string, what: string): BuildTarget => ({
    title: `building ${c.name} of ${what} (${c.pkg})`,
    dest,
    build: async (outDir, go) => {
      const built = join(outDir, c.name);
      await runLogged(go.go, ['build', '-trimpath', `-ldflags=${ldflags}`, '-o', built, c.pkg], { cwd: dir, env: go.env, logPath: go.logPath });
      return built;
    },
  });
  const kubernetes = `Kubernetes ${version}`;
  const targets = CONTROL_PLANE_COMMANDS.map((c) => command(c, moduleDir, versionLdflags(version), releaseBinaryPath(version, c.name, env), kubernetes));
  if (node) {
    const paths = nodeBinaryPaths(version, env);
    const runtime = containerdVersion();
    targets.push(
      ...NODE_COMMANDS.map((c) => command(c, moduleDir, versionLdflags(version), releaseBinaryPath(version, c.name, env), kubernetes)),
      {
        title: `compiling the pause program of ${kubernetes} (build/pause/linux/pause.c of its module)`,
        dest: paths.pause,
        build: async (outDir, go) => {
          const source = await moduleSourceDir(moduleDir, 'k8s.io/kubernetes', go);
          const built = join(outDir, PAUSE_PROGRAM);
          // As build/pause/Makefile does, without its cross-build image.
          await runLogged('gcc', ['-Os', '-Wall', '-Werror', '-static', `-DVERSION=v${version}-okt`, '-o', built, join(source, 'build', 'pause', 'linux', 'pause.c')], { logPath: go.logPath });
          return built;
        },
      },
      ...CONTAINERD_COMMANDS.map((c) => command(c, containerdModuleDir(), containerdLdflags(runtime), join(dirname(paths.containerd), c.name), `containerd ${runtime}`)),
    );
  }
  return targets.filter((target) => !existsSync(target.dest));
}

/** The directory of a module in the module cache (downloaded and checked against go.sum first). */
async function moduleSourceDir(moduleDir: string, modulePath: string, go: GoBuild): Promise<string> {
  await runLogged(go.go, ['mod', 'download', modulePath], { cwd: moduleDir, env: go.env, logPath: go.logPath });
  return execFileSync(go.go, ['list', '-m', '-f', '{{.Dir}}', modulePath], { cwd: moduleDir, env: go.env, encoding: 'utf8' }).trim();
}

/** The first `go` (PATH, then the usual install place) at least as new as `needed`, or why there is none. */
export function findGo(needed: string, env: NodeJS.ProcessEnv): string {
  const pathDirs = (env.PATH ?? '').split(':').filter(Boolean);
  const candidates = [...new Set([...pathDirs.map((dir) => join(dir, 'go')), '/usr/local/go/bin/go'])].filter((file) => existsSync(file));
  const seen: string[] = [];
  for (const go of candidates) {
    let version: string | undefined;
    try {
      version = goToolchainVersion(execFileSync(go, ['env', 'GOVERSION'], { encoding: 'utf8', env: { ...env, GOTOOLCHAIN: 'local' } }));
    } catch {
      continue;
    }
    if (version && compareVersions(version, needed) >= 0) return go;
    seen.push(`${go} is go${version ?? '?'}`);
  }
  throw new ProvisionError(
    `building Kubernetes from Go modules needs Go ${needed} or newer (${seen.length > 0 ? seen.join(', ') : 'no go on PATH or in /usr/local/go/bin'}); install it from https://go.dev/dl/`,
  );
}

/** The newest Go any pinned module of `version` (and its container runtime) asks for. */
function neededGo(version: string): string {
  const dirs = [join(kubernetesModulesRoot(), `v${version}`), containerdModuleDir()];
  return dirs.map((dir) => requiredGoVersion(readFileSync(join(dir, 'go.mod'), 'utf8')) ?? '1.0').sort(compareVersions).at(-1)!;
}

/**
 * Build each target with the machine's Go (CGO off, as Kubernetes' release builds) and cache it. The Go
 * module and build caches are the user's own (GOMODCACHE, GOCACHE): a second release reuses what they share.
 */
export async function buildReleaseTargets(version: string, targets: readonly BuildTarget[], steps: Steps, logPath: string, env: NodeJS.ProcessEnv): Promise<void> {
  const go = findGo(neededGo(version), env);
  // -mod=readonly: go.mod and go.sum are used as they are, never updated; every download is checked against go.sum.
  const build: GoBuild = { go, logPath, env: { ...env, CGO_ENABLED: '0', GOFLAGS: `${env.GOFLAGS ?? ''} -mod=readonly`.trim() } };
  mkdirSync(cacheDir(env), { recursive: true });
  const outDir = mkdtempSync(join(cacheDir(env), 'build-'));
  try {
    for (const target of targets) {
      await steps.run(target.title, async () => installAtomically(await target.build(outDir, build), target.dest));
    }
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}
