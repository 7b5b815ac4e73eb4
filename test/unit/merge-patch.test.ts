import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { mergePatchFrom } from '../../src/kube/merge-patch.ts';
import { applyMergePatch as apply } from '../fixtures/json-merge-patch.ts';

describe('mergePatchFrom', () => {
  test('removed fields become null, nested objects are patched field by field, arrays whole', () => {
    const before = { state: 'Running', operation: { id: 'a', message: 'x' }, path: ['Start', 'Running'], outbox: [{ sequence: 1 }] };
    const after = { state: 'Servicing', operation: { id: 'b' }, path: ['Start', 'Running', 'Servicing'] };
    expect(mergePatchFrom(before, after)).toEqual({
      state: 'Servicing',
      operation: { id: 'b', message: null },
      path: ['Start', 'Running', 'Servicing'],
      outbox: null,
    });
  });

  test('no change: undefined', () => {
    expect(mergePatchFrom({ a: [1, { b: 2 }] }, { a: [1, { b: 2 }] })).toBeUndefined();
  });

  test('applying the patch to before gives after (objects without null values)', () => {
    const value = fc.letrec((tie) => ({
      json: fc.oneof({ depthSize: 'small' }, fc.integer(), fc.string(), fc.boolean(), fc.array(tie('json'), { maxLength: 3 }), fc.dictionary(fc.constantFrom('a', 'b', 'c'), tie('json'), { maxKeys: 3 })),
    })).json;
    const object = fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd'), value, { maxKeys: 4 });
    fc.assert(
      fc.property(object, object, (before, after) => {
        const patch = mergePatchFrom(before, after);
        expect(patch === undefined ? before : apply(before, patch)).toEqual(after);
      }),
    );
  });
});

test('the order of keys is no change (the API server and zod may order them differently)', () => {
  expect(mergePatchFrom({ c: [{ a: 1, b: 2 }] }, { c: [{ b: 2, a: 1 }] })).toBeUndefined();
});
