import { OBJECT_LABELS } from '../../graph/index.ts';

/** One replica's part of the CRs when several operators split them: shard `index` of `count`. */
export interface Shard {
  index: number;
  count: number;
}

/**
 * The label that carries a CR's shard key (0-255, from its uid): each shard lists and watches only
 * the keys that are its own, so the API server filters, and a replica caches only its share. The
 * objects a CR's graph makes carry its CR's (renderObjects copies it), so their caches are split alike.
 */
export const SHARD_KEY_LABEL = OBJECT_LABELS.shardKey;
/** Shard keys run 0..SHARD_KEYS-1; a shard count divides them, so at most this many shards. */
export const SHARD_KEYS = 256;

/** Parses `i/N` (0 <= i < N <= 256), the form of `okt run --shard`. */
export function parseShard(text: string): Shard {
  const match = /^(\d+)\/(\d+)$/.exec(text.trim());
  const index = Number(match?.[1]);
  const count = Number(match?.[2]);
  if (!match || count < 1 || index >= count || count > SHARD_KEYS) throw new Error(`--shard: expected i/N with 0 <= i < N <= ${SHARD_KEYS} (e.g. 0/2), got "${text}"`);
  return { index, count };
}

/** A CR's shard key: FNV-1a of its uid, modulo 256. The uid never changes, so neither does the key. */
export function shardKeyOf(uid: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < uid.length; i++) {
    hash ^= uid.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % SHARD_KEYS;
}

/** The shard a CR belongs to: its key modulo the count, so every replica computes the same split. */
export function shardOf(uid: string, count: number): number {
  return shardKeyOf(uid) % count;
}

/** The label selector of a shard's CRs: the keys that are its own. */
export function shardSelector(shard: Shard): string {
  const keys = Array.from({ length: SHARD_KEYS }, (_, key) => key).filter((key) => key % shard.count === shard.index);
  return `${SHARD_KEY_LABEL} in (${keys.join(',')})`;
}

/** The label selector of CRs no shard has labelled yet (new ones, and those an unsharded operator took): every shard watches them and takes its own. */
export const UNKEYED_SELECTOR = `!${SHARD_KEY_LABEL}`;

/** `a,b` of two label selectors (both must hold); an absent one adds nothing. */
export function bothSelectors(first: string | undefined, second: string): string {
  return first === undefined || first.trim() === '' ? second : `${first},${second}`;
}
