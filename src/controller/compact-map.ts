// The informer's cache, compact: each object is kept as its JSON, raw-deflated (zlib) with a preset
// dictionary, the JSON of an earlier object of the same resource (objects of one kind share most of
// their bytes: field names, node, condition and reason names, the graph's revision), in a one-byte
// string (V8 keeps it in the heap at one byte per character). A cached CR at rest takes about a fifth
// of its parsed form. Each read inflates and parses (tens of µs) and hands out an object of its own,
// so no caller can change what the cache holds.
import { deflateRawSync, inflateRawSync } from 'node:zlib';

/** Objects at least this large (as JSON) may become the dictionary: a CR with its status, not a bare one. */
const DICTIONARY_MIN_BYTES = 1024;
/** The first character of an entry: whether it was deflated with the dictionary. */
const PRIMED = 'd';
const PLAIN = 'p';

export class CompactMap<T> {
  readonly #entries = new Map<string, string>();
  #dictionary: Buffer | undefined;

  get size(): number {
    return this.#entries.size;
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
    this.#entries.set(key, this.#encode(value));
  }

  delete(key: string): boolean {
    return this.#entries.delete(key);
  }

  *values(): IterableIterator<T> {
    for (const entry of this.#entries.values()) yield this.#decode(entry);
  }

  /** The stored size of an entry in bytes (for tests and benchmarks). */
  storedBytes(key: string): number | undefined {
    return this.#entries.get(key)?.length;
  }

  #encode(value: T): string {
    const json = Buffer.from(JSON.stringify(value));
    // Chosen once: entries made with it stay readable. Entries made before it stay plain until rewritten.
    if (this.#dictionary === undefined && json.length >= DICTIONARY_MIN_BYTES) this.#dictionary = json;
    const dictionary = this.#dictionary;
    const body = dictionary === undefined ? deflateRawSync(json) : deflateRawSync(json, { dictionary });
    return (dictionary === undefined ? PLAIN : PRIMED) + body.toString('latin1');
  }

  #decode(entry: string): T {
    const body = Buffer.from(entry.slice(1), 'latin1');
    const json = entry[0] === PRIMED ? inflateRawSync(body, { dictionary: this.#dictionary! }) : inflateRawSync(body);
    return JSON.parse(json.toString()) as T;
  }
}
