// Releases built from Go modules: `k8s/v<version>/go.mod` and `go.sum` (in the repository and the
// npm package) pin k8s.io/kubernetes, each of its staging modules and etcd with their checksums;
// `go build -mod=readonly` builds from exactly those, verified against go.sum, and the binaries are
// cached per release.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { oktPackageRoot } from '../util/package-root.ts';
import {
  CONTROL_PLANE_COMMANDS,
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

/** Which of a release's control-plane commands are not cached yet. */
export function missingModuleCommands(version: string, env: NodeJS.ProcessEnv): ModuleCommand[] {
  return CONTROL_PLANE_COMMANDS.filter((command) => !existsSync(releaseBinaryPath(version, command.name, env)));
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

/**
 * Build each missing command of `version` from its pinned module with the machine's Go (CGO off, as
 * Kubernetes' release builds) and cache it. The Go module and build caches are the user's own
 * (GOMODCACHE, GOCACHE): a second release reuses what they share.
 */
export async function buildModuleRelease(version: string, commands: readonly ModuleCommand[], steps: Steps, logPath: string, env: NodeJS.ProcessEnv): Promise<void> {
  const moduleDir = join(kubernetesModulesRoot(), `v${version}`);
  const goMod = readFileSync(join(moduleDir, 'go.mod'), 'utf8');
  const go = findGo(requiredGoVersion(goMod) ?? '1.0', env);
  // -mod=readonly: go.mod and go.sum are used as they are, never updated; every download is checked against go.sum.
  const buildEnv = { ...env, CGO_ENABLED: '0', GOFLAGS: `${env.GOFLAGS ?? ''} -mod=readonly`.trim() };
  mkdirSync(cacheDir(env), { recursive: true });
  const outDir = mkdtempSync(join(cacheDir(env), 'build-'));
  try {
    for (const command of commands) {
      await steps.run(`building ${command.name} of Kubernetes ${version} (${command.pkg})`, async () => {
        const built = join(outDir, command.name);
        await runLogged(go, ['build', '-trimpath', `-ldflags=${versionLdflags(version)}`, '-o', built, command.pkg], { cwd: moduleDir, env: buildEnv, logPath });
        installAtomically(built, releaseBinaryPath(version, command.name, env));
      });
    }
  } finally {
    rmSync(outDir, { recursive: true, force: true });
  }
}
