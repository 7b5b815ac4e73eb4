import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

// The README and the pages under docs/ link to each other by relative paths and #anchors; the code
// names pages in messages and comments (`docs/operations.md, section "Control plane"`). A page moved or
// a heading renamed breaks those quietly, so: every relative link resolves to a file, every #anchor to a
// heading of the target page (as GitHub makes anchors), and every docs page the code names exists.

const REPO = path.resolve(import.meta.dirname, '../..');
/** Where the code that names docs pages lives (test/ is left out: its fixtures name made-up paths). */
const CODE = ['src', 'sidecar', 'bin', 'scripts', 'vitest.config.ts'];

function markdownFiles(): string[] {
  const docs = readdirSync(path.join(REPO, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.md'))
    .map((file) => path.join('docs', file));
  return ['README.md', ...docs.sort()];
}

function codeFiles(): string[] {
  return CODE.flatMap((entry) => {
    const full = path.join(REPO, entry);
    if (!statSync(full).isDirectory()) return [entry];
    return readdirSync(full, { recursive: true, encoding: 'utf8' })
      .filter((file) => /\.(ts|js)$/.test(file) && !file.split(path.sep).includes('node_modules'))
      .map((file) => path.join(entry, file));
  });
}

/** The markdown with every fenced code block blanked out, line for line (so line numbers still hold). */
function withoutFencedCode(markdown: string): string {
  let fenced = false;
  return markdown
    .split('\n')
    .map((line) => {
      if (/^\s*```/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    })
    .join('\n');
}

/** The anchor GitHub gives a heading: lower case, punctuation dropped (not hyphens), spaces to hyphens. */
function githubSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page's headings, in order; a repeated one gets -1, -2, ... as on GitHub. */
function headingAnchors(markdown: string): string[] {
  const occurrences = new Map<string, number>();
  const anchors: string[] = [];
  for (const line of withoutFencedCode(markdown).split('\n')) {
    const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const base = githubSlug(heading[1]!);
    let anchor = base;
    while (occurrences.has(anchor)) {
      const n = occurrences.get(base)! + 1;
      occurrences.set(base, n);
      anchor = `${base}-${n}`;
    }
    occurrences.set(anchor, 0);
    anchors.push(anchor);
  }
  return anchors;
}

/** The headings of a page as written (for messages that quote one). */
function headingTexts(markdown: string): string[] {
  return withoutFencedCode(markdown)
    .split('\n')
    .flatMap((line) => /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1] ?? []);
}

const LINK = /\[([^[\]]*)\]\(([^()\s]+)\)/g;

/** What is wrong with the relative links of one markdown file (FILE is relative to the repository). */
function linkProblems(file: string, markdown: string): string[] {
  const text = withoutFencedCode(markdown).replace(/`[^`\n]*`/g, (code) => ' '.repeat(code.length));
  const problems: string[] = [];
  for (const match of text.matchAll(LINK)) {
    const target = match[2]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // http:, https:, mailto:
    const line = text.slice(0, match.index).split('\n').length;
    const where = `${file}:${line}: [${match[1]!.replace(/\s+/g, ' ')}](${target})`;
    const [targetPath = '', anchor] = target.split('#', 2);
    const samePage = targetPath === '';
    const resolved = samePage ? path.join(REPO, file) : path.resolve(path.dirname(path.join(REPO, file)), decodeURIComponent(targetPath));
    if (!samePage && !existsSync(resolved)) {
      problems.push(`${where}: no file ${path.relative(REPO, resolved)}`);
      continue;
    }
    if (anchor === undefined) continue;
    if (!resolved.endsWith('.md')) {
      problems.push(`${where}: an anchor into a file that is not markdown`);
      continue;
    }
    const anchors = headingAnchors(samePage ? markdown : readFileSync(resolved, 'utf8'));
    if (!anchors.includes(decodeURIComponent(anchor))) {
      problems.push(`${where}: ${path.relative(REPO, resolved)} has no heading #${anchor}`);
    }
  }
  return problems;
}

describe('githubSlug and headingAnchors, as GitHub makes anchors', () => {
  it('drops punctuation but hyphens and underscores, lower-cases, and turns spaces into hyphens', () => {
    expect(githubSlug('Control plane (etcd + kube-apiserver) for tests and local runs')).toBe('control-plane-etcd--kube-apiserver-for-tests-and-local-runs');
    expect(githubSlug('`okt graph check NEW --against-cluster`')).toBe('okt-graph-check-new---against-cluster');
    expect(githubSlug('okt in the cluster, on a real node (`test/in-cluster/`, `OKT_IN_CLUSTER=1`)')).toBe('okt-in-the-cluster-on-a-real-node-testin-cluster-okt_in_cluster1');
    expect(githubSlug('4. On a cluster')).toBe('4-on-a-cluster');
  });

  it('numbers repeated headings -1, -2, ...', () => {
    expect(headingAnchors('# A\n## A\n```\n# not a heading\n```\n### A\n## A-1\n')).toEqual(['a', 'a-1', 'a-2', 'a-1-1']);
  });
});

describe('relative links of the README and docs/', () => {
  it('finds a broken link, a missing file and a missing anchor, and ignores code and http links', () => {
    const markdown = [
      '# Here',
      'Fine: [graphs](graphs.md), [a heading](graphs.md#defining-a-graph), [this page](#here), [web](https://example.com/x.md).',
      'Broken: [no file](nope.md), [no heading](graphs.md#no-such-heading),',
      '[no heading here, across',
      'a line break](#nowhere).',
      'In code: `[not a link](nope.md)`.',
      '```md',
      '[in a fence](nope.md)',
      '```',
    ].join('\n');
    expect(linkProblems('docs/example.md', markdown)).toEqual([
      'docs/example.md:3: [no file](nope.md): no file docs/nope.md',
      'docs/example.md:3: [no heading](graphs.md#no-such-heading): docs/graphs.md has no heading #no-such-heading',
      'docs/example.md:4: [no heading here, across a line break](#nowhere): docs/example.md has no heading #nowhere',
    ]);
  });

  for (const file of markdownFiles()) {
    it(`${file}: every relative link names a file, and every #anchor a heading of it`, () => {
      expect(linkProblems(file, readFileSync(path.join(REPO, file), 'utf8'))).toEqual([]);
    });
  }
});

describe('docs pages the code names', () => {
  it('exist, and a heading quoted after one (docs/X.md, section "Heading") is a heading of it', () => {
    const problems: string[] = [];
    let named = 0;
    for (const file of codeFiles()) {
      const source = readFileSync(path.join(REPO, file), 'utf8');
      for (const match of source.matchAll(/\b(docs\/[\w./-]+?\.md)(?:(?:, section|,|:) "([^"]+)")?/g)) {
        named++;
        const [, page, heading] = match;
        const full = path.join(REPO, page!);
        if (!existsSync(full)) {
          problems.push(`${file}: names ${page}, which does not exist`);
        } else if (heading !== undefined && !headingTexts(readFileSync(full, 'utf8')).some((text) => text.replaceAll('`', '').startsWith(heading.replaceAll('`', '')))) {
          problems.push(`${file}: names the section "${heading}" of ${page}, which has no such heading`);
        }
      }
    }
    expect(problems).toEqual([]);
    expect(named).toBeGreaterThan(0);
  });
});
