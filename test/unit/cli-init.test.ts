import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  MAX_NAME_LENGTH,
  generateCommands,
  kindOf,
  packageJson,
  projectNameProblem,
  projectNamesProblems,
  renderTemplate,
  templateTarget,
  templateValues,
  type OktPackage,
} from '../../src/cli/init-project.ts';

// The pure parts of `okt init` (src/cli/init-project.ts); the command itself is in
// test/integration/cli-init.test.ts, its project's own test in test/integration/package/getting-started.test.ts.

const ROOT = path.resolve(import.meta.dirname, '../..');
const OKT = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as OktPackage;
const names = { name: 'my-app', kind: 'MyApp', group: 'example.com', version: 'v1alpha1' };

describe('okt init: names', () => {
  it('takes a lower-case DNS label of at most 40 characters as the name, and says what is wrong with any other', () => {
    for (const good of ['my-app', 'a', 'app2', 'a-b-c', 'x'.repeat(MAX_NAME_LENGTH)]) expect(projectNameProblem(good), good).toBeUndefined();
    for (const bad of ['My-App', '1app', 'app-', 'my_app', 'my.app', '', '-a']) {
      expect(projectNameProblem(bad), bad).toBe(`"${bad}" is not a lower-case name of letters, digits and "-", starting with a letter and not ending with "-" (it names the npm package, the graph and the image)`);
    }
    expect(projectNameProblem('x'.repeat(MAX_NAME_LENGTH + 1))).toBe(`"${'x'.repeat(MAX_NAME_LENGTH + 1)}" is longer than 40 characters`);
  });

  it('makes the kind of the name in CamelCase', () => {
    expect(kindOf('my-app')).toBe('MyApp');
    expect(kindOf('a-b-c')).toBe('ABC');
    expect(kindOf('app2')).toBe('App2');
    expect(kindOf('db--x')).toBe('DbX');
  });

  it('lists every problem of the names at once, each naming its flag', () => {
    expect(projectNamesProblems({ name: 'My_App', kind: 'myApp', group: 'okt', version: 'V1' }, ' (the name of the directory My_App: give --name NAME)')).toEqual([
      '--name: "My_App" is not a lower-case name of letters, digits and "-", starting with a letter and not ending with "-" (it names the npm package, the graph and the image) (the name of the directory My_App: give --name NAME)',
      '--group: "okt" is not a lower-case domain with at least one dot, e.g. okt.dev',
      '--version: "V1" is not a lower-case DNS label, e.g. v1alpha1',
      '--kind: "myApp" is not CamelCase letters and digits, e.g. Database',
    ]);
    expect(projectNamesProblems(names, '')).toEqual([]);
    // The kind made of a bad name is not a second problem.
    expect(projectNamesProblems({ ...names, name: 'My_App', kind: kindOf('My_App') }, '')).toHaveLength(1);
  });
});

describe('okt init: package.json', () => {
  const vendored = { spec: 'file:vendor/okt-0.1.0.tgz', vendored: 'vendor/okt-0.1.0.tgz' };

  it('an ES module package depending on the okt given, with the ranges okt itself uses for Node 24, TypeScript and the test', () => {
    const manifest = packageJson(names, vendored, OKT) as Record<string, any>;
    expect(manifest).toMatchObject({ name: 'my-app', type: 'module', private: true, dependencies: { okt: 'file:vendor/okt-0.1.0.tgz' }, allowScripts: { node: true } });
    expect(manifest.devDependencies).toEqual({
      '@kubernetes/client-node': OKT.dependencies['@kubernetes/client-node'],
      '@types/node': OKT.devDependencies['@types/node'],
      node: OKT.devDependencies.node,
      typescript: OKT.devDependencies.typescript,
    });
    expect(OKT.devDependencies.node).toMatch(/^\^24\./);
  });

  it('its scripts crd and manifests are the okt commands that made k8s/, and generate writes them there', () => {
    const { scripts } = packageJson(names, vendored, OKT) as { scripts: Record<string, string> };
    const commands = generateCommands(names);
    expect(scripts.crd).toBe('okt crd graph.ts --group example.com --version v1alpha1 --kind MyApp --status-format lean');
    expect(scripts.manifests).toBe(`okt ${commands.manifests.join(' ')}`);
    expect(scripts.manifests).toBe('okt manifests graph.ts --group example.com --version v1alpha1 --kind MyApp --status-format lean --image my-app:latest --graph-module /app/graph.ts');
    expect(scripts.generate).toBe('npm run --silent crd > k8s/crd.yaml && npm run --silent manifests > k8s/manifests.yaml');
    expect(scripts.test).toMatch(/^tsc --noEmit -p \. && node --test /);
  });
});

describe('okt init: templates', () => {
  const templates = path.join(ROOT, 'templates/init');
  const files = readdirSync(templates, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => path.relative(templates, path.join(entry.parentPath, entry.name)));

  it('every template renders, vendored or not, with no placeholder left', () => {
    for (const okt of [{ spec: 'file:vendor/okt-0.1.0.tgz', vendored: 'vendor/okt-0.1.0.tgz' }, { spec: '^0.2.0' }]) {
      const values = templateValues(names, okt, '0.1.0');
      for (const file of files) expect(renderTemplate(readFileSync(path.join(templates, file), 'utf8'), values, file), file).not.toMatch(/\{\{|\}\}/);
    }
  });

  it('an unknown placeholder is an error naming the template', () => {
    expect(() => renderTemplate('a {{nope}}', { name: 'x' }, 'graph.ts')).toThrow('template graph.ts: no value for {{nope}}');
  });

  it('the README has five lines and says where okt comes from; the Dockerfile copies vendor/ only when there is one', () => {
    const render = (file: string, okt: { spec: string; vendored?: string }) => renderTemplate(readFileSync(path.join(templates, file), 'utf8'), templateValues(names, okt, '0.1.0'), file);
    const readme = render('README.md', { spec: 'file:vendor/okt-0.1.0.tgz', vendored: 'vendor/okt-0.1.0.tgz' });
    expect(readme.trimEnd().split('\n')).toHaveLength(5);
    expect(readme).toContain('okt 0.1.0 is `vendor/okt-0.1.0.tgz`');
    expect(readme).toContain('`npm install okt@^0.1.0`');
    expect(render('README.md', { spec: '^0.2.0' })).toContain('okt is the dependency `^0.2.0` (package.json).');
    expect(render('Dockerfile', { spec: 'file:vendor/okt-0.1.0.tgz', vendored: 'vendor/okt-0.1.0.tgz' })).toContain('\nCOPY vendor vendor\nRUN npm ci');
    expect(render('Dockerfile', { spec: '^0.2.0' })).not.toContain('vendor');
  });

  it('dotfiles are kept without their dot (npm pack would drop .gitignore) and get it back', () => {
    expect(files).toEqual(expect.arrayContaining(['gitignore', 'dockerignore']));
    expect(templateTarget('gitignore')).toBe('.gitignore');
    expect(templateTarget('dockerignore')).toBe('.dockerignore');
    expect(templateTarget('actions/stop.sh')).toBe('actions/stop.sh');
    expect(templateTarget('test/walk.test.ts')).toBe('test/walk.test.ts');
  });
});
