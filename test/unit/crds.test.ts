import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { BUNDLED_GRAPHS } from '../../src/cli/bundled.ts';
import { bundledCrdPath, bundledCrdYaml } from '../../src/cli/crd.ts';

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
