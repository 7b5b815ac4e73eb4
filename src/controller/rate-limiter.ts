/** Decides how long a key waits before its next retry, from its history of failures. */
export interface RateLimiter {
  /** The delay before the next retry of `key`, counting this call as one more failure. */
  when(key: string): number;
  /** Clears the key's failures (after a success). */
  forget(key: string): void;
  numRequeues(key: string): number;
}

/** controller-runtime's defaults for a per-key exponential backoff: 5 ms doubling up to 1000 s. */
export const DEFAULT_BACKOFF = { baseMs: 5, maxMs: 1_000_000 } as const;

/** The delay after `failures` earlier failures: baseMs * 2^failures, capped at maxMs. */
export function exponentialBackoffMs(failures: number, baseMs: number = DEFAULT_BACKOFF.baseMs, maxMs: number = DEFAULT_BACKOFF.maxMs): number {
  // 2^failures overflows to Infinity past ~1023: the cap keeps it finite.
  return Math.min(baseMs * 2 ** failures, maxMs);
}

/** client-go's ItemExponentialFailureRateLimiter. */
export class ExponentialFailureRateLimiter implements RateLimiter {
  readonly #failures = new Map<string, number>();
  readonly #baseMs: number;
  readonly #maxMs: number;

  constructor(baseMs: number = DEFAULT_BACKOFF.baseMs, maxMs: number = DEFAULT_BACKOFF.maxMs) {
    if (!(baseMs > 0)) throw new Error(`rate limiter: baseMs must be positive, got ${baseMs}`);
    if (!(maxMs >= baseMs)) throw new Error(`rate limiter: maxMs (${maxMs}) must be at least baseMs (${baseMs})`);
    this.#baseMs = baseMs;
    this.#maxMs = maxMs;
  }

  when(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    return exponentialBackoffMs(failures, this.#baseMs, this.#maxMs);
  }

  forget(key: string): void {
    this.#failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.#failures.get(key) ?? 0;
  }
}
