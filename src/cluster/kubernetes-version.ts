// Which Kubernetes release a control plane runs, and where its pinned Go module lives. Pure: the
// filesystem is read by the callers (kubernetes-modules.ts) and passed in.

/** The release built from Debian's `kubernetes` source package (bookworm), with Debian's Go 1.19. */
export const DEBIAN_KUBERNETES_VERSION = '1.20.2';

/**
 * The release a control plane runs when none is asked for. Still Debian's: a release built from Go
 * modules becomes the default once CI can build it on a fresh machine in time (docs/operations.md).
 */
export const DEFAULT_KUBERNETES_VERSION = DEBIAN_KUBERNETES_VERSION;

/** A release okt can provision: Debian's source package, or the Go modules pinned in `k8s/v<version>/`. */
export type KubernetesRelease =
  | { readonly source: 'debian'; readonly version: string }
  | { readonly source: 'go-modules'; readonly version: string };

/** A version as written by a person: `1.37`, `1.37.2` or `v1.37.2`. */
export interface RequestedVersion {
  readonly major: number;
  readonly minor: number;
  readonly patch?: number;
}

/** The text a person wrote is not a version, or names a release okt cannot provision. */
export class KubernetesVersionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KubernetesVersionError';
  }
}

/** `1.37`, `1.37.2`, `v1.37.2` -> its numbers; anything else -> a one-line error naming the option. */
export function parseKubernetesVersion(text: string, what = '--kubernetes'): RequestedVersion {
  const match = /^v?(0|[1-9]\d*)\.(0|[1-9]\d*)(?:\.(0|[1-9]\d*))?$/.exec(text.trim());
  if (!match) throw new KubernetesVersionError(`${what}: "${text}" is not a Kubernetes version (write MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. 1.37 or 1.37.2)`);
  const [, major, minor, patch] = match;
  return { major: Number(major), minor: Number(minor), ...(patch === undefined ? {} : { patch: Number(patch) }) };
}

/** Compare two MAJOR.MINOR.PATCH versions (without `v`): negative, 0 or positive, like a sort. */
export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/**
 * The release `text` names among those okt can provision: Debian's, and `moduleVersions` (the
 * versions of the `k8s/v*` directories). `1.37` picks the newest patch of 1.37. Unknown versions get
 * one line naming the ones there are.
 */
export function resolveKubernetesRelease(text: string, moduleVersions: readonly string[], what = '--kubernetes'): KubernetesRelease {
  const wanted = parseKubernetesVersion(text, what);
  const matches = (version: string) => {
    const [major, minor, patch] = version.split('.').map(Number);
    return major === wanted.major && minor === wanted.minor && (wanted.patch === undefined || patch === wanted.patch);
  };
  const fromModules = moduleVersions.filter(matches).sort(compareVersions).at(-1);
  if (fromModules) return { source: 'go-modules', version: fromModules };
  if (matches(DEBIAN_KUBERNETES_VERSION)) return { source: 'debian', version: DEBIAN_KUBERNETES_VERSION };
  const known = [DEBIAN_KUBERNETES_VERSION, ...moduleVersions].sort(compareVersions).join(', ');
  throw new KubernetesVersionError(`${what}: okt cannot provision Kubernetes ${text.trim()}; it provisions ${known}`);
}

/** `v1.37.2` (a `k8s/` directory's name) -> `1.37.2`; anything else -> undefined (not a release's directory). */
export function moduleDirVersion(dirName: string): string | undefined {
  return /^v(\d+\.\d+\.\d+)$/.exec(dirName)?.[1];
}

/** The `k8s.io/kubernetes` version a go.mod requires (`1.37.2`), or undefined. */
export function pinnedKubernetesVersion(goMod: string): string | undefined {
  return /^\s*(?:require\s+)?k8s\.io\/kubernetes\s+v(\d+\.\d+\.\d+)\s*(?:\/\/.*)?$/m.exec(goMod)?.[1];
}

/** The Go version a go.mod asks for (its `go` line, `1.26.0`), or undefined. */
export function requiredGoVersion(goMod: string): string | undefined {
  return /^go\s+(\d+\.\d+(?:\.\d+)?)\s*$/m.exec(goMod)?.[1];
}

/** `go1.26.8` (what `go env GOVERSION` prints) -> `1.26.8`; a development build or garbage -> undefined. */
export function goToolchainVersion(goversion: string): string | undefined {
  return /^go(\d+\.\d+(?:\.\d+)?)/.exec(goversion.trim())?.[1];
}

/** A command of a release, built from its Go module: the package holding its `main`. */
export interface ModuleCommand {
  readonly name: 'kube-apiserver' | 'etcd' | 'kubectl';
  readonly pkg: string;
}

/**
 * What a control plane of a module-built release needs: the API server, the etcd it was released with
 * (etcd's `main` is the root package of go.etcd.io/etcd/server/v3), and the release's own kubectl.
 */
export const CONTROL_PLANE_COMMANDS: readonly ModuleCommand[] = [
  { name: 'kube-apiserver', pkg: 'k8s.io/kubernetes/cmd/kube-apiserver' },
  { name: 'etcd', pkg: 'go.etcd.io/etcd/server/v3' },
  { name: 'kubectl', pkg: 'k8s.io/kubernetes/cmd/kubectl' },
];

/**
 * The linker flags that stamp a release's version into its binaries, as Kubernetes' own build
 * (hack/lib/version.sh) does: without them `/version` and `kubectl version` say v0.0.0-master.
 */
export function versionLdflags(version: string): string {
  const [major, minor] = version.split('.');
  const stamps = ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
    `-X ${pkg}.gitVersion=v${version}`,
    `-X ${pkg}.gitMajor=${major}`,
    `-X ${pkg}.gitMinor=${minor}`,
    `-X ${pkg}.gitTreeState=clean`,
  ]);
  return ['-s', '-w', ...stamps].join(' ');
}

/**
 * kube-apiserver flags that differ by release: `--insecure-port` was removed in 1.24 (it had been
 * 0-only since 1.20's deprecation); older servers need `--insecure-port=0` to serve no plain port.
 */
export function releaseApiserverFlags(version: string): string[] {
  return compareVersions(version, '1.24.0') < 0 ? ['--insecure-port=0'] : [];
}
