import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { packOkt, runAsUser, stepTimer } from '../../fixtures/npm-project.ts';
import { GUIDE, guideBlocks, guideMark } from '../../fixtures/guide.ts';

// docs/getting-started.md, followed literally: its blocks marked `<!-- test: run -->` run in order, in
// one shell of the user's (npm on the machine's Node), in a new directory holding the tarball that
// `npm pack` of this checkout makes. They make a project with `okt init` (from the tarball, through
// npx), then `npm install && npm test` in it (its test walks a resource on a real control plane with
// the project's sidecar), then change its graph and test again. This is the acceptance of `okt init`.

const work = mkdtempSync(path.join(tmpdir(), 'okt-guide-'));
let npxDir: string | undefined;
afterAll(() => {
  rmSync(work, { recursive: true, force: true });
  // npx's install of Node 24 and okt from that tarball (~300 MB) is this run's alone: its directory is a hash of the tarball's absolute path.
  if (npxDir !== undefined && npxDir.startsWith(path.join(homedir(), '.npm/_npx/'))) rmSync(npxDir, { recursive: true, force: true });
});

describe('docs/getting-started.md, run literally', () => {
  const markdown = readFileSync(GUIDE, 'utf8');
  const blocks = guideBlocks('run', markdown);

  it('marks the blocks that make, install, test, change and test again a project', () => {
    expect(blocks.length).toBe(5);
    expect(blocks[0]).toMatch(/okt init my-app/);
    expect(blocks.every((block) => !block.includes(guideMark('run')))).toBe(true);
  });

  it('okt init from the packed okt, then npm install && npm test pass; the test walks a resource to Running; after a change of the graph, again', async () => {
    const { timings, timed } = stepTimer();
    const packed = await timed('npm pack', () => packOkt(work));
    expect(markdown, `the guide names the tarball npm pack makes now (${packed.filename})`).toContain(`"$PWD/${packed.filename}"`);

    // One shell runs them all (a `cd` holds for the next blocks); each says where it starts.
    const script = blocks.map((block, i) => `echo "::block ${i}::"\n${block}`).join('\n');
    const result = await timed('the guide', () => runAsUser('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd: work }));
    console.log(`docs/getting-started.md, step times (ms): ${JSON.stringify(timings)}`);
    const output = result.stdout + result.stderr;
    npxDir = /packing okt [\d.]+ \((.*)\/node_modules\/okt\)/.exec(output)?.[1];
    expect(result.code, output).toBe(0);

    const [, init = '', install = '', , , change = ''] = result.stdout.split(/^::block \d::$/m);
    expect(init).toMatch(/^okt init: made my-app: package\.json, .*graph\.ts, sidecar\.yaml, test\/.*k8s\/crd\.yaml, k8s\/manifests\.yaml \(MyApp\.example\.com\/v1alpha1; okt vendor\/okt-[\d.]+\.tgz\)$/m);
    expect(result.stderr).toMatch(/okt init: packing okt [\d.]+ \(.*\/node_modules\/okt\) into vendor\//);
    // npm test's walk, as the project's test reports it.
    expect(install).toMatch(/ℹ MyApp first reached Running \(Ready\): >Start>Running$/m);
    expect(install).toMatch(/ℹ Running's action said: my-app is running \(operation [\w-]+-1\)$/m);
    expect(install).toMatch(/ℹ deleted: Stopping's action said: my-app stopped \(operation [\w-]+-2\)/m);
    expect(install).toMatch(/ℹ pass 2$/m);
    expect(change).toMatch(/ℹ MyApp first reached Running \(Ready\): >Start>Configuring>Running$/m);
    expect(change).toMatch(/ℹ pass 2$/m);

    const project = path.join(work, 'my-app');
    const manifest = JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
    expect(manifest.dependencies.okt).toBe(`file:vendor/${packed.filename}`);
    expect(existsSync(path.join(project, 'vendor', packed.filename))).toBe(true);
    expect(readFileSync(path.join(project, 'k8s/crd.yaml'), 'utf8')).toContain('- Configuring');
  }, 600_000);
});
