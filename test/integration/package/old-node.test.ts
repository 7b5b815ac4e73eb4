import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { okAsUser, packOkt, PACKAGE, REPO, runAsUser, userEnv, userPath } from '../../fixtures/npm-project.ts';

// okt installed by a user whose machine has an older Node than okt needs (Debian's Node 20 and the npm
// of its time): npm warns about okt's engines, which say what Node to bring, and about nothing else
// (the dependencies that want a newer Node are bundled: vendor/, scripts/bundle-vendor.ts); okt itself
// then says what to do in one line. That Node and npm come from the registry (the `node` and `npm` packages), kept in .okt/ for
// the next run, so that the test needs no particular Node on the machine.

const OLD = path.join(REPO, '.okt/old-node');
const oldNode = path.join(OLD, 'node_modules/node/bin/node');
const oldNpm = (command: 'npm' | 'npx') => path.join(OLD, `node_modules/npm/bin/${command}-cli.js`);

const work = mkdtempSync(path.join(tmpdir(), 'okt-old-node-'));
const project = path.join(work, 'app');
afterAll(() => rmSync(work, { recursive: true, force: true }));
// The old Node first in PATH, as the user's shell has it (npm's scripts and `#!/usr/bin/env node` find it).
const oldEnv = { ...userEnv, PATH: [path.dirname(oldNode), userPath].join(path.delimiter) };

let install: { code: number | null; output: string };

beforeAll(async () => {
  if (!existsSync(oldNode) || !existsSync(oldNpm('npm'))) {
    mkdirSync(OLD, { recursive: true });
    // The `node` package installs its binary by an install script, which npm 11 wants allowed.
    writeFileSync(path.join(OLD, 'package.json'), JSON.stringify({ private: true, allowScripts: { node: true } }));
    await okAsUser('npm', ['install', '--prefix', OLD, 'node@20', 'npm@10'], { cwd: OLD });
  }
  const { tarball } = await packOkt(work);
  mkdirSync(project);
  writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'app', version: '1.0.0', type: 'module' }));
  const result = await runAsUser(oldNode, [oldNpm('npm'), 'install', tarball], { cwd: project, env: oldEnv });
  install = { code: result.code, output: result.stdout + result.stderr };
}, 300_000);

describe('okt installed and run with Node 20 and npm 10', () => {
  it("installs with one engine warning, okt's: Node >= 22.19 (none for the dependencies okt bundles)", () => {
    expect(install.code, install.output).toBe(0);
    const warnings = [...install.output.matchAll(/Unsupported engine \{\s*npm warn EBADENGINE\s+package: '([^']+)',\s*npm warn EBADENGINE\s+required: \{ node: '([^']+)' \}/g)];
    expect(install.output.match(/Unsupported engine/g)?.length).toBe(1);
    expect(warnings.map(([, pkg, required]) => ({ pkg, required }))).toEqual([{ pkg: `okt@${PACKAGE.version}`, required: '>=22.19' }]);
    // The optional peer dependency (the types of a KubeConfig) is the user's to install: npm leaves it out.
    expect(existsSync(path.join(project, 'node_modules/@kubernetes/client-node'))).toBe(false);
  });

  it("npx okt --version, and import 'okt', say what to do in one line", async () => {
    const bin = await runAsUser(oldNode, [oldNpm('npx'), 'okt', '--version'], { cwd: project, env: oldEnv });
    expect(bin.code).not.toBe(0);
    expect(bin.stdout).toBe('');
    expect(bin.stderr).toMatch(/^okt needs Node >= 22\.19 \(this is 20\.\d+\.\d+\): run it through npm .*npm install --save-dev node@24\n$/);

    for (const subpath of ['okt', 'okt/sidecar', 'okt/events', 'okt/sidecar-client']) {
      const imported = await runAsUser(oldNode, ['--input-type=module', '-e', `import '${subpath}';`], { cwd: project, env: oldEnv });
      expect(imported.code).toBe(1);
      expect(imported.stderr).toContain(bin.stderr.trim());
      expect(imported.stderr).not.toMatch(/\n\s+at /);
    }
  });
});
