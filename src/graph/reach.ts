/** Every index reachable from `starts` (themselves included) by following `next`. */
export function reach(starts: readonly number[], next: (i: number) => readonly number[]): Set<number> {
  const seen = new Set(starts);
  const queue = [...starts];
  for (let head = 0; head < queue.length; head++) {
    for (const n of next(queue[head] ?? -1)) {
      if (!seen.has(n)) {
        seen.add(n);
        queue.push(n);
      }
    }
  }
  return seen;
}
