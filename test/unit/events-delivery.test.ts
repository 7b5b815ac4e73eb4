import fc from 'fast-check';
import { expect, test } from 'vitest';
import { backoffDelay, classifyStatus } from '../../src/events/index.ts';
import { parseRetryAfter } from '../../src/events/delivery.ts';

test('200, 202 and 204 deliver; other 2xx are retried (Knative counts them as errors)', () => {
  for (const status of [200, 202, 204]) expect(classifyStatus(status, undefined, '')).toEqual({ kind: 'delivered' });
  for (const status of [201, 203, 206]) expect(classifyStatus(status, undefined, '').kind).toBe('retry');
});

test('400, 413, 415 and 422 refuse the event; 404, 408, 429, 5xx and redirects are retried', () => {
  for (const status of [400, 413, 415, 422]) expect(classifyStatus(status, undefined, 'bad').kind).toBe('rejected');
  for (const status of [301, 401, 403, 404, 408, 409, 429, 500, 502, 503, 504]) expect(classifyStatus(status, undefined, '').kind).toBe('retry');
  expect(classifyStatus(400, undefined, 'type: unknown')).toEqual({ kind: 'rejected', reason: 'HTTP 400: type: unknown' });
});

test('Retry-After (seconds or a date) sets the next wait', () => {
  expect(classifyStatus(503, '3', '')).toEqual({ kind: 'retry', reason: 'HTTP 503', retryAfterMs: 3000 });
  expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6_000);
  expect(parseRetryAfter('soon')).toBeUndefined();
  expect(parseRetryAfter(undefined)).toBeUndefined();
});

test('backoff: between half and all of initial x 2^(failures-1), capped at maxMs, never zero', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 60 }), fc.integer({ min: 1, max: 1000 }), fc.integer({ min: 1, max: 100 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
      (failures, initialMs, factor, random) => {
        const backoff = { initialMs, maxMs: initialMs * factor };
        const full = Math.min(backoff.maxMs, initialMs * 2 ** (failures - 1));
        const delay = backoffDelay(failures, backoff, () => random);
        expect(delay).toBeGreaterThanOrEqual(Math.floor(full / 2));
        expect(delay).toBeLessThanOrEqual(full);
        expect(delay).toBeGreaterThan(0);
      }),
  );
});

test('backoff grows with failures until the cap', () => {
  const backoff = { initialMs: 100, maxMs: 1000 };
  const at = (failures: number) => backoffDelay(failures, backoff, () => 1);
  expect([1, 2, 3, 4, 5, 6].map(at)).toEqual([100, 200, 400, 800, 1000, 1000]);
});
