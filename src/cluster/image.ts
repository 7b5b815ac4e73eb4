import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { rootCertificates } from 'node:tls';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { ensureBaseImageIn, type BaseImage } from './base-image.ts';
import { CONTEXT_LABEL, contextDigest, fromImages } from './build-context.ts';
import { ctrArgs, ctrPath, K8S_NAMESPACE } from './ctr.ts';
export { K8S_NAMESPACE } from './ctr.ts';
import {
  buildah,
  budArgs,
  imageJob,
  ImageError,
  inspectImage,
  megabytes,
  readTrimmed,
  seconds,
  step,
  WORK_PREFIXES,
  type ImageJob,
  type ImageOptions,
} from './buildah.ts';
import { buildahDir, nodeContainerdSocket } from './paths.ts';
import { runLogged } from './run.ts';

export { ensureBaseImage, BASE_IMAGE, STAND_IN_LABEL, type BaseImage } from './base-image.ts';
export { ImageError, buildahStorage, type ImageOptions } from './buildah.ts';

/** The tag `okt image build` gives, and the image `okt manifests --image okt:latest` runs. */
export const DEFAULT_TAG = 'okt:latest';

export interface BuildOptions extends ImageOptions {
  /** The build context; its `Dockerfile` is built as it is, unless `dockerfile` names another. */
  contextDir: string;
  /** Default `<contextDir>/Dockerfile`. */
  dockerfile?: string;
  /** Default `okt:latest` (stored as docker.io/library/okt:latest, the name containerd's CRI looks up). */
  tag?: string;
}

export interface BuiltImage {
  /** The fully qualified reference (`okt:latest` -> `docker.io/library/okt:latest`). */
  reference: string;
  id: string;
  sizeBytes: number;
  base: BaseImage;
  /** The digest of its build context (label dev.okt.context), when okt could compute one. */
  digest: string | undefined;
}

/**
 * Build `contextDir/Dockerfile` with buildah into okt's storage (no Docker daemon), its base image
 * (node:24-slim) made available first. RUN steps have the host's network.
 */
export async function buildImage(options: BuildOptions): Promise<BuiltImage> {
  const reference = normalizeReference(options.tag ?? DEFAULT_TAG);
  const contextDir = resolve(options.contextDir);
  const dockerfile = options.dockerfile === undefined ? join(contextDir, 'Dockerfile') : resolve(options.dockerfile);
  if (!existsSync(dockerfile)) throw new ImageError(options.dockerfile === undefined ? `no Dockerfile in ${contextDir}` : `no Dockerfile at ${dockerfile}`);
  return imageJob(options, 'build', `building ${reference} from ${dockerfile}`, async (job) => {
    const base = await ensureBaseImageIn(job);
    const digest = await buildDigest(job, contextDir, dockerfile);
    const current = digest === undefined ? undefined : await inspectImage(job.storage, reference);
    if (digest !== undefined && current !== undefined && current.labels[CONTEXT_LABEL] === digest) {
      job.progress(`okt image: ${reference} is up to date with its context, base and Dockerfile (${CONTEXT_LABEL} ${digest.slice(0, 12)}): not built again`);
      return { reference, id: current.id, sizeBytes: current.sizeBytes, base, digest };
    }
    const iidFile = join(buildahDir(job.env), `${WORK_PREFIXES.iid}${process.pid}`);
    const trustDir = join(buildahDir(job.env), `${WORK_PREFIXES.trust}${process.pid}`);
    let id: string;
    try {
      const volumes = buildTrust(job, trustDir);
      await step(job, `buildah bud (the Dockerfile's RUN steps fetch from the npm registry)`, () =>
        buildah(job, budArgs({ dockerfile, contextDir, reference, iidFile, volumes, ...(digest ? { labels: { [CONTEXT_LABEL]: digest } } : {}) })),
      );
      id = readTrimmed(iidFile);
    } finally {
      rmSync(iidFile, { force: true });
      rmSync(trustDir, { recursive: true, force: true });
    }
    // The image this one replaced, now without a name (vfs keeps whole copies: they add up).
    await buildah(job, ['rmi', '--prune']);
    const stored = await inspectImage(job.storage, reference);
    if (!stored) throw new ImageError(`buildah built ${id} but okt's storage has no ${reference}`);
    job.progress(`okt image: built ${reference} (${megabytes(stored.sizeBytes)}) in ${seconds(Date.now() - job.started)} s`);
    return { reference, id, sizeBytes: stored.sizeBytes, base, digest };
  });
}

