// The one place where a failure of the lifecycle reconcile is sorted, and every answer a sidecar gives
// but a plain success (SIDECAR_ANSWERS): a transient one is retried with the work queue's backoff; a
// refusal by the sidecar is said on the CR (waiting, or stalled when a person must act) and looked at
// again after a fixed delay, never hidden in an exponential backoff; an operation a sidecar does not
// know is started, run again, or recorded as lost.
import { SIDECAR_TOKEN_SECRET_TYPE } from '../../kube/lifecycle-resource.ts';
import { isKubeApiError } from '../../kube/transport/index.ts';
import { SidecarProblemError, SidecarProtocolError } from '../../sidecar-client/index.ts';
import { REASONS, type SidecarRefusal, type StartRefusal } from './step.ts';

/** What to do about a failure: retry it (transient), or tell the CR and look again later. */
export type FailurePolicy = { kind: 'retry' } | { kind: 'refused'; refusal: StartRefusal };

/** How soon a start a busy sidecar refused is tried again. */
export const BUSY_RETRY_MS = 5_000;
/** How soon a start refused for its configuration is tried again (someone may fix the sidecar meanwhile). */
export const REFUSED_RETRY_MS = 60_000;

/** How soon a CR looks again after its sidecar refused a token read from a Secret or the operator's token file (read again: it may have been rotated). */
export const TOKEN_RETRY_MS = 5_000;

/**
 * The calls the reconciler makes of a sidecar, each answered in its own way. `read`: the state of the
 * operation the status holds; `rerun`: that operation started again on a sidecar that forgot it;
 * `look`: any other look (an observation), and whatever `read` and `rerun` do not settle themselves;
 * `start`: a committed operation's start.
 */
export type SidecarCall = 'read' | 'rerun' | 'look' | 'start';

/**
 * What a sidecar's failed answer is, from its problem type (okt's sidecar gives each type one status)
 * or, for other servers on the way, its status; `broken`: no valid answer; `unreachable`: no answer.
 */
export type SidecarAnswer = 'not-found' | 'not-idempotent' | 'busy' | 'passing' | 'unauthorized' | 'problem' | 'broken' | 'unreachable';

/**
 * What the operator makes of it. `unknown`: the sidecar the operation was committed with never saw it,
 * so it never started (it is started now, same id); `rerun`: a sidecar of another epoch forgot it (the
 * one answering runs it again if its action is idempotent); `lost`: it is not idempotent, so not run
 * again; `busy`: the start waits for a free slot; `passes`: the sidecar is unavailable for a moment (a
 * look says so, a start is retried with the work queue's backoff); `refused`: a person must fix the
 * sidecar or the CR (stalled).
 */
export type SidecarVerdict = 'unknown' | 'rerun' | 'lost' | 'busy' | 'passes' | 'refused';

const ALL_CALLS: readonly SidecarCall[] = ['read', 'rerun', 'look', 'start'];

interface SidecarAnswerRow {
  readonly answer: SidecarAnswer;
  readonly calls: readonly SidecarCall[];
  /** Only for `read`'s not-found: whether the answering sidecar is the one the operation was committed with. */
  readonly committedEpoch?: boolean;
  readonly verdict: SidecarVerdict;
}

/**
 * Every failed answer of a sidecar, by call: exactly one row fits each (answer, call, epoch), so the
 * rows can be read in any order (a unit test checks that they cover every case once).
 */
export const SIDECAR_ANSWERS: readonly SidecarAnswerRow[] = [
  { answer: 'not-found', calls: ['read'], committedEpoch: true, verdict: 'unknown' },
  { answer: 'not-found', calls: ['read'], committedEpoch: false, verdict: 'rerun' },
  { answer: 'not-found', calls: ['rerun', 'look', 'start'], verdict: 'refused' },
  { answer: 'not-idempotent', calls: ['rerun'], verdict: 'lost' },
  { answer: 'not-idempotent', calls: ['read', 'look', 'start'], verdict: 'refused' },
  { answer: 'busy', calls: ['start'], verdict: 'busy' },
  { answer: 'busy', calls: ['read', 'rerun', 'look'], verdict: 'refused' },
  // The sidecar changed between two calls (a restart), or is going away, or asks to slow down: look again soon.
  { answer: 'passing', calls: ALL_CALLS, verdict: 'passes' },
  { answer: 'unreachable', calls: ALL_CALLS, verdict: 'passes' },
  { answer: 'unauthorized', calls: ALL_CALLS, verdict: 'refused' },
  { answer: 'problem', calls: ALL_CALLS, verdict: 'refused' },
  { answer: 'broken', calls: ALL_CALLS, verdict: 'refused' },
];

