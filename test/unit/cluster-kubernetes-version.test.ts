import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { containerdBinaryPath, containerdModuleDir, containerdVersion, findGo, kubernetesModulesRoot, moduleReleaseVersions, releaseHasNode } from '../../src/cluster/kubernetes-modules.ts';
import {
  compareVersions,
  DEFAULT_KUBERNETES_VERSION,
  pinnedContainerdVersion,
  pinsNodeCommands,
  NODE_COMMANDS,
  goToolchainVersion,
  moduleDirVersion,
  parseKubernetesVersion,
  pinnedKubernetesVersion,
  requiredGoVersion,
  resolveKubernetesRelease,
  versionLdflags,
} from '../../src/cluster/kubernetes-version.ts';
import { releaseBinaryPath } from '../../src/cluster/paths.ts';
import { requestedRelease } from '../../src/cluster/provision.ts';
import { kubeconfigExport, kubectlPathExport } from '../../src/cluster/local.ts';

describe('Kubernetes versions as a person writes them', () => {
  it('takes MAJOR.MINOR and MAJOR.MINOR.PATCH, with or without v', () => {
    expect(parseKubernetesVersion('1.37')).toEqual({ major: 1, minor: 37 });
    expect(parseKubernetesVersion('1.37.2')).toEqual({ major: 1, minor: 37, patch: 2 });
    expect(parseKubernetesVersion(' v1.20.2 ')).toEqual({ major: 1, minor: 20, patch: 2 });
  });

  it.each(['latest', '1', '1.37.x', '1.37.2.1', '01.37', '1.37-rc.1', ''])('refuses %j in one line naming the option', (text) => {
    expect(() => parseKubernetesVersion(text, 'OKT_KUBERNETES_VERSION')).toThrow(/^OKT_KUBERNETES_VERSION: ".*" is not a Kubernetes version \(write MAJOR\.MINOR or MAJOR\.MINOR\.PATCH, e\.g\. 1\.37 or 1\.37\.2\)$/);
  });

  it('orders versions by number, not as text', () => {
    fc.assert(
      fc.property(fc.tuple(fc.nat(50), fc.nat(50), fc.nat(50)), fc.tuple(fc.nat(50), fc.nat(50), fc.nat(50)), (a, b) => {
        const byNumber = a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
        expect(Math.sign(compareVersions(a.join('.'), b.join('.')))).toBe(Math.sign(byNumber));
      }),
    );
    expect(['1.9.0', '1.37.2', '1.100.0', '1.37.10'].sort(compareVersions)).toEqual(['1.9.0', '1.37.2', '1.37.10', '1.100.0']);
  });
});

describe('which release a version names', () => {
  const modules = ['1.35.4', '1.37.1', '1.37.2'];

  it('picks the newest pinned patch of a minor, or the exact patch asked for', () => {
    expect(resolveKubernetesRelease('1.37', modules)).toEqual({ version: '1.37.2' });
    expect(resolveKubernetesRelease('v1.37.1', modules)).toEqual({ version: '1.37.1' });
    expect(resolveKubernetesRelease('1.35', modules)).toEqual({ version: '1.35.4' });
  });

  it("no longer provisions Debian's 1.20.2 (end of life in 2022, outside the releases okt claims)", () => {
    expect(() => resolveKubernetesRelease('1.20.2', modules)).toThrow(/^--kubernetes: okt cannot provision Kubernetes 1\.20\.2; it provisions 1\.35\.4, 1\.37\.1, 1\.37\.2$/);
  });

  it('refuses a release it cannot provision in one line naming those it can', () => {
    expect(() => resolveKubernetesRelease('1.36', modules)).toThrow(
      /^--kubernetes: okt cannot provision Kubernetes 1\.36; it provisions 1\.35\.4, 1\.37\.1, 1\.37\.2$/,
    );
    expect(() => resolveKubernetesRelease('1.37.3', modules)).toThrow(/cannot provision Kubernetes 1\.37\.3/);
  });

  it('takes OKT_KUBERNETES_VERSION when no version is given, and names it when it is wrong', () => {
    expect(requestedRelease(undefined, { OKT_KUBERNETES_VERSION: '1.37' })).toEqual({ version: '1.37.2' });
    expect(requestedRelease(undefined, {})).toEqual({ version: DEFAULT_KUBERNETES_VERSION });
    expect(() => requestedRelease(undefined, { OKT_KUBERNETES_VERSION: '1.19' })).toThrow(/^OKT_KUBERNETES_VERSION: okt cannot provision Kubernetes 1\.19; it provisions /);
    expect(() => requestedRelease('next', { OKT_KUBERNETES_VERSION: '1.37' })).toThrow(/^--kubernetes: "next" is not a Kubernetes version/);
  });
});

