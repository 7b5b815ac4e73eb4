// Which Kubernetes release a control plane runs, and where its pinned Go module lives. Pure: the
// filesystem is read by the callers (kubernetes-modules.ts) and passed in.

/**
 * The release a control plane and node run when none is asked for: the newest whose control plane and
 * node build and run on okt's machines (README "Kubernetes releases"; docs/operations.md).
 */
export const DEFAULT_KUBERNETES_VERSION = '1.37.2';

/** A release okt can provision: one whose Go modules are pinned in `k8s/v<version>/`. */
export interface KubernetesRelease {
  readonly version: string;
}

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
 * The release `text` names among `moduleVersions` (the versions of the `k8s/v*` directories): `1.37`
 * picks the newest patch of 1.37. Unknown versions get one line naming the ones there are.
 */
export function resolveKubernetesRelease(text: string, moduleVersions: readonly string[], what = '--kubernetes'): KubernetesRelease {
  const wanted = parseKubernetesVersion(text, what);
  const matches = (version: string) => {
    const [major, minor, patch] = version.split('.').map(Number);
    return major === wanted.major && minor === wanted.minor && (wanted.patch === undefined || patch === wanted.patch);
  };
  const fromModules = moduleVersions.filter(matches).sort(compareVersions).at(-1);
  if (fromModules) return { version: fromModules };
  const known = [...moduleVersions].sort(compareVersions).join(', ');
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

/** A command built from a pinned Go module: the package holding its `main`. */
export interface ModuleCommand {
  readonly name: string;
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

/** What a node of a release runs besides its container runtime (k8s/v<version>/tools.go names them when a node can be provisioned). */
export const NODE_COMMANDS: readonly ModuleCommand[] = [
  { name: 'kube-controller-manager', pkg: 'k8s.io/kubernetes/cmd/kube-controller-manager' },
  { name: 'kube-scheduler', pkg: 'k8s.io/kubernetes/cmd/kube-scheduler' },
  { name: 'kubelet', pkg: 'k8s.io/kubernetes/cmd/kubelet' },
  { name: 'kube-proxy', pkg: 'k8s.io/kubernetes/cmd/kube-proxy' },
];

/** The container runtime a node runs (k8s/containerd pins it): the daemon, its runc shim, and its client. */
export const CONTAINERD_COMMANDS: readonly ModuleCommand[] = [
  { name: 'containerd', pkg: 'github.com/containerd/containerd/v2/cmd/containerd' },
  { name: 'containerd-shim-runc-v2', pkg: 'github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2' },
  { name: 'ctr', pkg: 'github.com/containerd/containerd/v2/cmd/ctr' },
];

/** The containerd version a go.mod requires (`2.4.2`), or undefined. */
export function pinnedContainerdVersion(goMod: string): string | undefined {
  return /^\s*(?:require\s+)?github\.com\/containerd\/containerd\/v2\s+v(\d+\.\d+\.\d+)\s*(?:\/\/.*)?$/m.exec(goMod)?.[1];
}

/** Whether a release's tools.go names the node's commands (only then are their modules' checksums pinned). */
export function pinsNodeCommands(toolsGo: string): boolean {
  return NODE_COMMANDS.every((command) => toolsGo.includes(`"${command.pkg}"`));
}

/** containerd's version stamp, as its Makefile sets it: without it, the CRI reports `2.x+unknown`. */
export function containerdLdflags(version: string): string {
  return `-s -w -X github.com/containerd/containerd/v2/version.Version=v${version}`;
}

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
