// The e2e bench's peer operator (bench/peer/main.go): a client-go program built with Go 1.19 against
// the same Debian `kubernetes` source the control plane is built from, and cached next to it.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { acquireLock } from './lock.ts';
import { cacheDir } from './paths.ts';
import { BUILD_PACKAGES, DEBIAN_GO_BIN, debianGoEnv, enableDebSrc, fetchKubernetesSource } from './debian-source.ts';
import { isInstalled } from './provision.ts';
import { installAtomically, ProvisionError, Steps } from './steps.ts';
import { CommandError, runLogged } from './run.ts';

/** The package the peer is built as, inside the kubernetes tree (so its vendor/ and staging/ resolve). */
const PEER_PACKAGE = 'cmd/okt-peer';

export function peerBinaryPath(env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'bin', 'okt-peer');
}

/** The sha256 of the source the cached binary was built from, next to it. */
function stampPath(env: NodeJS.ProcessEnv): string {
  return `${peerBinaryPath(env)}.source-sha256`;
}

export interface PeerBinary {
  path: string;
  /** Seconds the build took when this call built it; undefined when the cached binary was current. */
  builtSeconds?: number;
}

/**
 * The peer binary built from `mainGo` (one Go file of package main), from the cache when it was built
 * from the same source, else built now: the Debian `kubernetes` source fetched as provisioning fetches
 * it (deb-src, apt-get source, reflect2 fixed, GOPATH layout), the file put in the tree as
 * cmd/okt-peer, `go build` in GOPATH mode (GO111MODULE=off, as the tree's own hack/ scripts build),
 * the binary cached, the tree removed. About a minute on 2 cores.
 */
export async function ensurePeerBinary(options: { mainGo: string; progress?: (line: string) => void; env?: NodeJS.ProcessEnv }): Promise<PeerBinary> {
  const env = options.env ?? process.env;
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const source = readFileSync(options.mainGo);
  const digest = createHash('sha256').update(source).digest('hex');
  const binary = peerBinaryPath(env);
  const current = () => existsSync(binary) && existsSync(stampPath(env)) && readFileSync(stampPath(env), 'utf8').trim() === digest;
  if (current()) return { path: binary };

  mkdirSync(cacheDir(env), { recursive: true });
  // The same lock as provisioning: both run apt-get and fetch the same source package.
  const release = await acquireLock(join(cacheDir(env), 'provision.lock'), (pid) =>
    progress(`okt peer: a provisioning (pid ${pid}) is running; waiting for it`),
  );
  const logPath = join(cacheDir(env), 'peer-build.log');
  const buildDir = join(cacheDir(env), 'peer-build');
  try {
    if (current()) return { path: binary };
    writeFileSync(logPath, `okt-peer build started ${new Date().toISOString()}\n`);
    progress(`okt peer: building the client-go peer operator from ${options.mainGo} (log: ${logPath})`);
    const steps = new Steps((line) => progress(line.replace(/^okt cluster:/, 'okt peer:')), 7);
    const aptEnv = { ...env, DEBIAN_FRONTEND: 'noninteractive' };
    await steps.run('enabling Debian source packages (deb-src)', () => enableDebSrc());
    const missing = BUILD_PACKAGES.filter((p) => !isInstalled(p));
    await steps.run(missing.length > 0 ? `installing ${missing.join(' ')} with apt-get` : 'updating apt package lists', async () => {
      await runLogged('apt-get', ['update'], { env: aptEnv, logPath });
      if (missing.length > 0) await runLogged('apt-get', ['install', '-y', '--no-install-recommends', ...missing], { env: aptEnv, logPath });
    });
    const { linked, sourceDir } = await fetchKubernetesSource(buildDir, steps, logPath);
    await steps.run(`building ${PEER_PACKAGE} with client-go from the tree's staging/ (about a minute on 2 cores)`, async () => {
      mkdirSync(join(sourceDir, PEER_PACKAGE), { recursive: true });
      copyFileSync(options.mainGo, join(sourceDir, PEER_PACKAGE, 'main.go'));
      const buildEnv = { ...debianGoEnv(env), GOPATH: join(buildDir, 'gopath'), GOCACHE: join(buildDir, 'go-cache'), GO111MODULE: 'off', GOFLAGS: '', CGO_ENABLED: '0' };
      // By import path: GOPATH mode finds vendor/ only for packages under $GOPATH/src, and a relative
      // path would resolve through the symlink to the tree outside it.
      await runLogged(`${DEBIAN_GO_BIN}/go`, ['build', '-o', join(sourceDir, '_output', 'okt-peer'), `k8s.io/kubernetes/${PEER_PACKAGE}`], { cwd: linked, env: buildEnv, logPath });
    });
    await steps.run('caching the binary', async () => {
      installAtomically(join(sourceDir, '_output', 'okt-peer'), binary);
      writeFileSync(stampPath(env), `${digest}\n`);
    });
    progress(`okt peer: built ${binary} in ${steps.totalSeconds()} s`);
    return { path: binary, builtSeconds: Number(steps.totalSeconds()) };
  } catch (error) {
    if (error instanceof CommandError) {
      throw new ProvisionError(`${error.message}\n--- last lines of ${error.logPath} ---\n${error.logTail}\n--- full log: ${error.logPath}`);
    }
    throw error;
  } finally {
    rmSync(buildDir, { recursive: true, force: true });
    release();
  }
}
