import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiserverBinaryPath, cacheDir, kubeBinaryPath, NODE_KUBE_BINARIES, PAUSE_BINARY, provisionLogPath, releaseBinaryPath, type KubeBinary } from './paths.ts';
import { acquireLock } from './lock.ts';
import { CommandError, runLogged, which } from './run.ts';
import { installAtomically, ProvisionError, Steps } from './steps.ts';
import { buildModuleRelease, missingModuleCommands, moduleReleaseVersions } from './kubernetes-modules.ts';
import {
  DEBIAN_KUBERNETES_VERSION,
  DEFAULT_KUBERNETES_VERSION,
  KubernetesVersionError,
  resolveKubernetesRelease,
  type KubernetesRelease,
} from './kubernetes-version.ts';


export interface Binaries {
  etcd: string;
  kubeApiserver: string;
  /** The release's own kubectl, built with it (releases from Go modules); else undefined: the kubectl on PATH. */
  kubectl?: string;
  /** The release these binaries are (`1.37.2`). */
  kubernetesVersion: string;
}

export interface ProvisionOptions {
  /**
   * Also what a node needs: kube-controller-manager, kube-scheduler, kubelet and kube-proxy (built in
   * the same make as kube-apiserver) and Debian's containerd, runc, CNI plugins, iptables, buildah.
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

const DEBIAN_RELEASE: KubernetesRelease = { source: 'debian', version: DEBIAN_KUBERNETES_VERSION };
const SYSTEM_DIRS = ['/usr/bin', '/usr/local/bin', '/usr/sbin'];
const REFLECT2_FIXED = '/usr/share/gocode/src/github.com/modern-go/reflect2';
const RUNTIME_PACKAGES = ['etcd-server'];
/** What a node runs on (and builds images with), from Debian alone; see ../shared/reference/real-node.md. */
const NODE_PACKAGES = [
  'containerd',
  'runc',
  'containernetworking-plugins',
  'iptables',
  'conntrack',
  'iproute2',
  'buildah',
  'debootstrap',
  'gcc',
  'libc6-dev',
];
export const BUILD_PACKAGES = [
  'golang-1.19-go',
  'golang-github-modern-go-reflect2-dev',
  'dpkg-dev',
  'rsync',
  'jq',
  'make',
  'openssl',
];

/**
 * Debian's Go 1.19, which the Debian 1.20.2 tree was made for: named explicitly, because a machine's
 * own newer Go (1.26 at /usr/local/go) may come first on PATH and refuses that tree's old code.
 */
export const DEBIAN_GO_BIN = '/usr/lib/go-1.19/bin';

/** `env` with Debian's Go first on PATH and nothing that would make it pick another toolchain. */
export function debianGoEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const { GOROOT: _goroot, GOTOOLCHAIN: _toolchain, ...rest } = env;
  return { ...rest, PATH: `${DEBIAN_GO_BIN}:${env.PATH ?? ''}` };
}

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

/**
 * The binaries of `release` if they are all there: a release from Go modules has its own etcd and
 * kubectl next to kube-apiserver; Debian's has the cached kube-apiserver and Debian's etcd on PATH.
 */
export function findBinaries(env: NodeJS.ProcessEnv = process.env, release: KubernetesRelease = requestedRelease(undefined, env)): Binaries | undefined {
  if (release.source === 'go-modules') {
    const path = (name: string) => releaseBinaryPath(release.version, name, env);
    if (missingModuleCommands(release.version, env).length > 0) return undefined;
    return { etcd: path('etcd'), kubeApiserver: path('kube-apiserver'), kubectl: path('kubectl'), kubernetesVersion: release.version };
  }
  const etcd = which('etcd', SYSTEM_DIRS);
  const kubeApiserver = apiserverBinaryPath(env);
  return etcd && existsSync(kubeApiserver) ? { etcd, kubeApiserver, kubernetesVersion: release.version } : undefined;
}

