import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { WorkQueue } from '../../src/controller/workqueue.ts';
import { DEFAULT_BACKOFF, exponentialBackoffMs, ExponentialFailureRateLimiter } from '../../src/controller/rate-limiter.ts';

describe('WorkQueue', () => {
  it('re-queues a key added while it is processed only after done', async () => {
    const queue = new WorkQueue();
    queue.add('ns/a');
    const key = await queue.get();
    expect(key).toBe('ns/a');
    queue.add('ns/a');
    expect(queue.length).toBe(0);
    queue.done('ns/a');
    expect(queue.length).toBe(1);
    expect(await queue.get()).toBe('ns/a');
  });

  it('a deadline that comes while its key is processed, handed out after the deadline was set, queues no look after done', async () => {
    const queue = new WorkQueue();
    queue.add('ns/a');
    expect(await queue.get()).toBe('ns/a');
    // A reconcile ends asking for a safety look in 20 ms; another cause wakes the key before it.
    queue.replaceAfter('ns/a', 20);
    queue.done('ns/a');
    queue.add('ns/a');
    expect(await queue.get()).toBe('ns/a');
    await sleep(40);
    expect(queue.delayed).toBe(0);
    queue.done('ns/a');
    expect(queue.length).toBe(0);
  });

  it('a deadline set while its key is processed still queues a look after done when it comes during that processing', async () => {
    const queue = new WorkQueue();
    queue.add('ns/a');
    expect(await queue.get()).toBe('ns/a');
    queue.addAfter('ns/a', 10);
    await sleep(30);
    queue.done('ns/a');
    expect(queue.length).toBe(1);
  });

  it('resolves a waiting get when a key arrives', async () => {
    const queue = new WorkQueue();
    const pending = queue.get();
    queue.add('ns/b');
    expect(await pending).toBe('ns/b');
  });

  it('drains on shutdown: queued keys still handed out, new adds ignored, drain waits for done', async () => {
    const queue = new WorkQueue();
    queue.add('x');
    queue.add('y');
    const first = (await queue.get()) as string;
    let drained = false;
    const drain = queue.shutDownWithDrain().then(() => {
      drained = true;
    });
    queue.add('z');
    queue.addAfter('w', 10);
    expect(queue.delayed).toBe(0);
    const second = (await queue.get()) as string;
    expect([first, second].sort()).toEqual(['x', 'y']);
    expect(await queue.get()).toBeUndefined();
    queue.done(first);
    await Promise.resolve();
    expect(drained).toBe(false);
    queue.done(second);
    await drain;
    expect(drained).toBe(true);
  });

  it('drops queued keys on shutDownAndDrop, a key re-added while processed included, and waits for the one processed', async () => {
    const queue = new WorkQueue();
    queue.add('x');
    queue.add('y');
    queue.addAfter('z', 10);
    const first = (await queue.get()) as string;
    queue.add(first); // would be handed out again after done
    let idle = false;
    const dropped = queue.shutDownAndDrop().then(() => {
      idle = true;
    });
    expect(queue.length).toBe(0);
    expect(queue.delayed).toBe(0);
    expect(await queue.get()).toBeUndefined();
    await Promise.resolve();
    expect(idle).toBe(false);
    queue.done(first);
    await dropped;
    expect(idle).toBe(true);
    expect(queue.length).toBe(0);
    expect(await queue.get()).toBeUndefined();
  });

  it('releases idle getters on shutdown', async () => {
    const queue = new WorkQueue();
    const pending = queue.get();
    queue.shutDown();
    expect(await pending).toBeUndefined();
  });

  it('reports depth and latency to its observer', async () => {
    const depths: number[] = [];
    const latencies: number[] = [];
    const queue = new WorkQueue({ observer: { depth: (n) => depths.push(n), latency: (s) => latencies.push(s) } });
    queue.add('a');
    queue.add('b');
    await queue.get();
    expect(depths).toEqual([1, 2, 1]);
    expect(latencies).toHaveLength(1);
    expect(latencies[0]).toBeGreaterThanOrEqual(0);
  });
});

describe('exponential backoff', () => {
  it('uses controller-runtime defaults: 5 ms, 10 ms, 20 ms, ... capped at 1000 s', () => {
    expect(DEFAULT_BACKOFF).toEqual({ baseMs: 5, maxMs: 1_000_000 });
    const limiter = new ExponentialFailureRateLimiter();
    expect([0, 1, 2, 3].map(() => limiter.when('k'))).toEqual([5, 10, 20, 40]);
    expect(exponentialBackoffMs(17)).toBe(655_360);
    expect(exponentialBackoffMs(18)).toBe(1_000_000);
    expect(exponentialBackoffMs(5000)).toBe(1_000_000);
  });

  it('rejects a nonsensical configuration with the field named', () => {
    expect(() => new ExponentialFailureRateLimiter(0, 10)).toThrow(/baseMs/);
    expect(() => new ExponentialFailureRateLimiter(10, 5)).toThrow(/maxMs/);
  });
});
