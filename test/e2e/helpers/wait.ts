import { waitFor as waitForOptions } from '../../../src/util/wait-for.ts';

/** Poll `check` until it returns a value other than undefined; fail naming `what` after `timeoutMs`. */
export function waitFor<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000, intervalMs = 100): Promise<T> {
  return waitForOptions(what, check, { timeoutMs, intervalMs });
}