function kubeBinariesWanted(node: boolean): KubeBinary[] {
  return node ? ['kube-apiserver', ...NODE_KUBE_BINARIES, PAUSE_BINARY] : ['kube-apiserver'];
}

function missingKubeBinaries(node: boolean, env: NodeJS.ProcessEnv): KubeBinary[] {
  return kubeBinariesWanted(node).filter((name) => !existsSync(kubeBinaryPath(name, env)));
}

/** Whether everything a node needs is provisioned (binaries cached, packages installed). */
export function isNodeProvisioned(env: NodeJS.ProcessEnv = process.env): boolean {
  return findBinaries(env, DEBIAN_RELEASE) !== undefined && missingKubeBinaries(true, env).length === 0 && NODE_PACKAGES.every(isInstalled);
}

function isProvisioned(node: boolean, env: NodeJS.ProcessEnv): boolean {
  return node ? isNodeProvisioned(env) : findBinaries(env, DEBIAN_RELEASE) !== undefined;
}

/**
 * Make etcd and kube-apiserver of the requested release available (ProvisionOptions.kubernetes). From
 * Go modules: build kube-apiserver, etcd and kubectl once into the okt cache (no root needed).
 * Debian's 1.20.2: install Debian's etcd-server, and build kube-apiserver once from Debian's
 * `kubernetes` source package into the okt cache. A second call returns at once.
 */
export async function provision(options: ProvisionOptions = {}): Promise<Binaries> {
  const env = options.env ?? process.env;
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const node = options.node ?? false;
  const release = requestedRelease(options.kubernetes, env);
  if (release.source === 'go-modules') return await provisionFromModules(release, node, progress, env);
  return await provisionDebian(node, progress, env);
}

