// The informer's cache, compact at rest: an object changed lately is kept as its JSON (parsed on each
// read: what a CR being walked needs, cheaply); one unchanged for `compactAfterMs` is raw-deflated (zlib)
// with a preset dictionary, the JSON of an earlier object of the same resource (objects of one kind share
// most of their bytes: field names, node, condition and reason names, the graph's revision), in a
// one-byte string (V8 keeps it in the heap at one byte per character). A cached CR at rest takes about a
// fifth of its parsed form; deflating and inflating on every change and read cost the walk about a
// quarter of the operator's CPU, hence the delay. Each read hands out an object of its own, so no
// caller can change what the cache holds.
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/** Objects at least this large (as JSON) may become the dictionary: a CR with its status, not a bare one. */
const DICTIONARY_MIN_BYTES = 1024;
/** The first character of an entry: its JSON as it is, or deflated with or without the dictionary. */
const JSON_TEXT = 'j';
const PRIMED = 'd';
const PLAIN = 'p';

/** How long an object stays as its JSON after it was last set, by default. */
export const DEFAULT_COMPACT_AFTER_MS = 10_000;

export interface CompactMapOptions {
  /** An object unchanged this long is deflated by the next `compactIdle()`. Default 10 s. */
  compactAfterMs?: number;
  /** The clock (tests). */
  now?: () => number;
}

export class CompactMap<T> {
  readonly #entries = new Map<string, string>();
  /** Keys kept as JSON, oldest set first (a set moves its key to the end), with when they were set. */
  readonly #uncompacted = new Map<string, number>();
  readonly #compactAfterMs: number;
  readonly #now: () => number;
  #dictionary: Buffer | undefined;

  constructor(options: CompactMapOptions = {}) {
    this.#compactAfterMs = options.compactAfterMs ?? DEFAULT_COMPACT_AFTER_MS;
    this.#now = options.now ?? Date.now;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Entries not deflated yet (changed within `compactAfterMs`). */
  get uncompacted(): number {
    return this.#uncompacted.size;
  }

  has(key: string): boolean {
    return this.#entries.has(key);
  }

  keys(): IterableIterator<string> {
    return this.#entries.keys();
  }

  get(key: string): T | undefined {
    const entry = this.#entries.get(key);
    return entry === undefined ? undefined : this.#decode(entry);
  }

  set(key: string, value: T): void {
    this.#entries.set(key, JSON_TEXT + JSON.stringify(value));
    this.#uncompacted.delete(key);
    this.#uncompacted.set(key, this.#now());
  }

  delete(key: string): boolean {
    this.#uncompacted.delete(key);
    return this.#entries.delete(key);
  }

  *values(): IterableIterator<T> {
    for (const entry of this.#entries.values()) yield this.#decode(entry);
  }

  /** Deflates every object unchanged for `compactAfterMs`; returns how many. */
  compactIdle(): number {
    const before = this.#now() - this.#compactAfterMs;
    let compacted = 0;
    for (const [key, setAt] of this.#uncompacted) {
      if (setAt > before) break;
      this.#uncompacted.delete(key);
      this.#entries.set(key, this.#deflate(this.#entries.get(key)!.slice(1)));
      compacted += 1;
    }
    return compacted;
  }

  /** The stored size of an entry in bytes (for tests and benchmarks). */
  storedBytes(key: string): number | undefined {
    return this.#entries.get(key)?.length;
  }

  #deflate(text: string): string {
    const json = Buffer.from(text);
    // Chosen once: entries made with it stay readable. Entries made before it stay plain until rewritten.
    if (this.#dictionary === undefined && json.length >= DICTIONARY_MIN_BYTES) this.#dictionary = json;
    const dictionary = this.#dictionary;
    const body = dictionary === undefined ? deflateRawSync(json) : deflateRawSync(json, { dictionary });
    return (dictionary === undefined ? PLAIN : PRIMED) + body.toString('latin1');
  }

  #decode(entry: string): T {
    if (entry[0] === JSON_TEXT) return JSON.parse(entry.slice(1)) as T;
    const body = Buffer.from(entry.slice(1), 'latin1');
    const json = entry[0] === PRIMED ? inflateRawSync(body, { dictionary: this.#dictionary! }) : inflateRawSync(body);
    return JSON.parse(json.toString()) as T;
  }
}
