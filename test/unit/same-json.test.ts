import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { sameJson } from '../../src/util/same-json.ts';

/** Values as the outbox holds them, and the odd ones JSON writes otherwise (undefined, NaN, -0, a Date, a function). */
const odd = fc.constantFrom<unknown>(undefined, null, Number.NaN, Number.POSITIVE_INFINITY, -0, 0, new Date(0), () => 1, Symbol('s'));
const leaf = fc.oneof(fc.string({ maxLength: 3 }), fc.integer({ min: -3, max: 3 }), fc.double(), fc.boolean(), odd);
const value = fc.letrec((tie) => ({
  any: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('object')),
  array: fc.array(tie('any'), { maxLength: 3 }),
  object: fc.dictionary(fc.constantFrom('a', 'b', 'c'), tie('any'), { maxKeys: 3 }),
})).any;

describe('sameJson', () => {
  it('says what comparing the JSON texts says', () => {
    fc.assert(fc.property(value, value, (a, b) => {
      expect(sameJson(a, b)).toBe(JSON.stringify(a) === JSON.stringify(b));
      // Each value against a copy of itself and against one with its keys reordered (a JSON text tells them apart).
      expect(sameJson(a, structuredCopy(a))).toBe(JSON.stringify(a) === JSON.stringify(structuredCopy(a)));
    }), { numRuns: 2000 });
  });

  it('tells key order, undefined members and array holes as JSON does', () => {
    expect(sameJson({ a: 1, b: 2 }, { b: 2, a: 1 })).toBe(false);
    expect(sameJson({ a: 1, b: undefined }, { a: 1 })).toBe(true);
    expect(sameJson([undefined], [null])).toBe(true);
    expect(sameJson({ d: new Date(0) }, { d: '1970-01-01T00:00:00.000Z' })).toBe(true);
    expect(sameJson(Number.NaN, null)).toBe(true);
    expect(sameJson([1, 2], [1, 2, 3])).toBe(false);
  });
});

function structuredCopy(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(structuredCopy);
  if (typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).reverse().map(([k, v]) => [k, structuredCopy(v)]));
  }
  return value;
}