/** Build the missing commands of a release from its pinned Go modules, under the provisioning lock. */
async function provisionFromModules(release: KubernetesRelease, node: boolean, progress: (line: string) => void, env: NodeJS.ProcessEnv): Promise<Binaries> {
  if (node) {
    throw new ProvisionError(
      `a node (--node) is provisioned for Kubernetes ${DEBIAN_KUBERNETES_VERSION} only; Kubernetes ${release.version} has the control plane alone so far (docs/operations.md)`,
    );
  }
  const cached = findBinaries(env, release);
  if (cached) return cached;
  if (process.platform !== 'linux') throw new ProvisionError(`okt builds Kubernetes ${release.version} on Linux only; this is ${process.platform}`);
  mkdirSync(cacheDir(env), { recursive: true });
  const unlock = await acquireLock(join(cacheDir(env), 'provision.lock'), (pid) =>
    progress(`okt cluster: another provisioning (pid ${pid}) is running; waiting for it`),
  );
  try {
    const missing = missingModuleCommands(release.version, env);
    if (missing.length > 0) {
      const logPath = provisionLogPath(env);
      writeFileSync(logPath, `okt provisioning started ${new Date().toISOString()}\n`);
      progress(`okt cluster: building Kubernetes ${release.version} from its pinned Go modules (log: ${logPath})`);
      const steps = new Steps(progress, missing.length);
      await asProvisionError(() => buildModuleRelease(release.version, missing, steps, logPath, env));
      progress(`okt cluster: Kubernetes ${release.version} ready to start (${steps.totalSeconds()} s)`);
    }
    const binaries = findBinaries(env, release);
    if (!binaries) throw new ProvisionError(`provisioning finished but a binary of Kubernetes ${release.version} is missing`);
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

async function provisionDebian(node: boolean, progress: (line: string) => void, env: NodeJS.ProcessEnv): Promise<Binaries> {
  if (isProvisioned(node, env)) return findBinaries(env, DEBIAN_RELEASE)!;

  const toBuild = missingKubeBinaries(node, env);
  const needsBuild = toBuild.length > 0;
  const packages = [...RUNTIME_PACKAGES, ...(node ? NODE_PACKAGES : []), ...(needsBuild ? BUILD_PACKAGES : [])];
  refuseUnlessAble(env);

  mkdirSync(cacheDir(env), { recursive: true });
  const release = await acquireLock(join(cacheDir(env), 'provision.lock'), (pid) =>
    progress(`okt cluster: another provisioning (pid ${pid}) is running; waiting for it`),
  );
  try {
    if (isProvisioned(node, env)) return findBinaries(env, DEBIAN_RELEASE)!;
    const logPath = provisionLogPath(env);
    writeFileSync(logPath, `okt provisioning started ${new Date().toISOString()}\n`);
    progress(`okt cluster: provisioning a control plane${node ? ' and a node' : ''} (log: ${logPath})`);
    const steps = new Steps(progress, needsBuild ? 7 : 2);
    await asProvisionError(async () => {
      const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
      const missing = packages.filter((p) => !isInstalled(p));
      if (needsBuild) await steps.run('enabling Debian source packages (deb-src)', () => enableDebSrc());
      // A build needs fresh package lists for `apt-get source`, even when everything is installed.
      if (missing.length > 0 || needsBuild) {
        const title = missing.length > 0 ? `installing ${missing.join(' ')} with apt-get` : 'updating apt package lists';
        await steps.run(title, async () => {
          await runLogged('apt-get', ['update'], { env: aptEnv, logPath });
          if (missing.length > 0) {
            await runLogged('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { env: aptEnv, logPath });
          }
        });
      } else {
        steps.skip('apt packages already installed');
      }
      if (needsBuild) await buildKubernetes(toBuild, steps, logPath, env);
    });
    const binaries = findBinaries(env, DEBIAN_RELEASE);
    if (!binaries) throw new ProvisionError(`provisioning finished but etcd or ${apiserverBinaryPath(env)} is missing`);
    progress(`okt cluster: control plane${node ? ' and node' : ''} ready to start (${steps.totalSeconds()} s)`);
    return binaries;
  } finally {
    release();
  }
}

/** One make of every binary that is missing (a second make would compile the shared packages again). */
async function buildKubernetes(names: readonly KubeBinary[], steps: Steps, logPath: string, env: NodeJS.ProcessEnv): Promise<void> {
  const buildDir = join(cacheDir(env), 'build');
  const { sourceDir, upstream, linked, gopath } = await fetchKubernetesSource(buildDir, steps, logPath);
  const buildEnv = {
    ...debianGoEnv(env),
    GOPATH: gopath,
    GOCACHE: join(buildDir, 'go-cache'),
    CGO_ENABLED: '0',
    KUBE_GIT_VERSION: `v${upstream}`,
    KUBE_GIT_TREE_STATE: 'clean',
  };
  const commands = names.filter((name) => name !== PAUSE_BINARY);
  await steps.run(`building ${names.join(', ')} (about 4-8 minutes on 2 cores)`, async () => {
    if (commands.length > 0) {
      await runLogged('make', [`WHAT=${commands.map((name) => `cmd/${name}`).join(' ')}`], { cwd: linked, env: buildEnv, logPath });
    }
    if (names.includes(PAUSE_BINARY)) {
      // As build/pause/Makefile does, without its Docker cross-build image.
      const pauseDir = join(sourceDir, 'build', 'pause', 'linux');
      mkdirSync(join(sourceDir, '_output', 'bin'), { recursive: true });
      await runLogged('gcc', ['-Os', '-Wall', '-Werror', '-static', `-DVERSION=v${upstream}-okt`, '-o', join(sourceDir, '_output', 'bin', PAUSE_BINARY), 'pause.c'], {
        cwd: pauseDir,
        logPath,
      });
    }
  });
  await steps.run(names.length === 1 ? 'caching the binary' : 'caching the binaries', async () => {
    for (const name of names) {
      const built = join(sourceDir, '_output', 'bin', name);
      if (!existsSync(built)) throw new ProvisionError(`make succeeded but ${built} is missing`);
      installAtomically(built, kubeBinaryPath(name, env));
    }
    // The build keeps its own Go cache (2.6 GB) inside the tree: it goes with it.
    rmSync(buildDir, { recursive: true, force: true });
  });
}

/** The Debian `kubernetes` source tree, unpacked and ready for Go 1.19, in a GOPATH layout. */
export interface KubernetesSource {
  /** The unpacked tree. */
  sourceDir: string;
  /** Its upstream version (`1.20.2`). */
  upstream: string;
  /** The GOPATH whose src/k8s.io/kubernetes is the tree. */
  gopath: string;
  /** $GOPATH/src/k8s.io/kubernetes (a symlink to the tree): build from there. */
  linked: string;
}

/**
 * Fetch Debian's `kubernetes` source package into `buildDir` (emptied first), unpack it, fix its
 * vendored reflect2 for Go >= 1.18, and lay it out at $GOPATH/src/k8s.io/kubernetes as Debian's own
 * rules do (the tree builds in GOPATH mode: its hack/ scripts set GO111MODULE=off). Every build from
 * this source (kube-apiserver and the node's binaries here, the bench's client-go peer in peer.ts)
 * fetches it this way; the caller removes `buildDir` when done. Three steps.
 */
export async function fetchKubernetesSource(buildDir: string, steps: Steps, logPath: string): Promise<KubernetesSource> {
  rmSync(buildDir, { recursive: true, force: true });
  mkdirSync(buildDir, { recursive: true });
  const sourceDir = join(buildDir, 'kubernetes');

  await steps.run('downloading the Debian source package `kubernetes` (~34 MB)', () =>
    runLogged('apt-get', ['source', '--download-only', 'kubernetes'], { cwd: buildDir, logPath }),
  );
  const dsc = readdirSync(buildDir).find((f) => f.startsWith('kubernetes_') && f.endsWith('.dsc'));
  if (!dsc) throw new ProvisionError(`apt-get source did not leave a kubernetes_*.dsc in ${buildDir}`);
  const upstream = upstreamVersion(dsc);

  await steps.run(`unpacking kubernetes ${upstream}`, () =>
    runLogged('dpkg-source', ['--no-check', '-x', dsc, 'kubernetes'], { cwd: buildDir, logPath }),
  );
  await steps.run('replacing vendored modern-go/reflect2 (crashes under Go >= 1.18) with Debian\'s 1.0.2', async () =>
    replaceReflect2(sourceDir),
  );

  // The Makefile generates code (openapi, deepcopy) that a bare `go build` lacks; it wants the tree at
  // $GOPATH/src/k8s.io/kubernetes, as Debian's own rules arrange.
  const gopath = join(buildDir, 'gopath');
  mkdirSync(join(gopath, 'src', 'k8s.io'), { recursive: true });
  const linked = join(gopath, 'src', 'k8s.io', 'kubernetes');
  symlinkSync(sourceDir, linked);
  return { sourceDir, upstream, gopath, linked };
}

/** `kubernetes_1.20.5+really1.20.2-1.1+deb12u1.dsc` -> `1.20.2`. */
export function upstreamVersion(dscName: string): string {
  const version = dscName.replace(/^kubernetes_/, '').replace(/\.dsc$/, '');
  const upstream = version.replace(/^\d+:/, '').replace(/-[^-]+$/, '');
  return upstream.includes('really') ? upstream.slice(upstream.lastIndexOf('really') + 'really'.length) : upstream;
}

function replaceReflect2(sourceDir: string): void {
  const vendored = join(sourceDir, 'vendor', 'github.com', 'modern-go', 'reflect2');
  if (!existsSync(REFLECT2_FIXED)) throw new ProvisionError(`${REFLECT2_FIXED} is missing (package golang-github-modern-go-reflect2-dev)`);
  if (!existsSync(vendored)) throw new ProvisionError(`${vendored} is missing in the kubernetes source`);
  const isSource = (f: string) => (f.endsWith('.go') || f.endsWith('.s')) && !f.endsWith('_test.go');
  for (const f of readdirSync(vendored).filter(isSource)) rmSync(join(vendored, f));
  for (const f of readdirSync(REFLECT2_FIXED).filter(isSource)) copyFileSync(join(REFLECT2_FIXED, f), join(vendored, f));
}


export function refuseUnlessAble(env: NodeJS.ProcessEnv): void {
  const reasons: string[] = [];
  if (process.platform !== 'linux') reasons.push(`this is ${process.platform}, not Linux`);
  else if (!which('apt-get', SYSTEM_DIRS)) reasons.push('apt-get is not available (not a Debian-like system)');
  else if (process.getuid?.() !== 0) reasons.push('it does not run as root (apt-get install needs root)');
  if (reasons.length === 0) return;
  throw new ProvisionError(
    [
      `okt cannot provision a control plane here: ${reasons.join('; ')}.`,
      'Either install it by hand:',
      `  - etcd on PATH (Debian: apt-get install ${RUNTIME_PACKAGES.join(' ')});`,
      `  - a kube-apiserver binary (v1.20 or later) at ${apiserverBinaryPath(env)}`,
      `    (build recipe: docs/operations.md, section "Control plane"; build tools: ${BUILD_PACKAGES.join(' ')});`,
      'or point okt at an existing cluster instead:',
      '  - export OKT_E2E_KUBECONFIG=/path/to/kubeconfig   (the end-to-end tests use it instead of starting one)',
      '  - export KUBECONFIG=/path/to/kubeconfig           (okt commands)',
    ].join('\n'),
  );
}

export function isInstalled(pkg: string): boolean {
  try {
    return execFileSync('dpkg-query', ['-W', '-f=${Status}', pkg], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).includes(
      'install ok installed',
    );
  } catch {
    return false;
  }
}

const SOURCES_DIR = '/etc/apt/sources.list.d';
const OKT_SOURCES = join(SOURCES_DIR, 'okt-deb-src.sources');
const OKT_LIST = join(SOURCES_DIR, 'okt-deb-src.list');

/**
 * Unless some deb-src entry exists, add ones mirroring the existing deb entries, in okt's own files
 * (the system's files stay as they are).
 */
export function enableDebSrc(): void {
  const files = [
    ...(existsSync('/etc/apt/sources.list') ? ['/etc/apt/sources.list'] : []),
    ...(existsSync(SOURCES_DIR) ? readdirSync(SOURCES_DIR).map((f) => join(SOURCES_DIR, f)) : []),
  ];
  const deb822: string[] = [];
  const oneLine: string[] = [];
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const types = /^Types:(.*)$/m.exec(stanza)?.[1]?.trim().split(/\s+/) ?? [];
        if (types.includes('deb-src')) return;
        if (types.includes('deb')) deb822.push(stanza.replace(/^Types:.*$/m, 'Types: deb-src').trim());
      }
    } else if (file.endsWith('.list') || file === '/etc/apt/sources.list') {
      for (const line of text.split('\n')) {
        if (/^\s*deb-src\s/.test(line)) return;
        if (/^\s*deb\s/.test(line)) oneLine.push(line.replace(/^\s*deb\s/, 'deb-src '));
      }
    }
  }
  if (deb822.length === 0 && oneLine.length === 0) {
    throw new ProvisionError('no apt sources found to mirror as deb-src; enable deb-src by hand and retry');
  }
  const header = '# Added by okt (npx okt cluster provision): source packages, to build kube-apiserver.\n';
  if (deb822.length > 0) writeFileSync(OKT_SOURCES, header + deb822.join('\n\n') + '\n');
  if (oneLine.length > 0) writeFileSync(OKT_LIST, header + oneLine.join('\n') + '\n');
}

