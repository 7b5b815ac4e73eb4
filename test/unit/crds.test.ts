import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { BUNDLED_GRAPHS } from '../../src/cli/bundled.ts';
import { bundledCrdPath, bundledCrdYaml } from '../../src/cli/crd.ts';
import { databaseGraph } from '../../graphs/database.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { generateCrd, generateManifests, publishedGraph } from '../../src/kube/index.ts';

// The committed CRDs (crds/*.yaml) must be what the code generates today.
describe('crds/', () => {
  for (const bundled of BUNDLED_GRAPHS) {
    const file = bundledCrdPath(bundled);
    it(`${file} is up to date with ${bundled.file}`, () => {
      const committed = readFileSync(file, 'utf8');
      const generated = bundledCrdYaml(bundled);
      if (committed !== generated) {
        expect.fail(`${file} is out of date with ${bundled.file} and src/kube/crd.ts: run \`npm run crds\` and commit the result`);
      }
      const crd = parse(committed) as { metadata: { name: string }; spec: { names: { kind: string; shortNames: string[] }; versions: { name: string; schema: { openAPIV3Schema: { properties: { spec: { properties: { desiredState: { enum: string[] } } } } } } }[] } };
      expect(crd.metadata.name).toBe(`${bundled.crd.kind.toLowerCase()}s.${bundled.crd.group}`);
      expect(crd.spec.names.shortNames).toEqual(bundled.crd.shortNames);
      expect(crd.spec.versions[0]!.name).toBe(bundled.crd.version);
      expect(crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.desiredState.enum).toEqual([...bundled.graph.nodeNames]);
    });
  }

  it('holds the database and reconciliation CRDs with their short names', () => {
    expect(BUNDLED_GRAPHS.map((b) => [b.graph.name, b.crd.kind, b.crd.shortNames])).toEqual([
      ['database', 'Database', ['odb']],
      ['reconciliation', 'Reconciliation', ['orc']],
    ]);
  });
});

describe('a graph revision in the CRD and the manifests', () => {
  const v2 = defineGraph({
    name: 'database', entry: 'Start', previous: [databaseGraph],
    migrations: { removed: { Stopping: 'End' } },
    nodes: { Start: { children: ['Running'] }, Running: { children: ['Backup', 'End'] }, Backup: { formerly: ['Servicing'], children: ['Running', 'End'] }, End: {} },
  });
  const names = { group: 'okt.dev', version: 'v1alpha1', kind: 'Database' };

  it('publishes every served revision, readable back by revision, and accepts former and mapped names in desiredState', () => {
    const crd = generateCrd(v2, names) as { metadata: { annotations: Record<string, string> }; spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: { desiredState: { enum: string[] } } } } } } }[] } };
    const annotations = crd.metadata.annotations;
    expect(annotations['okt.dev/graph-revision']).toBe(v2.revision);
    expect(publishedGraph(annotations)?.revision).toBe(v2.revision);
    expect(publishedGraph(annotations, databaseGraph.revision)?.nodeNames).toEqual(databaseGraph.nodeNames);
    expect(publishedGraph(annotations, 'ffffffffffffffff')).toBeUndefined();
    expect(crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.desiredState.enum).toEqual(['Start', 'Running', 'Backup', 'End', 'Servicing', 'Stopping']);
  });

  it('puts the revision on the operator Pod template, so a new revision rolls the Deployment', () => {
    const deployment = generateManifests(v2, names, { namespace: 'okt-system', createNamespace: false, image: 'okt:latest', sidecarToken: false }).find((d) => d.kind === 'Deployment') as { spec: { template: { metadata: { annotations: Record<string, string> } } } };
    expect(deployment.spec.template.metadata.annotations['okt.dev/graph-revision']).toBe(v2.revision);
  });
});

describe('the CRD validation rules (x-kubernetes-validations)', () => {
  type Rule = { rule: string; message: string; fieldPath?: string; reason?: string };
  type Schema = { 'x-kubernetes-validations'?: Rule[]; properties?: Record<string, Schema> };
  const specOf = (crd: Record<string, unknown>) => (crd as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } }).spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!;
  const names = { group: 'okt.dev', version: 'v1alpha1', kind: 'Broker' };

  it("require a node's parameters without a default while spec.desiredState names it, or a former name of it, escaping CEL's words", () => {
    const v1 = defineGraph({
      name: 'broker', entry: 'Start',
      nodes: { Start: { children: ['Updating'] }, Updating: { children: ['End'], params: z.object({ version: z.string(), in: z.string(), a__b: z.string(), keep: z.string().default('x') }) }, End: {} },
    });
    const v2 = defineGraph({
      name: 'broker', entry: 'Start', previous: [v1],
      nodes: { Start: { children: ['Upgrading'] }, Upgrading: { formerly: ['Updating'], children: ['End'], params: z.object({ version: z.string(), in: z.string(), a__b: z.string(), keep: z.string().default('x') }) }, End: {} },
    });
    const rules = specOf(generateCrd(v2, names))['x-kubernetes-validations']!;
    expect(rules.map((r) => [r.rule, r.fieldPath, r.reason])).toEqual([
      ['!(self.desiredState in ["Upgrading","Updating"]) || (has(self.params) && has(self.params.version))', '.params.version', 'FieldValueRequired'],
      ['!(self.desiredState in ["Upgrading","Updating"]) || (has(self.params) && has(self.params.__in__))', '.params.in', 'FieldValueRequired'],
      ['!(self.desiredState in ["Upgrading","Updating"]) || (has(self.params) && has(self.params.a__underscores__b))', '.params.a__b', 'FieldValueRequired'],
    ]);
    expect(rules[0]!.message).toBe('spec.params.version is required while spec.desiredState is Upgrading: node Upgrading declares it without a default, and its action cannot start without it');
  });

  it('refuse a removed node whose CRs may not move as spec.desiredState (a mapped one stands for its node), and check the token Secret reference and the event sink', () => {
    const v2 = defineGraph({
      name: 'database', entry: 'Start', previous: [databaseGraph],
      migrations: { removed: { Stopping: { refuse: 'stop it by deleting the CR' }, Servicing: 'Running' } },
      nodes: { Start: { children: ['Running'] }, Running: { children: ['End'] }, End: {} },
    });
    const spec = specOf(generateCrd(v2, names));
    expect(spec['x-kubernetes-validations']).toBeUndefined();
    expect(spec.properties!.desiredState!['x-kubernetes-validations']).toEqual([
      { rule: 'self != "Stopping"', message: 'node "Stopping" was removed from graph "database" and its migrations refuse to move its CRs: stop it by deleting the CR' },
    ]);
    const ref = spec.properties!.sidecar!.properties!.tokenSecretRef!.properties!;
    expect(ref.name!['x-kubernetes-validations']![0]!.message).toMatch(/^must be the name of a Secret/);
    expect(ref.key!['x-kubernetes-validations']![0]!.message).toMatch(/^must be a key of a Secret's data/);
    expect(spec.properties!.eventSink!['x-kubernetes-validations']![0]!.message).toBe('must be an http or https URL with a host: CloudEvents are sent nowhere else');
    expect(specOf(generateCrd(databaseGraph, names)).properties!.desiredState!['x-kubernetes-validations']).toBeUndefined();
  });
});
