import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

// What a build reads, as one digest: an image whose label holds the same digest is not built again.
// buildah's layer cache is off (with vfs each cached step is a whole copy of the filesystem), so
// without this a build that changes nothing still runs every step (about a minute).

/** The label that records the digest of the context an image was built from. */
export const CONTEXT_LABEL = 'dev.okt.context';

/** One line of .dockerignore: what it matches, and whether it is an exception (`!`). */
export interface IgnorePattern {
  regex: RegExp;
  exception: boolean;
  /** Each path segment's own regex: whether the pattern can match below a directory. */
  segments: RegExp[];
}

function globRegex(glob: string): RegExp {
  const source = glob
    .split('')
    .map((c) => (c === '*' ? '[^/]*' : c === '?' ? '[^/]' : c.replace(/[.+^${}()|]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/**
 * .dockerignore as patterns okt evaluates: `name`, `dir/sub`, `*.log`, `?` (relative to the context,
 * `*` and `?` within one path segment), and `!` exceptions. Undefined for what it does not evaluate
 * (`**`, character classes, escapes): then the digest is not computed and every build runs.
 */
export function parseDockerignore(text: string): IgnorePattern[] | undefined {
  const patterns: IgnorePattern[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const exception = line.startsWith('!');
    const body = exception ? line.slice(1).trim() : line;
    if (body.includes('**') || /[[\]\\]/.test(body)) return undefined;
    const pattern = body.replace(/^\.?\/+/, '').replace(/\/+$/, '');
    patterns.push({ regex: globRegex(pattern), exception, segments: pattern.split('/').map(globRegex) });
  }
  return patterns;
}

/**
 * Whether a path relative to the context (posix) is excluded, as Docker decides: the last pattern that
 * matches it or a directory above it wins; an exception (`!`) brings it back.
 */
export function isIgnored(relativePath: string, patterns: readonly IgnorePattern[]): boolean {
  const segments = relativePath.split('/');
  const prefixes = segments.map((_, i) => segments.slice(0, i + 1).join('/'));
  let ignored = false;
  for (const { regex, exception } of patterns) {
    if (prefixes.some((prefix) => regex.test(prefix))) ignored = !exception;
  }
  return ignored;
}

/**
 * sha256 over the Dockerfile, the base image's id and every file of the context .dockerignore keeps
 * (path, mode bit for executables, content). Undefined when .dockerignore cannot be evaluated.
 */
export function contextDigest(contextDir: string, dockerfile: string, baseImageIds: readonly string[]): string | undefined {
  const ignoreFile = join(contextDir, '.dockerignore');
  const patterns = existsSync(ignoreFile) ? parseDockerignore(readFileSync(ignoreFile, 'utf8')) : [];
  if (patterns === undefined) return undefined;
  const exceptions = patterns.filter((p) => p.exception);
  // An excluded directory is walked only when an exception may bring back something below it.
  const exceptionBelow = (path: string) => {
    const mine = path.split('/');
    return exceptions.some((e) => e.segments.length > mine.length && mine.every((segment, i) => e.segments[i]!.test(segment)));
  };
  const hash = createHash('sha256');
  hash.update(`from ${baseImageIds.join(' ')}\n`).update(readFileSync(dockerfile));
  const walk = (relative: string) => {
    const dir = relative === '' ? contextDir : join(contextDir, relative);
    for (const entry of readdirSync(dir, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = relative === '' ? entry.name : `${relative}/${entry.name}`;
      if (entry.isDirectory()) {
        if (!isIgnored(path, patterns) || exceptionBelow(path)) walk(path);
        continue;
      }
      if (isIgnored(path, patterns)) continue;
      if (entry.isFile()) {
        const executable = (statSync(join(contextDir, path)).mode & 0o111) !== 0;
        hash.update(`\0${path}${executable ? ' x' : ''}\0`).update(readFileSync(join(contextDir, path)));
      } else if (entry.isSymbolicLink()) hash.update(`\0${path} -> link\0`);
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
