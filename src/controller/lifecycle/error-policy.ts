// The one place where a failure of the lifecycle reconcile is sorted: a transient one is retried with
// the work queue's backoff; a refusal by the sidecar is said on the CR (waiting, or stalled when a
// person must act) and looked at again after a fixed delay, never hidden in an exponential backoff.
import { SidecarProblemError, SidecarProtocolError } from '../../sidecar-client/index.ts';
import { REASONS, type StartRefusal } from './step.ts';

/** What to do about a failure: retry it (transient), or tell the CR and look again later. */
export type FailurePolicy = { kind: 'retry' } | { kind: 'refused'; refusal: StartRefusal };

/** How soon a start a busy sidecar refused is tried again. */
export const BUSY_RETRY_MS = 5_000;
/** How soon a start refused for its configuration is tried again (someone may fix the sidecar meanwhile). */
export const REFUSED_RETRY_MS = 60_000;

/** Sorts a failed start of `operation` on the sidecar at `sidecarUrl`. */
export function classifyStartFailure(error: unknown, operation: { id: string; node: string }, sidecarUrl: string): FailurePolicy {
  const about = `the sidecar at ${sidecarUrl} refused to start operation ${operation.id} (${operation.node})`;
  if (error instanceof SidecarProblemError) {
    const { problem } = error;
    const kind = problem.type.split(':').at(-1) ?? '';
    if (kind === 'busy') {
      const active = problem.activeOperations?.length ? ` (active: ${problem.activeOperations.join(', ')})` : '';
      const refusal = { operation: operation.id, reason: REASONS.sidecarBusy, message: `${about}: ${problem.detail}${active}; it is tried again every ${BUSY_RETRY_MS / 1000} s (raise maxActiveOperations in the sidecar config to run more at once)`, stall: false, retryAfterMs: BUSY_RETRY_MS };
      return { kind: 'refused', refusal };
    }
    // The sidecar changed between the look and the start (a restart): look again at once.
    if (kind === 'epoch-mismatch' || kind === 'shutting-down' || error.status === 429) return { kind: 'retry' };
    const fix = error.status === 401 ? 'check the token (spec.sidecar.tokenSecretRef or okt run --sidecar-token-file)' : 'fix the sidecar config (its graphs and nodes) or spec.sidecar';
    return { kind: 'refused', refusal: { operation: operation.id, reason: REASONS.sidecarRefused, message: `${about}: ${error.status} ${problem.detail}; ${fix}`, stall: true, retryAfterMs: REFUSED_RETRY_MS } };
  }
  if (error instanceof SidecarProtocolError) {
    return { kind: 'refused', refusal: { operation: operation.id, reason: REASONS.sidecarRefused, message: `${about}: its answer breaks the protocol (${error.message}); run an okt sidecar of the operator's version`, stall: true, retryAfterMs: REFUSED_RETRY_MS } };
  }
  return { kind: 'retry' };
}
