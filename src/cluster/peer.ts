// The e2e bench's peer operators (bench/peer): commands of a Go module of okt's own, whose go.mod and
// go.sum pin client-go and controller-runtime, built with the machine's Go and cached.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { findGo } from './kubernetes-modules.ts';
import { requiredGoVersion } from './kubernetes-version.ts';
import { acquireLock } from './lock.ts';
import { cacheDir } from './paths.ts';
import { installAtomically, ProvisionError, Steps } from './steps.ts';
import { CommandError, runLogged } from './run.ts';

/** A peer: a command (`./<dir>` of the module) and the name its binary is cached as. */
export interface PeerCommand {
  pkg: string;
  name: string;
}

export function peerBinaryPath(name: string, env: NodeJS.ProcessEnv = process.env): string {
  return join(cacheDir(env), 'bin', name);
}

/** The sha256 of the sources the cached binary was built from, next to it. */
function stampPath(name: string, env: NodeJS.ProcessEnv): string {
  return `${peerBinaryPath(name, env)}.source-sha256`;
}

/** The sha256 of a command's build: its package, and the module's go.mod, go.sum and every .go file (with its path). */
export function peerSourceDigest(moduleDir: string, pkg: string): string {
  const hash = createHash('sha256').update(`${pkg}\0`);
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.name === 'go.mod' || entry.name === 'go.sum' || entry.name.endsWith('.go')) files.push(relative(moduleDir, file));
    }
  };
  walk(moduleDir);
  for (const file of files.sort()) hash.update(`${file}\0`).update(readFileSync(join(moduleDir, file))).update('\0');
  return hash.digest('hex');
}

export interface PeerBinary {
  path: string;
  /** Seconds the build took when this call built it; undefined when the cached binary was current. */
  builtSeconds?: number;
}

/**
 * The binary of `command` of the Go module in `moduleDir`, from the cache when it was built from the
 * same sources, else built now: `go build -mod=readonly` (go.mod and go.sum as they are; every module
 * fetched is checked against go.sum) with the machine's Go (the one findGo picks for the go.mod's
 * `go` line), CGO off, the module and build caches the user's own (GOMODCACHE, GOCACHE).
 */
export async function ensurePeerBinary(options: { moduleDir: string; command: PeerCommand; progress?: (line: string) => void; env?: NodeJS.ProcessEnv }): Promise<PeerBinary> {
  const { moduleDir, command } = options;
  const env = options.env ?? process.env;
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  const digest = peerSourceDigest(moduleDir, command.pkg);
  const binary = peerBinaryPath(command.name, env);
  const stamp = stampPath(command.name, env);
  const current = () => existsSync(binary) && existsSync(stamp) && readFileSync(stamp, 'utf8').trim() === digest;
  if (current()) return { path: binary };

  mkdirSync(cacheDir(env), { recursive: true });
  const release = await acquireLock(join(cacheDir(env), `${command.name}-build.lock`), (pid) =>
    progress(`okt peer: another build of ${command.name} (pid ${pid}) is running; waiting for it`),
  );
  const logPath = join(cacheDir(env), `${command.name}-build.log`);
  const outDir = mkdtempSync(join(cacheDir(env), 'peer-build-'));
  try {
    if (current()) return { path: binary };
    writeFileSync(logPath, `${command.name} build started ${new Date().toISOString()}\n`);
    const go = findGo(requiredGoVersion(readFileSync(join(moduleDir, 'go.mod'), 'utf8')) ?? '1.0', env);
    const steps = new Steps((line) => progress(line.replace(/^okt cluster:/, 'okt peer:')), 2);
    const built = join(outDir, command.name);
    await steps.run(`building ${command.name} (${command.pkg} of ${moduleDir}) with ${go} (log: ${logPath})`, () =>
      runLogged(go, ['build', '-mod=readonly', '-trimpath', '-o', built, command.pkg], { cwd: moduleDir, env: { ...env, CGO_ENABLED: '0' }, logPath }),
    );
    await steps.run('caching the binary', () => {
      installAtomically(built, binary);
      writeFileSync(stamp, `${digest}\n`);
    });
    progress(`okt peer: built ${binary} in ${steps.totalSeconds()} s`);
    return { path: binary, builtSeconds: Number(steps.totalSeconds()) };
  } catch (error) {
    if (error instanceof CommandError) {
      throw new ProvisionError(`${error.message}\n--- last lines of ${error.logPath} ---\n${error.logTail}\n--- full log: ${error.logPath}`);
    }
    throw error;
  } finally {
    rmSync(outDir, { recursive: true, force: true });
    release();
  }
}
