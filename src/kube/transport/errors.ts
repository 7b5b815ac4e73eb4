/** The body of a failed API call (meta/v1 Status), as far as the API server fills it in. */
export interface ApiStatus {
  kind?: string;
  apiVersion?: string;
  status?: string;
  message?: string;
  reason?: string;
  code?: number;
  details?: { name?: string; group?: string; kind?: string; causes?: { reason?: string; message?: string; field?: string }[] };
}

/** A request the API server answered with an error status (or an ERROR watch event). */
export class KubeApiError extends Error {
  readonly statusCode: number;
  /** The Status reason (`Conflict`, `NotFound`, `AlreadyExists`, `Expired`, `Gone`, `Invalid`, ...); '' when absent. */
  readonly reason: string;
  readonly status: ApiStatus | undefined;
  readonly method: string;
  readonly path: string;

  constructor(init: { statusCode: number; method: string; path: string; status?: ApiStatus; body?: string }) {
    const reason = init.status?.reason ?? '';
    const detail = init.status?.message ?? init.body?.slice(0, 300) ?? '';
    super(`${init.method} ${init.path}: ${init.statusCode}${reason ? ` ${reason}` : ''}${detail ? `: ${detail}` : ''}`);
    this.name = 'KubeApiError';
    this.statusCode = init.statusCode;
    this.reason = reason;
    this.status = init.status;
    this.method = init.method;
    this.path = init.path;
  }
}

export function isKubeApiError(err: unknown, statusCode?: number): err is KubeApiError {
  return err instanceof KubeApiError && (statusCode === undefined || err.statusCode === statusCode);
}
/** 409: a stale resourceVersion (optimistic concurrency) or a create of an existing name. */
export const isConflict = (err: unknown): err is KubeApiError => isKubeApiError(err, 409);
export const isNotFound = (err: unknown): err is KubeApiError => isKubeApiError(err, 404);

/**
 * What a 403 means for an operator, in one line: which request RBAC refused, and what to do. Undefined
 * for any other error. A ServiceAccount missing a permission is a deployment mistake that no retry fixes.
 */
export function permissionProblem(err: unknown): string | undefined {
  if (!isKubeApiError(err, 403)) return undefined;
  return (
    `permission denied by RBAC: ${err.method} ${err.path} (${err.status?.message ?? 'forbidden'}); ` +
    'grant it to the operator\'s ServiceAccount: the Role and ClusterRole `okt manifests` prints have every permission okt needs'
  );
}

/**
 * What a 422 on a write of a stored object means, in one line: the object no longer passes its CRD's
 * schema (a later CRD refuses what an earlier one took, and an API server without ratcheting, such as
 * 1.20, checks the whole object on every write, its status too). Undefined for any other error, and
 * for a create (the caller's own object). No retry fixes it: a person edits the object.
 */
export function invalidStoredObjectProblem(err: unknown): string | undefined {
  if (!isKubeApiError(err, 422) || err.method === 'POST') return undefined;
  return (
    `the API server refuses every write of this object, its status too: it no longer passes its CRD's schema (${err.status?.message ?? 'invalid'}); ` +
    'edit the fields named so that they do (it was stored under an earlier CRD); until then nothing is written to it'
  );
}

/** 410: the resourceVersion a list or watch started from is no longer in the server's history. */
export const isGone = (err: unknown): err is KubeApiError => isKubeApiError(err, 410);

/**
 * A watch stream on which nothing arrived (no event, no bookmark, not a byte) for `idleMs`: its
 * connection is taken for dead (a load balancer failover, a black-holed route) and the stream abandoned.
 */
export class WatchIdleError extends Error {
  readonly idleMs: number;
  readonly path: string;

  constructor(path: string, idleMs: number) {
    super(`WATCH ${path}: nothing received for ${idleMs} ms`);
    this.name = 'WatchIdleError';
    this.idleMs = idleMs;
    this.path = path;
  }
}

export const isWatchIdle = (err: unknown): err is WatchIdleError => err instanceof WatchIdleError;

/** Parses a response body as a Status when it is one; undefined otherwise. */
export function parseStatus(body: string): ApiStatus | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    if (parsed && typeof parsed === 'object' && (parsed as ApiStatus).kind === 'Status') return parsed as ApiStatus;
  } catch {
    // not JSON: the caller keeps the raw text
  }
  return undefined;
}
