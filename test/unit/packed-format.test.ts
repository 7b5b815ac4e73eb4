import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { expandStatus } from '../../src/controller/lifecycle/status/compact-format.ts';
import { encodeStatus, storedEncodingOf } from '../../src/controller/lifecycle/status/encoding.ts';
import { isPackedStatus, packStatus, unpackStatus } from '../../src/controller/lifecycle/status/packed-format.ts';
import { generateCrd } from '../../src/kube/crd.ts';
import { PACKED_FIELD, STATUS_FORMAT_ANNOTATION, UNPACKED_FIELDS } from '../../src/kube/status-format.ts';
import { lifecycleStatusSchema, type LifecycleStatus } from '../../src/kube/lifecycle-resource.ts';
import { UNKNOWN_FIELDS_KEPT } from '../../src/kube/unknown-status-fields.ts';
import { walkedDatabase } from '../fixtures/walked-database.ts';
import * as okt from '../../src/index.ts';

/** As the API server keeps it: JSON. */
const asStored = (value: unknown) => JSON.parse(JSON.stringify(value)) as Record<string, unknown>;
/** The fields in a packed status's string, read as docs/operator.md says: `"` and `'` swapped, JSON. */
const inString = (stored: Record<string, unknown>) => JSON.parse((stored[PACKED_FIELD] as string).replace(/["']/g, (q) => (q === '"' ? "'" : '"'))) as Record<string, unknown>;

describe('the packed status format', () => {
  test('a walked CR at rest: what kubectl reads stays fields of their own, the rest is one string with no escaped quote, and the reader rebuilds the lean status exactly', () => {
    const compact = walkedDatabase('compact');
    const packed = walkedDatabase('packed');
    const stored = JSON.parse(packed.stored!) as Record<string, unknown>;
    expect(isPackedStatus(stored)).toBe(true);
    expect(storedEncodingOf(stored)).toBe('packed');
    expect(Object.keys(stored).sort()).toEqual([...UNPACKED_FIELDS, PACKED_FIELD].sort());
    expect(packed.stored).not.toContain('\\"');
    expect(stored[PACKED_FIELD]).toContain(`'lastTransition':{'events':['Running']`);
    expect(unpackStatus(stored)).toEqual(JSON.parse(compact.stored!));
    expect(expandStatus(stored, 'uid-1')).toEqual(compact.status);
    // As a reader of the public API does it (docs/operator.md, "Status formats").
    expect(okt.isPackedStatus(stored)).toBe(true);
    expect(lifecycleStatusSchema.parse(okt.expandStatus(stored, 'uid-1'))).toEqual(compact.status);
    // The CR's JSON grows by the field's name only: each quote of the string is one byte.
    console.log(`status at rest: compact ${compact.stored!.length} B, packed ${packed.stored!.length} B`);
    expect(packed.stored!.length).toBeLessThanOrEqual(compact.stored!.length + `,"${PACKED_FIELD}":"{}"`.length);
  });

  test('a CR at rest in packed is not written again; one stored compact is rewritten packed once, and the other way round', () => {
    const sim = walkedDatabase('packed');
    const writes = sim.writes;
    sim.reconcile();
    expect(sim.writes).toBe(writes);
    sim.statusFormat = 'compact';
    sim.reconcile();
    expect(sim.writes).toBe(writes + 1);
    expect(storedEncodingOf(JSON.parse(sim.stored!))).toBe('compact');
    sim.reconcile();
    expect(sim.writes).toBe(writes + 1);
    sim.statusFormat = 'packed';
    sim.reconcile();
    expect(sim.writes).toBe(writes + 2);
    expect(storedEncodingOf(JSON.parse(sim.stored!))).toBe('packed');
  });

  test('the CRs a released okt wrote packed read back as those it wrote compact (test/fixtures/released-status), lastTransition.from kept in the string', () => {
    const fixture = (format: string) => JSON.parse(readFileSync(new URL(`../fixtures/released-status/2026-11-28-1594814-${format}.json`, import.meta.url), 'utf8')) as { resources: Record<string, { status: Record<string, unknown> }> };
    const [packed, compact] = [fixture('packed'), fixture('compact')];
    for (const [name, { status }] of Object.entries(packed.resources)) {
      expect(inString(status).lastTransition, name).toHaveProperty('from');
      expect(expandStatus(status, 'uid-1'), name).toEqual(expandStatus(compact.resources[name]!.status, 'uid-1'));
    }
  });

  test('quotes of either kind in what it holds read back exactly', () => {
    const status = { state: 'Running', observedGeneration: 2, conditions: [], operation: { phase: 'Failed', message: `pg_ctl said "no" and 'never'; a \\ and a \u00e9` } };
    const stored = packStatus(status);
    // JSON's escape of `"` becomes `\'`, and a `'` a `"`: both swapped back alike.
    expect(stored[PACKED_FIELD]).toBe(`{'operation':{'phase':'Failed','message':'pg_ctl said \\'no\\' and "never"; a \\\\ and a \u00e9'}}`);
    expect(unpackStatus(JSON.parse(JSON.stringify(stored)))).toEqual(status);
  });

  test("another writer's fields: one beside the string is kept and wins; a status with a field of the string's name stays unpacked; a string edited into no object is left as it is", () => {
    const stored = { ...packStatus({ state: 'Running', conditions: [], sequence: 3, tool: 'a' }), sequence: 4, tool: 'b' };
    expect(unpackStatus(stored)).toEqual({ state: 'Running', conditions: [], sequence: 4, tool: 'b' });
    const theirs = { state: 'Running', conditions: [], [PACKED_FIELD]: 'theirs' };
    expect(packStatus(theirs)).toBe(theirs);
    const edited = { state: 'Running', conditions: [], [PACKED_FIELD]: "{'sequence':" };
    expect(unpackStatus(edited)).toBe(edited);
    expect(unpackStatus({ state: 'Running', [PACKED_FIELD]: "['a']" })).toEqual({ state: 'Running', [PACKED_FIELD]: "['a']" });
  });

  test("another tool's status field stays a field of its own beside the string (where that tool reads it, as under compact), and the status reads back whole", () => {
    const backup = { at: '2026-01-01T00:00:00.000Z', note: `it's "done"` };
    const status = { ...walkedDatabase('compact').status!, backup } as LifecycleStatus;
    const stored = asStored(encodeStatus(status, 'uid-1', 'packed'));
    expect(stored.backup).toEqual(backup);
    expect(Object.keys(stored).sort()).toEqual([...UNPACKED_FIELDS, 'backup', PACKED_FIELD].sort());
    expect(inString(stored)).not.toHaveProperty('backup');
    expect(expandStatus(stored, 'uid-1')).toEqual(asStored(status));
  });

  test("any status reads back as it was packed; the string holds only okt's own fields but what kubectl reads", () => {
    // Any text, lone surrogates included: the quotes are swapped over its UTF-8 bytes.
    const key = fc.oneof(fc.constantFrom(...UNKNOWN_FIELDS_KEPT.known), fc.string({ unit: 'binary' })).filter((k) => k !== PACKED_FIELD);
    fc.assert(
      fc.property(fc.dictionary(key, fc.jsonValue({ stringUnit: 'binary' })), (status) => {
        const stored = asStored(packStatus(status));
        expect(unpackStatus(stored)).toEqual(asStored(status));
        for (const field of Object.keys(inString(stored))) {
          expect(UNKNOWN_FIELDS_KEPT.known).toContain(field);
          expect(UNPACKED_FIELDS).not.toContain(field);
        }
      }),
    );
  });

  test('a status compact cannot say exactly is packed lean, and reads back as it is', () => {
    const sim = walkedDatabase('compact');
    // A path summary that does not read back as the path: compact writes such a status lean.
    const lean = { ...sim.status!, pathSummary: 'not the path' };
    const stored = encodeStatus(lean, 'uid-1', 'packed');
    expect(isPackedStatus(stored)).toBe(true);
    expect(expandStatus(JSON.parse(JSON.stringify(stored)), 'uid-1')).toEqual(lean);
  });

  test("a packed version's CRD: its annotation, the string's field, and compact's optional fields not required", () => {
    const crd = generateCrd(databaseGraph, { group: 'okt.dev', version: 'v1', plural: 'databases', kind: 'Database', statusFormat: 'packed' }) as any;
    expect(crd.metadata.annotations[STATUS_FORMAT_ANNOTATION]).toBe('packed');
    const status = crd.spec.versions[0].schema.openAPIV3Schema.properties.status;
    expect(status.properties[PACKED_FIELD]).toMatchObject({ type: 'string' });
    expect(status.properties.lastTransition.required).not.toContain('to');
    expect(status.properties.conditions.items.required).not.toContain('lastTransitionTime');
  });
});
