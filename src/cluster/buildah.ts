import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { mountsUnder } from './host.ts';
import { acquireLock } from './lock.ts';
import { buildahDir, imageLogPath } from './paths.ts';
import { CommandError, runLogged, which } from './run.ts';

/** An image could not be built or loaded; the message says why (with the log's last lines). */
export class ImageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImageError';
  }
}

export interface ImageOptions {
  /** One line per step, for humans. Default: stderr. */
  progress?: (line: string) => void;
  env?: NodeJS.ProcessEnv;
}

/** okt's own buildah storage: `--root`, `--runroot` (never the system's /var/lib/containers). */
export interface BuildahStorage {
  root: string;
  runroot: string;
}

export function buildahStorage(env: NodeJS.ProcessEnv = process.env): BuildahStorage {
  return { root: join(buildahDir(env), 'root'), runroot: join(buildahDir(env), 'runroot') };
}

/**
 * The arguments of one buildah command on okt's storage. `vfs` copies layers instead of overlaying
 * them: slower and bigger, but it works in any filesystem and container, and needs no kernel module.
 */
export function buildahArgs(storage: BuildahStorage, args: readonly string[]): string[] {
  return ['--root', storage.root, '--runroot', storage.runroot, '--storage-driver', 'vfs', ...args];
}

/** `buildah bud` of a Dockerfile: chroot isolation (no runtime, no network namespace), only images in okt's storage. */
export function budArgs(options: {
  dockerfile: string;
  contextDir: string;
  reference: string;
  iidFile?: string;
  /** `HOST:CONTAINER[:OPTIONS]` bind mounts for the RUN steps only. */
  volumes?: readonly string[];
  labels?: Readonly<Record<string, string>>;
}): string[] {
  return [
    'bud',
    '--isolation',
    'chroot',
    '--pull=never',
    ...(options.volumes ?? []).flatMap((volume) => ['--volume', volume]),
    ...Object.entries(options.labels ?? {}).flatMap(([key, value]) => ['--label', `${key}=${value}`]),
    '-f',
    options.dockerfile,
    '-t',
    options.reference,
    ...(options.iidFile ? ['--iidfile', options.iidFile] : []),
    options.contextDir,
  ];
}

const SYSTEM_DIRS = ['/usr/bin', '/usr/sbin', '/usr/local/bin', '/usr/local/sbin', '/sbin', '/bin'];

/** What one image job shares: the storage, the log, the progress lines, the environment of its commands. */
export interface ImageJob {
  storage: BuildahStorage;
  logPath: string;
  progress: (line: string) => void;
  /** The environment commands run with: the caller's, with the sbin directories on PATH (chroot, mknod). */
  env: NodeJS.ProcessEnv;
  started: number;
}

/** `buildah --root … --runroot … --storage-driver vfs ARGS`, its output in the log. */
export function buildah(job: ImageJob, args: readonly string[], timeoutMs?: number): Promise<void> {
  return runLogged(tool('buildah'), buildahArgs(job.storage, args), {
    logPath: job.logPath,
    env: job.env,
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

/** What buildah knows of an image in okt's storage, or undefined when it has none by that name. */
export interface StoredImage {
  id: string;
  labels: Record<string, string>;
  /** The sum of its layers, uncompressed. */
  sizeBytes: number;
}

export async function inspectImage(storage: BuildahStorage, reference: string): Promise<StoredImage | undefined> {
  const buildahPath = tool('buildah');
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)(buildahPath, buildahArgs(storage, ['inspect', '--type', 'image', reference]), {
      maxBuffer: 64 * 1024 * 1024,
    }));
  } catch {
    return undefined; // "image not known" (exit 125)
  }
  return parseInspect(stdout);
}

/** The parts of `buildah inspect --type image` okt uses. */
export function parseInspect(json: string): StoredImage {
  const info = JSON.parse(json) as {
    FromImageID?: string;
    OCIv1?: { config?: { Labels?: Record<string, string> | null } };
    Manifest?: string;
  };
  const manifest = info.Manifest ? (JSON.parse(info.Manifest) as { layers?: { size?: number }[] }) : {};
  return {
    id: info.FromImageID ?? '',
    labels: info.OCIv1?.config?.Labels ?? {},
    sizeBytes: (manifest.layers ?? []).reduce((sum, layer) => sum + (layer.size ?? 0), 0),
  };
}

