import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

// What a build reads, as one digest: an image whose label holds the same digest is not built again.
// buildah's layer cache is off (with vfs each cached step is a whole copy of the filesystem), so
// without this a build that changes nothing still runs every step (about a minute).

/** The label that records the digest of the context an image was built from. */
export const CONTEXT_LABEL = 'dev.okt.context';

/**
 * .dockerignore as patterns okt evaluates: `name`, `dir/sub`, `*.log`, `?` (relative to the context,
 * `*` and `?` within one path segment). Undefined for what it does not evaluate (`**`, `!` exceptions,
 * character classes): then the digest is not computed and every build runs.
 */
export function parseDockerignore(text: string): RegExp[] | undefined {
  const patterns: RegExp[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    if (line.startsWith('!') || line.includes('**') || /[[\]\\]/.test(line)) return undefined;
    const pattern = line.replace(/^\.?\/+/, '').replace(/\/+$/, '');
    const source = pattern
      .split('')
      .map((c) => (c === '*' ? '[^/]*' : c === '?' ? '[^/]' : c.replace(/[.+^${}()|]/g, '\\$&')))
      .join('');
    patterns.push(new RegExp(`^${source}$`));
  }
  return patterns;
}

/** Whether a path relative to the context (posix) is excluded: it, or a directory above it, matches. */
export function isIgnored(relativePath: string, patterns: readonly RegExp[]): boolean {
  const segments = relativePath.split('/');
  for (let n = 1; n <= segments.length; n++) {
    const prefix = segments.slice(0, n).join('/');
    if (patterns.some((pattern) => pattern.test(prefix))) return true;
  }
  return false;
}

/**
 * sha256 over the Dockerfile, the base image's id and every file of the context .dockerignore keeps
 * (path, mode bit for executables, content). Undefined when .dockerignore cannot be evaluated.
 */
export function contextDigest(contextDir: string, dockerfile: string, baseImageIds: readonly string[]): string | undefined {
  const ignoreFile = join(contextDir, '.dockerignore');
  const patterns = existsSync(ignoreFile) ? parseDockerignore(readFileSync(ignoreFile, 'utf8')) : [];
  if (patterns === undefined) return undefined;
  const hash = createHash('sha256');
  hash.update(`from ${baseImageIds.join(' ')}\n`).update(readFileSync(dockerfile));
  const walk = (relative: string) => {
    const dir = relative === '' ? contextDir : join(contextDir, relative);
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (isIgnored(path, patterns)) continue;
      if (entry.isDirectory()) walk(path);
      else if (entry.isFile()) {
        const executable = (statSync(join(contextDir, path)).mode & 0o111) !== 0;
        hash.update(`\0${path}${executable ? ' x' : ''}\0`).update(readFileSync(join(contextDir, path)));
      }
      else if (entry.isSymbolicLink()) hash.update(`\0${path} -> link\0`);
    }
  };
  walk('');
  return hash.digest('hex');
}

/** The images a Dockerfile builds FROM (not its own earlier stages), in order. */
export function fromImages(dockerfileText: string): string[] {
  const stages = new Set<string>();
  const images: string[] = [];
  for (const line of dockerfileText.split('\n')) {
    const match = /^\s*FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (!match) continue;
    const [, image, stage] = match;
    if (!stages.has(image!.toLowerCase()) && !images.includes(image!)) images.push(image!);
    if (stage) stages.add(stage.toLowerCase());
  }
  return images;
}
