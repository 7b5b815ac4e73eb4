/** How many entered nodes a path keeps by default; the oldest are dropped first. */
export const DEFAULT_PATH_LIMIT = 256;

/** A new path with `node` appended, keeping at most `limit` nodes (the most recent). */
export function appendToPath(path: readonly string[], node: string, limit = DEFAULT_PATH_LIMIT): string[] {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`path limit must be a positive integer, got ${limit}`);
  const keep = Math.max(0, path.length + 1 - limit);
  const next = path.slice(keep);
  next.push(node);
  return next;
}

/**
 * Renders a path the way OKT prints it: `>Start>Running>Stopping>End`. A back-and-forth run
 * A,B,A,B,... of three nodes or more folds into `(A<<>>B)xN`, N being the number of A>B pairs; an
 * odd run ends with `>A`: `>(Run<<>>Servicing)x12>Stopping>End`, `>(Run<<>>Servicing)x1>Run`.
 */
export function renderPath(path: readonly string[]): string {
  let out = '';
  let i = 0;
  while (i < path.length) {
    const a = path[i]!;
    const b = path[i + 1];
    let end = i + 1; // exclusive end of the alternating run starting at i
    if (b !== undefined && b !== a) {
      end = i + 2;
      while (end < path.length && path[end] === path[end - 2]) end++;
    }
    const length = end - i;
    if (length >= 3) {
      out += `>(${a}<<>>${b})x${Math.floor(length / 2)}`;
      if (length % 2 === 1) out += `>${a}`;
      i = end;
    } else {
      out += `>${a}`;
      i++;
    }
  }
  return out;
}
