// What a sink's answer means for an event (the Knative delivery contract, made explicit) and how long to wait before the next try.

export type SendOutcome =
  | { kind: 'delivered' }
  /** Try again after a backoff: the sink is down, busy, or answered something that is no acceptance. */
  | { kind: 'retry'; reason: string; retryAfterMs?: number }
  /** The sink refuses this very event: retrying soon will not help; the CR's stream is blocked until it is taken. */
  | { kind: 'rejected'; reason: string };

/** 202 (accepted), 200 (accepted, maybe with a reply, which okt ignores) and 204 (accepted, no content). Other 2xx are errors (Knative). */
export const DELIVERED_STATUSES: ReadonlySet<number> = new Set([200, 202, 204]);

/** The sink says the event itself is bad (Knative: 400 is not retried); anything else that is no acceptance is retried. */
export const REJECTED_STATUSES: ReadonlySet<number> = new Set([400, 413, 415, 422]);

export interface Backoff {
  initialMs: number;
  maxMs: number;
}

export function classifyStatus(status: number, retryAfter: string | undefined, detail: string): SendOutcome {
  if (DELIVERED_STATUSES.has(status)) return { kind: 'delivered' };
  const reason = `HTTP ${status}${detail === '' ? '' : `: ${detail}`}`;
  if (REJECTED_STATUSES.has(status)) return { kind: 'rejected', reason };
  const retryAfterMs = parseRetryAfter(retryAfter);
  return retryAfterMs === undefined ? { kind: 'retry', reason } : { kind: 'retry', reason, retryAfterMs };
}

/** Retry-After as milliseconds from now: delta-seconds or an HTTP date. */
export function parseRetryAfter(value: string | undefined, now = Date.now()): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The wait before try number `attempt + 1` after `attempt` failures: exponential, capped at maxMs, with
 * "equal jitter" (between half and all of it) so that CRs failing together spread out but never spin.
 */
export function backoffDelay(attempt: number, backoff: Backoff, random: () => number = Math.random): number {
  const base = Math.min(backoff.maxMs, backoff.initialMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(base / 2 + (random() * base) / 2);
}
