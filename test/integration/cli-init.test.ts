import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { okt } from '../fixtures/okt-process.ts';
import { tempFiles } from '../fixtures/temp-files.ts';

// `okt init` as a process, with --okt (nothing packed: that, and the project's own `npm install && npm
// test`, are test/integration/package/getting-started.test.ts's): what it writes, and its refusals.

const { dir } = tempFiles('okt-init-');
const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at /);

describe.concurrent('okt init', { timeout: 60_000 }, () => {
  it('writes the project, depending on the okt --okt names, with k8s/ made by okt crd and okt manifests', async () => {
    const project = path.join(dir, 'shop-db');
    const result = await okt(['init', project, '--okt', '^0.2.0', '--group', 'shop.example.org']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      `okt init: made ${project}: package.json, .dockerignore, .gitignore, Dockerfile, README.md, actions/, graph.ts, sidecar.yaml, test/, tsconfig.json, workload.ts, k8s/crd.yaml, k8s/manifests.yaml (ShopDb.shop.example.org/v1alpha1; okt ^0.2.0)\n` +
        `Next: cd ${project} && npm install && npm test\n`,
    );
    const manifest = JSON.parse(readFileSync(path.join(project, 'package.json'), 'utf8')) as Record<string, any>;
    expect(manifest).toMatchObject({ name: 'shop-db', type: 'module', dependencies: { okt: '^0.2.0' } });
    expect(existsSync(path.join(project, 'vendor'))).toBe(false);
    expect(statSync(path.join(project, 'actions/stop.sh')).mode & 0o111).not.toBe(0);
    expect(readFileSync(path.join(project, 'graph.ts'), 'utf8')).toContain("name: 'shop-db',");
    expect(readFileSync(path.join(project, 'sidecar.yaml'), 'utf8')).toMatch(/^graphs:\n {2}shop-db:\n/m);

    const crd = parseAllDocuments(readFileSync(path.join(project, 'k8s/crd.yaml'), 'utf8')).map((d) => d.toJS());
    expect(crd).toHaveLength(1);
    expect(crd[0]).toMatchObject({ kind: 'CustomResourceDefinition', metadata: { name: 'shopdbs.shop.example.org', annotations: { 'okt.dev/graph': 'shop-db' } } });
    const desired = crd[0].spec.versions[0].schema.openAPIV3Schema.properties.spec.properties.desiredState;
    expect(desired.enum).toEqual(['Start', 'Running', 'Stopping', 'End']);
    const manifests = parseAllDocuments(readFileSync(path.join(project, 'k8s/manifests.yaml'), 'utf8')).map((d) => d.toJS());
    expect(manifests.map((d) => d?.kind).filter(Boolean)).toEqual(expect.arrayContaining(['Namespace', 'CustomResourceDefinition', 'Deployment']));
    // The graph makes each resource's workload and Service: the operator loads graph.ts (with workload.ts) from the image, and may make them.
    expect(manifests.map((d) => d?.kind)).not.toContain('ConfigMap');
    const deployment = manifests.find((d) => d?.kind === 'Deployment');
    expect(deployment.spec.template.spec.containers[0].image).toBe('shop-db:latest');
    expect(deployment.spec.template.spec.containers[0].args.slice(0, 3)).toEqual(['run', '--graph', '/app/graph.ts']);
    expect(deployment.spec.template.spec.containers[0].args).not.toContain('--sidecar-url');
    const clusterRole = manifests.find((d) => d?.kind === 'ClusterRole');
    expect(clusterRole.rules).toContainEqual({ apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] });
    expect(readFileSync(path.join(project, 'Dockerfile'), 'utf8')).toContain('COPY graph.ts workload.ts sidecar.yaml ./');
  });

  it('refuses a directory that is not empty (exit 2), naming it and what it holds, and writes nothing; --force writes over it', async () => {
    const project = path.join(dir, 'taken');
    mkdirSync(project);
    writeFileSync(path.join(project, 'notes.txt'), 'mine\n');
    const refused = await okt(['init', project, '--okt', '^0.2.0']);
    expect(refused.code).toBe(2);
    expect(refused.stdout).toBe('');
    expect(refused.stderr).toBe(`okt init: DIR: ${project} is not empty (it holds notes.txt)\n  Give a new or empty directory, or --force to write the project over what is there.\n`);
    expect(readdirSync(project)).toEqual(['notes.txt']);

    const forced = await okt(['init', project, '--okt', '^0.2.0', '--force']);
    expect(forced.code).toBe(0);
    expect(readdirSync(project)).toEqual(expect.arrayContaining(['notes.txt', 'graph.ts', 'package.json']));
  });

  it('refuses a name that is not a lower-case DNS label (exit 2), saying it came from the directory; every problem at once', async () => {
    const project = path.join(dir, 'My_App');
    const refused = await okt(['init', project, '--okt', '^0.2.0']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(
      `okt init: --name: "My_App" is not a lower-case name of letters, digits and "-", starting with a letter and not ending with "-" (it names the npm package, the graph and the image) (the name of the directory ${project}: give --name NAME)\n`,
    );
    expect(existsSync(project)).toBe(false);

    const several = await okt(['init', path.join(dir, 'several'), '--name', 'Bad', '--group', 'okt', '--okt', '']);
    expect(several.code).toBe(2);
    expect(several.stderr).toMatch(/^okt init: 3 problems:\n- --name: "Bad" is not .*\n- --group: "okt" is not a lower-case domain with at least one dot, e.g. okt.dev\n- --okt: give a version range, a tarball or a path npm can install\n$/);
    noStack(several.stderr);
  });

  it('refuses a DIR that is a file (exit 2)', async () => {
    const file = path.join(dir, 'a-file');
    writeFileSync(file, '');
    const refused = await okt(['init', file, '--okt', '^0.2.0']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toBe(`okt init: DIR: ${file} is not a directory\n`);
  });
});