/** The digest of what this build reads (context, Dockerfile, the images it is FROM), or undefined. */
async function buildDigest(job: ImageJob, contextDir: string, dockerfile: string): Promise<string | undefined> {
  const ids: string[] = [];
  for (const image of fromImages(readFileSync(dockerfile, 'utf8'))) {
    const stored = await inspectImage(job.storage, normalizeReference(image));
    if (stored === undefined) return undefined; // buildah will say it is missing
    ids.push(stored.id);
  }
  return contextDigest(contextDir, dockerfile, ids);
}

/** Where the RUN steps find okt's npm config and CA bundle: a directory Debian images have, empty. */
export const BUILD_TRUST_DIR = '/usr/local/etc';
const BUILD_CA_FILE = 'okt-build-ca.crt';

/**
 * When okt's own Node trusts extra CA certificates (NODE_EXTRA_CA_CERTS, as behind a TLS-inspecting
 * proxy), the RUN steps' npm trusts them too (else `npm ci` fails with SELF_SIGNED_CERT_IN_CHAIN): npm's
 * global config (`cafile=`) and a bundle of Node's roots plus the extra ones, in a directory mounted
 * read-only at /usr/local/etc during RUN steps only, so nothing of it is in the image. Returns the
 * volumes for `buildah bud`.
 */
function buildTrust(job: ImageJob, dir: string): string[] {
  const extra = job.env.NODE_EXTRA_CA_CERTS;
  if (!extra) return [];
  let extraPem: string;
  try {
    extraPem = readFileSync(extra, 'utf8');
  } catch (error) {
    throw new ImageError(`NODE_EXTRA_CA_CERTS=${extra} cannot be read: ${(error as Error).message}`);
  }
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, BUILD_CA_FILE), [...rootCertificates, extraPem.trim()].join('\n') + '\n');
  writeFileSync(join(dir, 'npmrc'), buildNpmrc());
  job.progress(`okt image: the RUN steps' npm trusts NODE_EXTRA_CA_CERTS (${extra}) as okt does (${BUILD_TRUST_DIR} mounted while they run; not in the image)`);
  return [trustVolume(dir)];
}

export function buildNpmrc(): string {
  return `# okt image build: the CA certificates okt's Node trusts (RUN steps only)\ncafile=${BUILD_TRUST_DIR}/${BUILD_CA_FILE}\n`;
}

export function trustVolume(hostDir: string): string {
  return `${hostDir}:${BUILD_TRUST_DIR}:ro`;
}

export interface LoadOptions extends ImageOptions {
  /** An image in okt's storage (`okt:latest`, or its full reference). */
  image: string;
  /** Default: the node's containerd (`nodeContainerdSocket()`). */
  socket?: string;
}

/**
 * Import an image of okt's storage into a containerd, namespace k8s.io (the kubelet's), under its
 * fully qualified name: a Pod's `image: okt:latest` then resolves to it (with a pull policy that does
 * not pull: IfNotPresent or Never).
 */
