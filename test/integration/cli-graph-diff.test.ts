import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import type { GraphDiff } from '../../src/graph/index.ts';
import { okt } from '../fixtures/okt-process.ts';
import { tempFiles } from '../fixtures/temp-files.ts';
import { RELAY_OBJECT_FATES } from '../fixtures/object-revisions.ts';

// `okt graph diff` as a person runs it: a module against a YAML file, human and --json, and its exit codes.

const { file } = tempFiles('okt-cli-graph-diff-');
const graphIndex = pathToFileURL(path.resolve('src/graph/index.ts')).href;

const oldModule = file(
  'old.ts',
  `import { defineGraph, loadGraph } from '${graphIndex}';
  export const other = defineGraph({ name: 'other', entry: 'S', nodes: { S: { children: ['E'] }, E: {} } });
  export const v1 = loadGraph(${JSON.stringify(databaseGraph.toData())});`,
);
const newYaml = file(
  'new.yaml',
  `name: database
entry: Start
migrations:
  removed:
    Servicing: Serving
nodes:
  Start: { children: [Serving] }
  Serving: { formerly: [Running], children: [Stopping, Draining] }
  Draining: { children: [End] }
  Stopping: { children: [End] }
  End: {}
`,
);

describe.concurrent('okt graph diff', { timeout: 60_000 }, () => {
  it('prints the changes one per line, and exits 0 (1 with --exit-code)', async () => {
    const args = ['graph', 'diff', oldModule, newYaml, '--export-old', 'v1'];
    const human = await okt(args);
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout).toMatch(/^graph "database": [0-9a-f]{16} -> [0-9a-f]{16}\n/);
    expect(human.stdout.split('\n').slice(1)).toEqual([
      '+ node Draining',
      '- node Servicing (CRs go to Serving)',
      '~ node Running -> Serving (renamed)',
      '~ Serving: children [Servicing, Stopping] -> [Stopping, Draining]; default Stopping -> Draining',
      '',
    ]);
    expect((await okt([...args, '--exit-code'])).code).toBe(1);
  });

  it('--json: the diff as data', async () => {
    const json = await okt(['graph', 'diff', oldModule, newYaml, '--export-old', 'v1', '--json']);
    expect(json.code).toBe(0);
    const diff = JSON.parse(json.stdout) as GraphDiff;
    expect(diff).toMatchObject({
      from: { graph: 'database', revision: databaseGraph.revision },
      same: false,
      nodes: { added: ['Draining'], removed: [{ node: 'Servicing', fate: { kind: 'moved', node: 'Serving' } }], renamed: [{ from: 'Running', to: 'Serving' }] },
      changed: [{ node: 'Serving', children: { before: ['Servicing', 'Stopping'], after: ['Stopping', 'Draining'], reordered: false } }],
    });
  });

  it('graphs that make objects: per declaration, what the CRs of OLD see of it once migrated', async () => {
    const revisions = pathToFileURL(path.resolve('test/fixtures/object-revisions.ts')).href;
    const relayOld = file('relay-old.ts', `export { relayRevision1 as default } from '${revisions}';`);
    const relayNew = file('relay-new.ts', `import { relayRevision2 } from '${revisions}';\nexport default relayRevision2();`);
    const human = await okt(['graph', 'diff', relayOld, relayNew]);
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout.split('\n').slice(human.stdout.split('\n').indexOf('objects of the CRs once migrated:'))).toEqual([...RELAY_OBJECT_FATES, '']);
    const diff = JSON.parse((await okt(['graph', 'diff', relayOld, relayNew, '--json'])).stdout) as GraphDiff;
    expect(diff.objectFates?.find((fate) => fate.id === 'work')).toEqual({
      id: 'work', declared: { id: 'work', apiVersion: 'v1', kind: 'ConfigMap', name: 'work', during: 'Backup' }, deletion: 'Delete', kept: [{ from: 'Servicing', to: 'Backup' }], made: [], pruned: [],
    });
  });

  it('the same graph: "no change" and exit 0 even with --exit-code; a module with two graphs needs --export-old', async () => {
    const same = await okt(['graph', 'diff', 'graphs/database.ts', oldModule, '--export-new', 'v1', '--exit-code']);
    expect(same).toEqual({ code: 0, stdout: `graph "database": no change (revision ${databaseGraph.revision})\n`, stderr: '' });
    const ambiguous = await okt(['graph', 'diff', oldModule, newYaml]);
    expect(ambiguous.code).toBe(2);
    expect(ambiguous.stderr).toContain('okt graph diff: ');
    expect(ambiguous.stderr).toContain('exports 2 graphs (other, v1)');
  });
});
