/** One replica's part of the CRs when several operators split them: shard `index` of `count`. */
export interface Shard {
  index: number;
  count: number;
}

/** Parses `i/N` (0 <= i < N), the form of `okt run --shard`. */
export function parseShard(text: string): Shard {
  const match = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (!match || count < 1 || index >= count) throw new Error(`--shard: expected i/N with 0 <= i < N (e.g. 0/2), got "${text}"`);
  return { index, count };
}

/**
 * The shard a CR belongs to: FNV-1a of its uid, modulo the count. The uid never changes, so a CR
 * stays with one shard for its whole life, and every replica computes the same split.
 */
export function shardOf(uid: string, count: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < uid.length; i++) {
    hash ^= uid.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % count;
}
