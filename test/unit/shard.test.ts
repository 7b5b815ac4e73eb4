import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { parseShard, SHARD_KEY_LABEL, shardKeyOf, shardOf, shardSelector } from '../../src/controller/lifecycle/shard.ts';

describe('shards', () => {
  test('every uid belongs to exactly one shard in range, the same one every time', () => {
    fc.assert(
      fc.property(fc.uuid(), fc.integer({ min: 1, max: 64 }), (uid, count) => {
        const shard = shardOf(uid, count);
        expect(shard).toBeGreaterThanOrEqual(0);
        expect(shard).toBeLessThan(count);
        expect(shardOf(uid, count)).toBe(shard);
      }),
    );
  });

  test('uids spread over the shards', () => {
    const counts = [0, 0, 0, 0];
    fc.sample(fc.uuid(), { numRuns: 4000, seed: 7 }).forEach((uid) => counts[shardOf(uid, 4)]!++);
    for (const n of counts) expect(n).toBeGreaterThan(800);
  });

  test('--shard i/N: parsed, or an error naming the flag', () => {
    expect(parseShard('1/3')).toEqual({ index: 1, count: 3 });
    expect(parseShard('255/256')).toEqual({ index: 255, count: 256 });
    for (const bad of ['3/3', '0/0', 'x/2', '1', '-1/2', '0/257']) expect(() => parseShard(bad)).toThrow(/--shard: expected i\/N with 0 <= i < N <= 256/);
  });

  test("a shard's label selector names exactly the keys of its CRs; the shards' selectors split the 256 keys", () => {
    fc.assert(
      fc.property(fc.uuid(), fc.integer({ min: 1, max: 256 }), (uid, count) => {
        const key = shardKeyOf(uid);
        expect(key).toBeGreaterThanOrEqual(0);
        expect(key).toBeLessThan(256);
        expect(shardOf(uid, count)).toBe(key % count);
        const own = shardSelector({ index: shardOf(uid, count), count });
        expect(own.startsWith(`${SHARD_KEY_LABEL} in (`)).toBe(true);
        expect(own.slice(own.indexOf('(') + 1, -1).split(',').map(Number)).toContain(key);
      }),
    );
    const keys = [0, 1, 2].flatMap((index) => { const s = shardSelector({ index, count: 3 }); return s.slice(s.indexOf('(') + 1, -1).split(',').map(Number); });
    expect(keys.sort((a, b) => a - b)).toEqual(Array.from({ length: 256 }, (_, k) => k));
  });
});
