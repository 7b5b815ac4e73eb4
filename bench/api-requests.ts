// API requests counted by the API server itself (`apiserver_request_total` of kube-apiserver's
// /metrics), so an operator's requests are counted alike whatever the operator (okt, the peers)
// and without trusting its own counters. Parsing and differencing are pure; fetching takes a GET.

/** Requests by `VERB group/resource[/subresource]` (the core group written `core`), summed over codes and versions. */
export type RequestCounts = Record<string, number>;

const SAMPLE = /^apiserver_request_total\{([^}]*)\} (\S+)$/;

/** The resource requests of a /metrics text (non-resource requests, such as GET /metrics itself, left out). */
export function parseRequestCounts(metrics: string): RequestCounts {
  const counts: RequestCounts = {};
  for (const line of metrics.split('\n')) {
    const sample = SAMPLE.exec(line);
    if (sample === null) continue;
    const labels = Object.fromEntries([...sample[1]!.matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (!labels.resource) continue;
    const key = `${labels.verb} ${labels.group || 'core'}/${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''}`;
    counts[key] = (counts[key] ?? 0) + Number(sample[2]);
  }
  return counts;
}

/** `after` minus `before`, by key, keys that did not move left out. */
export function requestDelta(before: RequestCounts, after: RequestCounts): RequestCounts {
  const delta: RequestCounts = {};
  for (const [key, n] of Object.entries(after)) {
    const moved = n - (before[key] ?? 0);
    if (moved !== 0) delta[key] = moved;
  }
  return delta;
}

/**
 * Of a delta, the requests an operator of `group`'s CRs made: every request on the group's resources
 * but watches (WATCH, WATCHLIST; long-running: every side's informers, the bench's and the operator's, opened theirs
 * before the window), less the bench's own `specEdits` (its spec patches of the CRs).
 */
export function operatorRequests(delta: RequestCounts, group: string, specEdits: number): number {
  let total = 0;
  for (const [key, n] of Object.entries(delta)) {
    const [verb, resource = ''] = key.split(' ');
    if (!verb?.startsWith('WATCH') && resource.startsWith(`${group}/`)) total += n;
  }
  return total - specEdits;
}

/** The API server's counts now, read with `get` (the bench's client of the API server). */
export async function apiServerRequestCounts(get: (path: string) => Promise<Buffer>): Promise<RequestCounts> {
  return parseRequestCounts((await get('/metrics')).toString('utf8'));
}
