// The one place where a failure of the lifecycle reconcile is sorted: a transient one is retried with
// the work queue's backoff; a refusal by the sidecar is said on the CR (waiting, or stalled when a
// person must act) and looked at again after a fixed delay, never hidden in an exponential backoff.
import { isKubeApiError } from '../../kube/transport/index.ts';
import { SidecarProblemError, SidecarProtocolError } from '../../sidecar-client/index.ts';
import { REASONS, type SidecarRefusal, type StartRefusal } from './step.ts';

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

/** A Secret named by spec.sidecar.tokenSecretRef exists but holds no usable token. */
export class SidecarSecretError extends Error {
  override name = 'SidecarSecretError';
}

/** How soon a CR whose Secret cannot be read looks again (Secrets are not watched: someone may create it meanwhile). */
export const SECRET_RETRY_MS = 30_000;

/**
 * Sorts a failed read of a CR's token Secret: missing, without the key, or forbidden is said on the CR
 * (a person must act); anything else (the network, a 5xx) is retried.
 */
export function classifySecretFailure(error: unknown, ref: { namespace: string; name: string; key: string }): { kind: 'retry' } | { kind: 'refused'; refusal: SidecarRefusal } {
  const secret = `Secret ${ref.namespace}/${ref.name}`;
  const own = `the operator reads spec.sidecar.tokenSecretRef only in the CR's own namespace (${ref.namespace})`;
  let problem: string | undefined;
  if (error instanceof SidecarSecretError) problem = `${error.message}; put the sidecar's token under that key`;
  else if (isKubeApiError(error, 404)) problem = `${secret} does not exist; create it (key "${ref.key}") in this namespace: ${own}`;
  else if (isKubeApiError(error, 403)) problem = `the operator may not read ${secret} (RBAC: okt manifests --read-secrets grants get on Secrets); ${own}`;
  if (problem === undefined) return { kind: 'retry' };
  return { kind: 'refused', refusal: { reason: REASONS.sidecarSecretUnreadable, message: `spec.sidecar.tokenSecretRef: ${problem}; looked at again every ${SECRET_RETRY_MS / 1000} s`, retryAfterMs: SECRET_RETRY_MS } };
}

/**
 * A CR names a sidecar the operator-wide token may not go to, and no Secret of its own: nothing is
 * sent there. No retry: the allow-list is fixed for the operator's life, and a spec edit is seen at once.
 */
export function notAllowedRefusal(url: string, problem: string | undefined, patterns: readonly string[]): SidecarRefusal {
  if (problem !== undefined) return { reason: REASONS.sidecarNotAllowed, message: `spec.sidecar.url: ${problem}; nothing is sent there` };
  const allowed = patterns.length > 0 ? patterns.join(', ') : 'none';
  return {
    reason: REASONS.sidecarNotAllowed,
    message: `spec.sidecar.url "${url}" is not the operator's sidecar and matches no --sidecar-url-allow pattern (allowed: ${allowed}), so the operator's token is not sent there, and nothing else is: set spec.sidecar.tokenSecretRef to a Secret in this namespace holding that sidecar's token, or ask the operator's admin to allow the URL`,
  };
}