export async function loadIntoContainerd(options: LoadOptions): Promise<void> {
  const reference = normalizeReference(options.image);
  const socket = options.socket ?? nodeContainerdSocket();
  if (!isSocket(socket)) throw new ImageError(`no containerd at ${socket}: start a node with \`npx okt cluster up --node\``);
  return imageJob(options, 'load', `loading ${reference} into the containerd at ${socket}`, async (job) => {
    const digest = (await inspectImage(job.storage, reference))?.labels[CONTEXT_LABEL];
    const ctr = (args: readonly string[]) => promisify(execFile)(ctrPath(), ctrArgs(socket, args), { env: job.env });
    if (digest !== undefined && (await ctr(['images', 'list', `name==${reference}`])).stdout.includes(`${CONTEXT_LABEL}=${digest}`)) {
      job.progress(`okt image: ${reference} in the containerd at ${socket} is this build already (${CONTEXT_LABEL} ${digest.slice(0, 12)}): not loaded again`);
      return;
    }
    const archive = join(buildahDir(job.env), `${WORK_PREFIXES.export}${process.pid}.tar`);
    rmSync(archive, { force: true });
    try {
      await step(job, 'exporting it (buildah push docker-archive)', () => buildah(job, pushArgs(reference, archive)));
      await step(job, `importing it (ctr -n ${K8S_NAMESPACE} images import)`, () =>
        runLogged(ctrPath(), ctrImportArgs(socket, archive), { logPath: job.logPath, env: job.env }),
      );
      // containerd keeps no image labels of its own from the archive: record which build this is.
      if (digest !== undefined) await ctr(['images', 'label', reference, `${CONTEXT_LABEL}=${digest}`]);
    } finally {
      rmSync(archive, { force: true });
    }
    job.progress(`okt image: ${reference} is in the containerd at ${socket} (namespace ${K8S_NAMESPACE}), ${seconds(Date.now() - job.started)} s`);
  });
}

export function isSocket(path: string): boolean {
  try {
    return statSync(path).isSocket();
  } catch {
    return false;
  }
}

/** `buildah push` into a docker-archive file whose image carries `reference` (what ctr names it on import). */
export function pushArgs(reference: string, archive: string): string[] {
  return ['push', reference, `docker-archive:${archive}:${reference}`];
}

export function ctrImportArgs(socket: string, archive: string): string[] {
  return ctrArgs(socket, ['images', 'import', archive]);
}

const COMPONENT = '[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*';
const DOMAIN = '(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::\\d+)?';
const NAME = new RegExp(`^(?:${DOMAIN}/)?${COMPONENT}(?:/${COMPONENT})*$`);
const TAG = /^\w[\w.-]{0,127}$/;
const DIGEST = /^[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[a-fA-F0-9]{32,}$/;

/**
 * An image reference as Docker and containerd's CRI read it: `okt` -> `docker.io/library/okt:latest`,
 * `me/okt:1` -> `docker.io/me/okt:1`, `localhost:5000/okt` -> `localhost:5000/okt:latest`. The first
 * component is a registry when it has a `.` or a `:`, or is `localhost`.
 */
export function normalizeReference(reference: string): string {
  const at = reference.indexOf('@');
  const digest = at === -1 ? undefined : reference.slice(at + 1);
  let rest = at === -1 ? reference : reference.slice(0, at);
  let tag: string | undefined;
  const colon = rest.lastIndexOf(':');
  if (colon > rest.lastIndexOf('/')) {
    tag = rest.slice(colon + 1);
    rest = rest.slice(0, colon);
  }
  const slash = rest.indexOf('/');
  const first = slash === -1 ? '' : rest.slice(0, slash);
  const hasDomain = first !== '' && (first.includes('.') || first.includes(':') || first === 'localhost');
  let domain = hasDomain ? first : 'docker.io';
  let path = hasDomain ? rest.slice(slash + 1) : rest;
  if (domain === 'index.docker.io') domain = 'docker.io';
  if (domain === 'docker.io' && !path.includes('/')) path = `library/${path}`;
  const name = `${domain}/${path}`;
  if (!NAME.test(name) || (tag !== undefined && !TAG.test(tag)) || (digest !== undefined && !DIGEST.test(digest))) {
    throw new ImageError(`not an image reference: ${JSON.stringify(reference)} (expected NAME[:TAG], lowercase, e.g. okt:latest)`);
  }
  if (digest !== undefined) return `${name}${tag === undefined ? '' : `:${tag}`}@${digest}`;
  return `${name}:${tag ?? 'latest'}`;
}
