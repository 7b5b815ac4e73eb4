import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { parseShard, shardOf } from '../../src/controller/lifecycle/shard.ts';

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
    for (const bad of ['3/3', '0/0', 'x/2', '1', '-1/2']) expect(() => parseShard(bad)).toThrow(/--shard: expected i\/N/);
  });
});
