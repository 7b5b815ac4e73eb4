import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { contextDigest, fromImages, isIgnored, parseDockerignore } from '../../src/cluster/build-context.ts';

describe('.dockerignore as okt evaluates it', () => {
  const patterns = parseDockerignore('# comment\nnode_modules\n/dist/\n*.log\ntest\ndocs/draft?\n')!;

  it('excludes a matching path and everything under it, from the context root only', () => {
    expect(isIgnored('node_modules', patterns)).toBe(true);
    expect(isIgnored('node_modules/x/index.js', patterns)).toBe(true);
    expect(isIgnored('dist/a.js', patterns)).toBe(true);
    expect(isIgnored('debug.log', patterns)).toBe(true);
    expect(isIgnored('docs/draft1/x.md', patterns)).toBe(true);
    expect(isIgnored('src/node_modules/x.js', patterns)).toBe(false);
    expect(isIgnored('src/debug.log', patterns)).toBe(false);
    expect(isIgnored('testing/a.ts', patterns)).toBe(false);
    expect(isIgnored('src/index.ts', patterns)).toBe(false);
  });

  it('lets the last matching pattern win, an exception bringing a path back (an allow list)', () => {
    const allow = parseDockerignore('*\n!src\n!package.json\n*.md\n!README.md\nsrc/secret.ts\n')!;
    expect(isIgnored('src/index.ts', allow)).toBe(false);
    expect(isIgnored('src/secret.ts', allow)).toBe(true);
    expect(isIgnored('package.json', allow)).toBe(false);
    expect(isIgnored('README.md', allow)).toBe(false);
    expect(isIgnored('NOTES.md', allow)).toBe(true);
    expect(isIgnored('node_modules/x.js', allow)).toBe(true);
  });

  it('gives up (every build runs) on what it does not evaluate', () => {
    expect(parseDockerignore('**/*.log')).toBeUndefined();
    expect(parseDockerignore('[ab].txt')).toBeUndefined();
  });
});

describe('fromImages', () => {
  it('lists the images built FROM, not the earlier stages', () => {
    expect(fromImages('FROM node:24-slim AS build\nRUN x\nFROM build AS test\nFROM node:24-slim\nfrom --platform=linux/amd64 okt:latest\n')).toEqual(['node:24-slim', 'okt:latest']);
  });
});

describe('contextDigest', () => {
  let dir = '';
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  function context(): string {
    dir = mkdtempSync(path.join(tmpdir(), 'okt-context-'));
    writeFileSync(path.join(dir, 'Dockerfile'), 'FROM node:24-slim\nCOPY . .\n');
    writeFileSync(path.join(dir, '.dockerignore'), 'node_modules\n*.log\n');
    mkdirSync(path.join(dir, 'src'));
    writeFileSync(path.join(dir, 'src', 'a.ts'), 'export {};\n');
    mkdirSync(path.join(dir, 'node_modules'));
    return dir;
  }

  it('changes with a kept file, its executable bit, the Dockerfile and the base; not with an ignored file', () => {
    const root = context();
    const dockerfile = path.join(root, 'Dockerfile');
    const digest = () => contextDigest(root, dockerfile, ['sha256:base'])!;
    expect(digest()).toBe(digest());
    const first = digest();
    expect(first).toMatch(/^[0-9a-f]{64}$/);
    writeFileSync(path.join(root, 'node_modules', 'x.js'), 'ignored');
    writeFileSync(path.join(root, 'build.log'), 'ignored');
    expect(digest()).toBe(first);
    expect(contextDigest(root, dockerfile, ['sha256:other'])).not.toBe(first);
    chmodSync(path.join(root, 'src', 'a.ts'), 0o755);
    const executable = digest();
    expect(executable).not.toBe(first);
    writeFileSync(path.join(root, 'src', 'a.ts'), 'export const a = 1;\n');
    expect(digest()).not.toBe(executable);
    const before = digest();
    writeFileSync(dockerfile, 'FROM node:24-slim\nCOPY src src\n');
    expect(digest()).not.toBe(before);
  });

  it('with an allow list, walks an excluded directory only for a file an exception brings back', () => {
    const root = context();
    const dockerfile = path.join(root, 'Dockerfile');
    writeFileSync(path.join(root, '.dockerignore'), '*\n!src\n!Dockerfile\n!node_modules/keep.js\n');
    const first = contextDigest(root, dockerfile, [])!;
    writeFileSync(path.join(root, 'README.md'), 'not in the context');
    writeFileSync(path.join(root, 'node_modules', 'other.js'), 'not in the context');
    expect(contextDigest(root, dockerfile, [])).toBe(first);
    writeFileSync(path.join(root, 'node_modules', 'keep.js'), 'in the context');
    expect(contextDigest(root, dockerfile, [])).not.toBe(first);
  });
});
