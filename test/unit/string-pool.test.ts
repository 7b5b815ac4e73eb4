// Cached objects share their repeated strings (a heap effect, measured by the e2e bench's memory
// figures); here: sharing changes no value of any object, nested lists of strings included.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { StringPool } from '../../src/controller/string-pool.ts';

describe('StringPool', () => {
  test('a shared object reads exactly as it did, whatever JSON it is', () => {
    const pool = new StringPool();
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const copy = JSON.parse(JSON.stringify(value)) as unknown;
        expect(pool.share(copy)).toStrictEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 300 },
    );
  });

  test('a CR as the informer caches it keeps every field, its own values included', () => {
    const pool = new StringPool();
    const cr = (name: string) => ({
      kind: 'Database',
      metadata: { name, uid: `uid-${name}`, resourceVersion: '7', finalizers: ['okt.dev/lifecycle'] },
      status: { state: 'Running', path: ['Start', 'Running'], conditions: [{ type: 'Ready', status: 'True', reason: 'DesiredStateReached', lastTransitionTime: '2026-11-24T00:00:00Z' }] },
    });
    for (const name of ['a', 'b', 'c']) expect(pool.share(cr(name))).toStrictEqual(cr(name));
  });
});
