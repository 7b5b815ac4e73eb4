import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { okAsUser, packOkt, PACKAGE, REPO, runAsUser, userEnv, userPath } from '../../fixtures/npm-project.ts';

// okt installed by a user whose machine has an older Node than okt needs (Debian's Node 20, past its
// end of life, and the npm of its time): npm warns about okt's engines, which say what Node to bring,
// and about each dependency whose own engines leave Node 20 out, no more and no fewer (okt bundles none
// of them); okt itself then says what to do in one line. That Node and npm come from the registry (the
// `node` and `npm` packages), kept in .okt/ for the next run, so that the test needs no particular Node
// on the machine.

const OLD = path.join(REPO, '.okt/old-node');
const oldNode = path.join(OLD, 'node_modules/node/bin/node');
const oldNpm = (command: 'npm' | 'npx') => path.join(OLD, `node_modules/npm/bin/${command}-cli.js`);
/** The semver npm itself judges engines with. */
const npmSemver = () => createRequire(oldNpm('npm'))('semver') as { satisfies(version: string, range: string): boolean };

const work = mkdtempSync(path.join(tmpdir(), 'okt-old-node-'));
const project = path.join(work, 'app');
afterAll(() => rmSync(work, { recursive: true, force: true }));
// The old Node first in PATH, as the user's shell has it (npm's scripts and `#!/usr/bin/env node` find it).
const oldEnv = { ...userEnv, PATH: [path.dirname(oldNode), userPath].join(path.delimiter) };

let install: { code: number | null; output: string };
let oldVersion: string;

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
  oldVersion = (await okAsUser(oldNode, ['-p', 'process.versions.node'], { cwd: project })).trim();
}, 300_000);

/** Every package installed in the project (name@version) whose engines leave out this Node, with what they require. */
function packagesExcluding(nodeVersion: string): { pkg: string; required: string }[] {
  const modules = path.join(project, 'node_modules');
  const packageRoot = /(^|\/node_modules\/)(@[^/]+\/)?[^/@][^/]*$/;
  return (readdirSync(modules, { recursive: true }) as string[])
    .filter((file) => file.endsWith('/package.json') && packageRoot.test(path.dirname(file)))
    .map((file) => JSON.parse(readFileSync(path.join(modules, file), 'utf8')) as { name: string; version: string; engines?: { node?: string } })
    .filter(({ engines }) => engines?.node !== undefined && !npmSemver().satisfies(nodeVersion, engines.node))
    .map(({ name, version, engines }) => ({ pkg: `${name}@${version}`, required: engines!.node! }));
}

describe('okt installed and run with Node 20 and npm 10', () => {
  it("installs with npm's engine warnings: okt's (Node >= 22.19), and each dependency's whose engines leave Node 20 out", () => {
    expect(install.code, install.output).toBe(0);
    const warnings = [...install.output.matchAll(/Unsupported engine \{\s*npm warn EBADENGINE\s+package: '([^']+)',\s*npm warn EBADENGINE\s+required: \{ node: '([^']+)' \}/g)];
    expect(install.output.match(/Unsupported engine/g)?.length).toBe(warnings.length);
    const byName = (a: { pkg: string }, b: { pkg: string }) => a.pkg.localeCompare(b.pkg);
    const warned = warnings.map(([, pkg, required]) => ({ pkg: pkg!, required: required! })).sort(byName);
    expect(warned).toContainEqual({ pkg: `okt@${PACKAGE.version}`, required: '>=22.19' });
    expect(warned).toEqual(packagesExcluding(oldVersion).sort(byName));
    // The Kubernetes client is an ordinary dependency: installed with okt.
    expect(existsSync(path.join(project, 'node_modules/@kubernetes/client-node/package.json'))).toBe(true);
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
