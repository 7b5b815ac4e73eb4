import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { mergePatchFrom } from '../../src/kube/merge-patch.ts';

/** RFC 7386 apply, the way the API server does it. */
function apply(target: unknown, patch: unknown): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = apply(out[key], value);
  }
  return out;
}

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
