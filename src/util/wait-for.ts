import { setTimeout as sleep } from 'node:timers/promises';

export interface WaitForOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Errors that end the wait at once instead of being retried. */
  isFatal?: (error: unknown) => boolean;
}

/**
 * Polls `check` until it returns a value other than undefined. An error is retried (and named in the
 * time-out message) unless `isFatal` says so; after `timeoutMs` it fails naming `what`.
 */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined>, options: WaitForOptions = {}): Promise<T> {
  const { timeoutMs = 30_000, intervalMs = 100, isFatal = () => false } = options;
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (error) {
      if (isFatal(error)) throw error;
      lastError = error;
    }
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await sleep(intervalMs);
  }
}
