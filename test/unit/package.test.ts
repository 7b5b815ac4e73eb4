import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nodeVersionProblem, REQUIRED_NODE } from '../../src/node-version.ts';
import { version } from '../../src/version.ts';

// What package.json says and what the code says about it: the version `okt --version` prints, the Node
// the entry points and bin/okt.js require. (test/integration/package/ installs the packed tarball.)

const REPO = path.resolve(import.meta.dirname, '../..');
const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
  exports: Record<string, unknown>;
  scripts: Record<string, string>;
};

describe('package.json and the code agree', () => {
  it('on the version', () => {
    expect(version).toBe(pkg.version);
  });

  it('on the Node required: engines, src/node-version.ts and bin/okt.js', () => {
    expect(pkg.engines.node).toBe(`>=${REQUIRED_NODE.major}.${REQUIRED_NODE.minor}`);
    const bin = readFileSync(path.join(REPO, 'bin/okt.js'), 'utf8');
    expect(bin).toContain(`major < ${REQUIRED_NODE.major} || (major === ${REQUIRED_NODE.major} && minor < ${REQUIRED_NODE.minor})`);
    expect(bin).toContain(`okt needs Node >= ${REQUIRED_NODE.major}.${REQUIRED_NODE.minor} (this is `);
  });

  it('exports the documented subpaths, and builds the package when packed, not when installed', () => {
    expect(Object.keys(pkg.exports)).toEqual(expect.arrayContaining(['.', './sidecar', './events', './sidecar-client', './cluster']));
    // A `prepare` script is an install script of a tarball or git dependency: npm asks to approve it,
    // and it cannot build there (no sources, no tsc).
    expect(pkg.scripts.prepare).toBeUndefined();
    expect(pkg.scripts.prepack).toContain('npm run build');
  });
});

describe('nodeVersionProblem', () => {
  it('is nothing from the required version on', () => {
    for (const v of ['22.19.0', '22.20.1', '23.0.0', '24.21.0', '30.1.2']) expect(nodeVersionProblem(v)).toBeUndefined();
  });

  it('is one line saying what to do below it', () => {
    for (const v of ['20.20.2', '22.18.0', '18.0.0']) {
      const line = nodeVersionProblem(v)!;
      expect(line).toBe(
        `okt needs Node >= 22.19 (this is ${v}): run it through npm (npx okt, npm test, npm start) with Node 24 in the project: ` +
          'npm pkg set allowScripts.node=true --json && npm install --save-dev node@24',
      );
    }
  });

  it('says the same as bin/okt.js', () => {
    const bin = readFileSync(path.join(REPO, 'bin/okt.js'), 'utf8');
    const template = bin.slice(bin.indexOf('`okt needs'), bin.indexOf('\\n`'));
    const fromBin = template.replace(/`\s*\+\s*`/g, '').replace(/^`/, '').replace('${process.versions.node}', '20.0.0');
    expect(fromBin).toBe(nodeVersionProblem('20.0.0'));
  });
});