describe("the Go modules pinned in the repository's k8s/ directory", () => {
  const versions = moduleReleaseVersions();

  it('has the default release, with its node, each directory pinning k8s.io/kubernetes at its own version', () => {
    expect(versions).toContain(DEFAULT_KUBERNETES_VERSION);
    expect(releaseHasNode(DEFAULT_KUBERNETES_VERSION)).toBe(true);
    expect(moduleDirVersion('v1.37.2')).toBe('1.37.2');
    expect(moduleDirVersion('1.37.2')).toBeUndefined();
  });

  it.each(versions)('v%s replaces every staging module by its published v0 release, and pins etcd and a Go version', (version) => {
    const goMod = readFileSync(join(kubernetesModulesRoot(), `v${version}`, 'go.mod'), 'utf8');
    const [, minor, patch] = version.split('.');
    const replaces = [...goMod.matchAll(/^\s*(k8s\.io\/[\w-]+) => (k8s\.io\/[\w-]+) (v\S+)$/gm)];
    // k8s.io/kubernetes' own go.mod replaces its 30-odd staging modules by ./staging paths a dependent cannot use.
    expect(replaces.length).toBeGreaterThanOrEqual(30);
    for (const [, from, to, at] of replaces) {
      expect(to).toBe(from);
      expect(at).toBe(`v0.${minor}.${patch}`);
    }
    expect(goMod).toMatch(/^\s*go\.etcd\.io\/etcd\/server\/v3 v3\.\d+\.\d+$/m);
    expect(requiredGoVersion(goMod)).toMatch(/^1\.\d+/);
    expect(readFileSync(join(kubernetesModulesRoot(), `v${version}`, 'go.sum'), 'utf8')).toMatch(new RegExp(`^k8s\\.io/kubernetes v${version.replaceAll('.', '\\.')} h1:`, 'm'));
  });

  it('reads the pinned k8s.io/kubernetes of a go.mod, in a require block or a require line', () => {
    expect(pinnedKubernetesVersion('module m\n\nrequire (\n\tk8s.io/kubernetes v1.37.2\n\tk8s.io/api v0.37.2 // indirect\n)\n')).toBe('1.37.2');
    expect(pinnedKubernetesVersion('module m\nrequire k8s.io/kubernetes v1.35.4\n')).toBe('1.35.4');
    expect(pinnedKubernetesVersion('module m\nrequire k8s.io/kubernetes-extra v1.35.4\n')).toBeUndefined();
  });

  it('refuses a directory whose go.mod pins another release', () => {
    const root = mkdtempSync(join(tmpdir(), 'okt-k8s-modules-'));
    const dir = join(root, 'v1.37.2');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'go.mod'), 'module m\n\ngo 1.26.0\n\nrequire k8s.io/kubernetes v1.36.3\n');
    expect(() => moduleReleaseVersions(root)).toThrow(/v1\.37\.2\/go\.mod requires k8s\.io\/kubernetes v1\.36\.3, not v1\.37\.2 as its directory says/);
  });
});

describe('building a release', () => {
  it('stamps the version into the binaries as Kubernetes\' own build does', () => {
    const flags = versionLdflags('1.37.2');
    for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
      expect(flags).toContain(`-X ${pkg}.gitVersion=v1.37.2`);
      expect(flags).toContain(`-X ${pkg}.gitMajor=1`);
      expect(flags).toContain(`-X ${pkg}.gitMinor=37`);
    }
  });

  it('reads Go versions of go.mod and of a toolchain', () => {
    expect(requiredGoVersion('module m\n\ngo 1.26.0\n\ngodebug default=go1.26\n')).toBe('1.26.0');
    expect(goToolchainVersion('go1.26.8\n')).toBe('1.26.8');
    expect(goToolchainVersion('devel go1.27-abc')).toBeUndefined();
  });

  it('refuses a Go older than the go.mod asks for, naming the one it found', () => {
    const bin = mkdtempSync(join(tmpdir(), 'okt-old-go-'));
    writeFileSync(join(bin, 'go'), '#!/bin/sh\necho go1.19.8\n');
    chmodSync(join(bin, 'go'), 0o755);
    // Only this PATH: /usr/local/go/bin/go (if the machine has one) is then the other candidate.
    const found = (() => {
      try {
        return findGo('1.99.0', { PATH: bin });
      } catch (error) {
        return (error as Error).message;
      }
    })();
    expect(found).toMatch(new RegExp(`^building Kubernetes from Go modules needs Go 1\\.99\\.0 or newer \\(${bin}/go is go1\\.19\\.8`));
    expect(findGo('1.19.0', { PATH: bin })).toBe(join(bin, 'go'));
  });

  it('caches a release under its version, and containerd under its own', () => {
    const env = { XDG_CACHE_HOME: '/var/cache/someone' };
    expect(releaseBinaryPath('1.37.2', 'kubectl', env)).toBe('/var/cache/someone/okt/bin/v1.37.2/kubectl');
    expect(containerdBinaryPath('ctr', env)).toBe(`/var/cache/someone/okt/bin/containerd-v${containerdVersion()}/ctr`);
  });

  it('pins containerd 2 for the node (a kubelet from 1.36 on needs it), with its Go version', () => {
    const goMod = readFileSync(join(containerdModuleDir(), 'go.mod'), 'utf8');
    expect(containerdVersion()).toMatch(/^2\.\d+\.\d+$/);
    expect(requiredGoVersion(goMod)).toMatch(/^1\.\d+/);
    expect(pinnedContainerdVersion('module m\nrequire (\n\tgithub.com/containerd/containerd/v2 v2.4.2\n)\n')).toBe('2.4.2');
    expect(pinnedContainerdVersion('module m\nrequire github.com/containerd/containerd v1.7.0\n')).toBeUndefined();
  });

  it("knows a release has a node only when its tools.go names every node command", () => {
    const all = NODE_COMMANDS.map((c) => `\t_ "${c.pkg}"`).join('\n');
    expect(pinsNodeCommands(`import (\n${all}\n)`)).toBe(true);
    expect(pinsNodeCommands(`import (\n${NODE_COMMANDS.slice(1).map((c) => `\t_ "${c.pkg}"`).join('\n')}\n)`)).toBe(false);
  });
});

describe('okt cluster env', () => {
  it("puts the release's own kubectl first on PATH, quoted for POSIX shells", () => {
    expect(kubectlPathExport("/home/o'neil/.cache/okt/bin/v1.37.2/kubectl")).toBe(`export PATH='/home/o'\\''neil/.cache/okt/bin/v1.37.2':"$PATH"`);
    expect(kubeconfigExport('/tmp/okt-cluster-x/kubeconfig')).toBe("export KUBECONFIG='/tmp/okt-cluster-x/kubeconfig'");
  });
});