/** The answers of okt's sidecar by problem type (the last part of its URI), then of any server by status. */
const PROBLEM_TYPE_ANSWERS: Readonly<Record<string, SidecarAnswer>> = {
  'not-found': 'not-found',
  'not-idempotent': 'not-idempotent',
  busy: 'busy',
  'epoch-mismatch': 'passing',
  'shutting-down': 'passing',
};
const PROBLEM_STATUS_ANSWERS: Readonly<Record<number, SidecarAnswer>> = { 404: 'not-found', 401: 'unauthorized', 429: 'passing' };

/** What a thrown error says the sidecar answered. */
export function sidecarAnswerOf(error: unknown): SidecarAnswer {
  if (error instanceof SidecarProtocolError) return 'broken';
  if (!(error instanceof SidecarProblemError)) return 'unreachable';
  const type = error.problem.type.split(':').at(-1) ?? '';
  return PROBLEM_TYPE_ANSWERS[type] ?? PROBLEM_STATUS_ANSWERS[error.status] ?? 'problem';
}

/** The verdict on a failed `call` (for `read`, `committedEpoch`: the epoch the operation was committed with). */
export function sidecarVerdict(call: SidecarCall, error: unknown, committedEpoch?: string): SidecarVerdict {
  const answer = sidecarAnswerOf(error);
  const sameEpoch = error instanceof SidecarProblemError && (error.problem.epoch ?? '') === committedEpoch;
  const row = SIDECAR_ANSWERS.find((r) => r.answer === answer && r.calls.includes(call) && (r.committedEpoch === undefined || r.committedEpoch === sameEpoch));
  return row?.verdict ?? 'refused';
}

/** Sorts a failed start of `operation` on the sidecar at `sidecarUrl`. */
export function classifyStartFailure(error: unknown, operation: { id: string; node: string }, sidecarUrl: string, tokenRereadable = false): FailurePolicy {
  const about = `the sidecar at ${sidecarUrl} refused to start operation ${operation.id} (${operation.node})`;
  switch (sidecarVerdict('start', error)) {
    case 'busy': {
      const { problem } = error as SidecarProblemError;
      const active = problem.activeOperations?.length ? ` (active: ${problem.activeOperations.join(', ')})` : '';
      const message = `${about}: ${problem.detail}${active}; it is tried again every ${BUSY_RETRY_MS / 1000} s (raise maxActiveOperations in the sidecar config to run more at once)`;
      return { kind: 'refused', refusal: { operation: operation.id, reason: REASONS.sidecarBusy, message, stall: false, retryAfterMs: BUSY_RETRY_MS } };
    }
    case 'refused': {
      const refusal = refusalOf(error, about, tokenRereadable);
      return { kind: 'refused', refusal: { operation: operation.id, ...refusal, stall: true, retryAfterMs: refusal.retryAfterMs ?? REFUSED_RETRY_MS } };
    }
    default:
      return { kind: 'retry' };
  }
}

/**
 * Sorts a failed look at the sidecar (an operation, an observation) that the look did not settle: a
 * refusal (a 4xx, an answer that breaks the protocol) is said on the CR, stalled, naming the cause;
 * anything else is the sidecar being unavailable, which passes by itself.
 */
export function classifyAnswerFailure(error: unknown, sidecarUrl: string, tokenRereadable: boolean): SidecarRefusal | undefined {
  if (sidecarVerdict('look', error) !== 'refused') return undefined;
  return refusalOf(error, `the sidecar at ${sidecarUrl} refused the operator's request`, tokenRereadable);
}

/** What a person must fix about a refused call. */
function refusalOf(error: unknown, about: string, tokenRereadable: boolean): SidecarRefusal {
  if (error instanceof SidecarProblemError) {
    const { problem } = error;
    const fix = error.status === 401 ? 'check the token (spec.sidecar.tokenSecretRef or okt run --sidecar-token-file)' : 'fix the sidecar config (its graphs and nodes) or spec.sidecar';
    const retryAfterMs = error.status === 401 && tokenRereadable ? TOKEN_RETRY_MS : REFUSED_RETRY_MS;
    return { reason: REASONS.sidecarRefused, message: `${about}: ${error.status} ${problem.detail}; ${fix}`, retryAfterMs };
  }
  return { reason: REASONS.sidecarRefused, message: `${about}: its answer breaks the protocol (${(error as Error).message}); run an okt sidecar of the operator's version`, retryAfterMs: REFUSED_RETRY_MS };
}