/** An executable okt needs, from PATH or the usual system directories. */
export function tool(name: string): string {
  const found = which(name, SYSTEM_DIRS);
  if (found) return found;
  throw new ImageError(`${name} is not installed: \`npx okt cluster provision --node\` installs it (Debian: apt-get install ${packageOf(name)})`);
}

function packageOf(name: string): string {
  return name === 'chroot' ? 'coreutils' : name;
}

/**
 * Run `work` as one image job: refuses unless root on Linux (buildah's chroot isolation and debootstrap
 * need it), holds okt's image lock (two builds on one storage would race), starts the log, and turns
 * a failed command into an ImageError carrying the log's last lines.
 */
export async function imageJob<T>(
  options: ImageOptions,
  kind: 'build' | 'load',
  title: string,
  work: (job: ImageJob) => Promise<T>,
): Promise<T> {
  const env = options.env ?? process.env;
  const progress = options.progress ?? ((line: string) => process.stderr.write(`${line}\n`));
  if (process.platform !== 'linux') throw new ImageError(`okt builds images on Linux only (this is ${process.platform})`);
  if (process.getuid?.() !== 0) throw new ImageError('okt builds images as root (buildah with chroot isolation, debootstrap): run it as root');
  const dir = buildahDir(env);
  mkdirSync(dir, { recursive: true });
  const release = await acquireLock(join(dir, 'image.lock'), (pid) => progress(`okt image: another image job (pid ${pid}) is running; waiting for it`));
  try {
    const logPath = imageLogPath(kind, env);
    writeFileSync(logPath, `okt image: ${title}, started ${new Date().toISOString()}\n`);
    progress(`okt image: ${title} (log: ${logPath})`);
    const job: ImageJob = {
      storage: buildahStorage(env),
      logPath,
      progress,
      env: { ...env, PATH: withSbin(env.PATH) },
      started: Date.now(),
    };
    removeLeftovers(dir);
    try {
      return await work(job);
    } catch (error) {
      if (error instanceof CommandError) {
        throw new ImageError(`${error.message}\n--- last lines of ${error.logPath} ---\n${error.logTail}\n--- full log: ${error.logPath}`);
      }
      throw error;
    }
  } finally {
    release();
  }
}

/** The names of the temporary files and directories of a job in buildahDir, by what they hold. */
export const WORK_PREFIXES = { standIn: 'stand-in-', export: 'export-', iid: 'iid-', trust: 'build-trust-' } as const;

/** What an interrupted job left in buildahDir (the lock is held: no other job is using them). */
function removeLeftovers(dir: string): void {
  const prefixes = Object.values(WORK_PREFIXES);
  for (const entry of readdirSync(dir)) if (prefixes.some((p) => entry.startsWith(p))) removeTree(join(dir, entry));
}

function withSbin(path: string | undefined): string {
  const dirs = (path ?? '').split(':').filter(Boolean);
  for (const dir of ['/usr/local/sbin', '/usr/sbin', '/sbin', '/usr/local/bin', '/usr/bin', '/bin']) if (!dirs.includes(dir)) dirs.push(dir);
  return dirs.join(':');
}

/** One step: a line when it starts, one when it is done, with its duration. */
export async function step<T>(job: ImageJob, title: string, work: () => T | Promise<T>): Promise<T> {
  const t0 = Date.now();
  job.progress(`okt image: ${title} ...`);
  const result = await work();
  job.progress(`okt image: ... done in ${seconds(Date.now() - t0)} s`);
  return result;
}

export function seconds(ms: number): string {
  return (ms / 1000).toFixed(1);
}

export function megabytes(bytes: number): string {
  return `${Math.round(bytes / 1e6)} MB`;
}

export function readTrimmed(path: string): string {
  return readFileSync(path, 'utf8').trim();
}

/**
 * Remove a work tree, but never through a mount: debootstrap mounts /proc and /sys in its target while
 * it runs and a failed run can leave them mounted. Unmount those first, and refuse if any stays.
 */
export function removeTree(dir: string): void {
  if (!existsSync(dir)) return;
  let mounts = mountsUnder(dir);
  for (const mount of mounts.reverse()) {
    try {
      // Lazy: detached at once even when busy.
      execFileSync(tool('umount'), ['-l', mount], { stdio: 'ignore' });
    } catch {
      // checked below
    }
  }
  mounts = mountsUnder(dir);
  if (mounts.length > 0) throw new ImageError(`not removing ${dir}: ${mounts.join(', ')} still mounted there`);
  rmSync(dir, { recursive: true, force: true });
}
