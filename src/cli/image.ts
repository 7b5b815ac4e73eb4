// `okt image build`: the repository's Dockerfile built with buildah (no Docker daemon), loaded into the node.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { buildImage, DEFAULT_TAG, ImageError, isSocket, loadIntoContainerd, normalizeReference } from '../cluster/image.ts';
import { nodeContainerdSocket } from '../cluster/paths.ts';
import { CliError, EXIT, runAction } from './errors.ts';

export interface BuildFlags {
  tag: string;
  context?: string;
  file?: string;
  load: boolean;
  containerdSocket: string;
}

export interface BuildPlan {
  contextDir: string;
  dockerfile: string;
  /** The fully qualified reference. */
  tag: string;
  /** The containerd socket to import into, or undefined with --no-load. */
  socket: string | undefined;
}

/** The flags checked before a build of minutes, not after it: a Dockerfile, a tag, a containerd to load into. */
export function buildPlan(flags: BuildFlags, cwd: string = process.cwd()): BuildPlan {
  const contextDir = resolve(cwd, flags.context ?? '.');
  const tag = referenceFlag(flags.tag);
  const dockerfile = flags.file === undefined ? join(contextDir, 'Dockerfile') : resolve(cwd, flags.file);
  if (!existsSync(dockerfile)) {
    throw new CliError(
      EXIT.usage,
      flags.file === undefined ? `no Dockerfile in ${contextDir}` : `--file: no Dockerfile at ${dockerfile}`,
      'run it in the repository, or pass --context DIR (and --file PATH for another Dockerfile)',
    );
  }
  if (flags.load && !isSocket(flags.containerdSocket)) {
    throw new CliError(
      EXIT.cluster,
      `no containerd at ${flags.containerdSocket}: start a node with \`npx okt cluster up --node\`, or pass --no-load to only build`,
    );
  }
  return { contextDir, dockerfile, tag, socket: flags.load ? flags.containerdSocket : undefined };
}

export function imageCommand(): Command {
  const image = new Command('image').description('The okt container image, built without a Docker daemon (buildah, in okt\'s own storage)');

  image
    .command('build')
    .description(
      'Build the Dockerfile (FROM node:24-slim, or a local stand-in when it cannot be pulled) and import the image into the node\'s containerd (as root)',
    )
    .option('--tag <ref>', 'the image reference; okt:latest is docker.io/library/okt:latest, as a Pod\'s image: okt:latest', DEFAULT_TAG)
    .option('--context <dir>', 'the build context holding the Dockerfile (default: the current directory)')
    .option('-f, --file <path>', 'another Dockerfile than <context>/Dockerfile (as docker build -f)')
    .option('--no-load', 'only build, into okt\'s storage (do not import into a containerd)')
    .option('--containerd-socket <path>', 'the containerd to import into, namespace k8s.io', nodeContainerdSocket())
    .action(
      runAction('image build', async (flags: BuildFlags) => {
        const plan = buildPlan(flags);
        // A failure (ImageError: the command, the last lines of its log) prints as it is, exit code 1.
        const built = await buildImage({ contextDir: plan.contextDir, dockerfile: plan.dockerfile, tag: plan.tag });
        if (plan.socket) await loadIntoContainerd({ image: built.reference, socket: plan.socket });
        process.stdout.write(`${built.reference}\n`);
      }),
    );

  return image;
}

function referenceFlag(tag: string): string {
  try {
    return normalizeReference(tag);
  } catch (error) {
    if (error instanceof ImageError) throw new CliError(EXIT.usage, `--tag: ${error.message}`);
    throw error;
  }
}