/** A Secret named by spec.sidecar.tokenSecretRef exists but holds no usable token. */
export class SidecarSecretError extends Error {
  override name = 'SidecarSecretError';
}

/**
 * A Secret named by spec.sidecar.tokenSecretRef is not of type SIDECAR_TOKEN_SECRET_TYPE: it was not
 * made to be a sidecar token, so none of it is sent (its data is not even looked at).
 */
export class SidecarSecretTypeError extends Error {
  override name = 'SidecarSecretTypeError';
  constructor(namespace: string, name: string, type: string) {
    super(`Secret ${namespace}/${name} is of type "${type}", not "${SIDECAR_TOKEN_SECRET_TYPE}"`);
  }
}

/** How soon a CR whose Secret cannot be read looks again (Secrets are not watched: someone may create it meanwhile). */
export const SECRET_RETRY_MS = 30_000;

/**
 * Sorts a failed read of a CR's token Secret: missing, not of the sidecar-token type, without the key,
 * or forbidden is said on the CR (a person must act); anything else (the network, a 5xx) is retried.
 */
export function classifySecretFailure(error: unknown, ref: { namespace: string; name: string; key: string }): { kind: 'retry' } | { kind: 'refused'; refusal: SidecarRefusal } {
  const secret = `Secret ${ref.namespace}/${ref.name}`;
  const own = `the operator reads spec.sidecar.tokenSecretRef only in the CR's own namespace (${ref.namespace})`;
  const again = `looked at again every ${SECRET_RETRY_MS / 1000} s`;
  const create = (name: string) => `kubectl -n ${ref.namespace} create secret generic ${name} --type=${SIDECAR_TOKEN_SECRET_TYPE} --from-literal=${ref.key}=TOKEN`;
  if (error instanceof SidecarSecretTypeError) {
    // A type cannot be changed: the fix is a new Secret made for the purpose (or another ref).
    const message = `spec.sidecar.tokenSecretRef: ${error.message}, so nothing of it is sent: only a Secret made to be a sidecar token is; make a Secret of type ${SIDECAR_TOKEN_SECRET_TYPE} (${create('NAME')}; a Secret's type cannot be changed) and name it here; ${again}`;
    return { kind: 'refused', refusal: { reason: REASONS.sidecarSecretWrongType, message, retryAfterMs: SECRET_RETRY_MS } };
  }
  let problem: string | undefined;
  if (error instanceof SidecarSecretError) problem = `${error.message}; put the sidecar's token under that key`;
  else if (isKubeApiError(error, 404)) problem = `${secret} does not exist; create it in this namespace (${create(ref.name)}): ${own}`;
  else if (isKubeApiError(error, 403)) problem = `the operator may not read ${secret} (RBAC: okt manifests --read-secrets grants get on Secrets); ${own}`;
  if (problem === undefined) return { kind: 'retry' };
  return { kind: 'refused', refusal: { reason: REASONS.sidecarSecretUnreadable, message: `spec.sidecar.tokenSecretRef: ${problem}; ${again}`, retryAfterMs: SECRET_RETRY_MS } };
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

/**
 * A CR's sidecar-token Secret holds the operator-wide token and names a URL that token may not go to:
 * nothing is sent there (the Secret is looked at again, as Secrets are not watched).
 */
export function operatorTokenInSecretRefusal(url: string, secret: string): SidecarRefusal {
  return {
    reason: REASONS.sidecarNotAllowed,
    message: `spec.sidecar.tokenSecretRef: Secret ${secret} holds the operator-wide token, which goes only to --sidecar-url and --sidecar-url-allow URLs, and "${url}" is neither, so nothing is sent there: give that sidecar a token of its own (a Secret of type ${SIDECAR_TOKEN_SECRET_TYPE}); looked at again every ${SECRET_RETRY_MS / 1000} s`,
    retryAfterMs: SECRET_RETRY_MS,
  };
}
