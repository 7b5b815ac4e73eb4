import { afterEach, describe, expect, it, vi } from 'vitest';
import fc from 'fast-check';
import { WorkQueue } from '../../src/controller/workqueue.ts';
import { ExponentialFailureRateLimiter, exponentialBackoffMs } from '../../src/controller/rate-limiter.ts';

const keyArb = fc.constantFrom('a/1', 'a/2', 'b/1', 'b/2', 'c/3');
type Op = { kind: 'add'; key: string } | { kind: 'get' } | { kind: 'done'; pick: number };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  keyArb.map((key) => ({ kind: 'add' as const, key })),
  fc.constant({ kind: 'get' as const }),
  fc.nat().map((pick) => ({ kind: 'done' as const, pick })),
);

describe('WorkQueue properties', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('queues each key at most once, never hands out a key being processed, and processes every add', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 200 }), async (ops) => {
        const queue = new WorkQueue();
        const processing = new Set<string>();
        // A key added after its last hand-out owes one more processing.
        const owed = new Set<string>();
        const take = async (): Promise<void> => {
          const key = await queue.get();
          expect(key).toBeDefined();
          expect(processing.has(key as string)).toBe(false);
          processing.add(key as string);
          owed.delete(key as string);
        };
        for (const op of ops) {
          if (op.kind === 'add') {
            queue.add(op.key);
            owed.add(op.key);
          } else if (op.kind === 'get') {
            if (queue.length > 0) await take();
          } else if (processing.size > 0) {
            const key = [...processing][op.pick % processing.size] as string;
            processing.delete(key);
            queue.done(key);
          }
          const queuedOrOwed = new Set([...owed].filter((key) => !processing.has(key)));
          expect(queue.length).toBe(queuedOrOwed.size);
        }
        // Drain: finish what is in hand, then everything queued.
        const drained = queue.shutDownWithDrain();
        for (const key of [...processing]) {
          processing.delete(key);
          queue.done(key);
        }
        while (queue.length > 0) {
          await take();
          for (const key of [...processing]) {
            processing.delete(key);
            queue.done(key);
          }
        }
        await drained;
        expect(owed.size).toBe(0);
        expect(await queue.get()).toBeUndefined();
      }),
    );
  });

  it('backs off per key from base, doubling, never above the cap, and restarts after forget', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 10_000_000 }), fc.integer({ min: 1, max: 1200 }), (base, extra, failures) => {
        const max = base + extra;
        const limiter = new ExponentialFailureRateLimiter(base, max);
        let previous = 0;
        for (let i = 0; i < failures; i += 1) {
          const delay = limiter.when('k');
          expect(delay).toBe(exponentialBackoffMs(i, base, max));
          expect(delay).toBeGreaterThanOrEqual(i === 0 ? base : previous);
          expect(delay).toBeLessThanOrEqual(max);
          if (previous * 2 <= max && i > 0) expect(delay).toBe(previous * 2);
          previous = delay;
        }
        expect(limiter.numRequeues('k')).toBe(failures);
        expect(limiter.when('other')).toBe(base);
        limiter.forget('k');
        expect(limiter.when('k')).toBe(base);
      }),
    );
  });

  it('replaceAfter sets a key anew: it is handed out once, at the deadline set last (earlier ones dropped, later addAfters still winning when sooner), or never', async () => {
    const stepArb = fc.tuple(fc.constantFrom('addAfter' as const, 'replaceAfter' as const), keyArb, fc.option(fc.integer({ min: 1, max: 10_000 }), { nil: undefined }));
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 1, maxLength: 30 }), async (steps) => {
        vi.useFakeTimers();
        try {
          const start = Date.now();
          const queue = new WorkQueue();
          const due = new Map<string, number>();
          for (const [kind, key, delay] of steps) {
            if (kind === 'replaceAfter') {
              queue.replaceAfter(key, delay);
              if (delay === undefined) due.delete(key);
              else due.set(key, delay);
            } else if (delay !== undefined) {
              queue.addAfter(key, delay);
              due.set(key, Math.min(due.get(key) ?? Infinity, delay));
            }
          }
          const handedOut: [string, number][] = [];
          while (vi.getTimerCount() > 0) {
            vi.advanceTimersToNextTimer();
            while (queue.length > 0) {
              const key = (await queue.get()) as string;
              handedOut.push([key, Date.now()]);
              queue.done(key);
            }
          }
          expect(handedOut.map(([key]) => key).sort()).toEqual([...due.keys()].sort());
          for (const [key, at] of handedOut) expect(at - start, key).toBe(due.get(key));
        } finally {
          vi.useRealTimers();
        }
      }),
    );
  });

  it('hands out addAfter keys in deadline order, the earliest deadline per key winning', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(keyArb, fc.integer({ min: 1, max: 10_000 })), { minLength: 1, maxLength: 30 }), async (adds) => {
        vi.useFakeTimers();
        try {
          const queue = new WorkQueue();
          const earliest = new Map<string, number>();
          for (const [key, delay] of adds) {
            queue.addAfter(key, delay);
            earliest.set(key, Math.min(earliest.get(key) ?? Infinity, delay));
          }
          expect(queue.length).toBe(0);
          const order: string[] = [];
          for (;;) {
            const next = vi.getTimerCount() > 0;
            if (!next) break;
            vi.advanceTimersToNextTimer();
            while (queue.length > 0) {
              const key = (await queue.get()) as string;
              order.push(key);
              queue.done(key);
            }
          }
          expect(new Set(order)).toEqual(new Set(earliest.keys()));
          expect(order.length).toBe(earliest.size);
          const deadlines = order.map((key) => earliest.get(key) as number);
          expect(deadlines).toEqual([...deadlines].sort((x, y) => x - y));
        } finally {
          vi.useRealTimers();
        }
      }),
    );
  });
});
