// The values cached objects repeat (kinds, namespaces, node names, reasons, messages, the graph's
// revision) as one string each: JSON.parse gives every object its own copies, and a cache of
// thousands of CRs is mostly those copies (a quarter of a cached CR's heap, measured).

/** Fields whose values are one object's own (ids, versions, times): sharing them would only grow the pool. */
const OWN_VALUES = new Set(['uid', 'resourceVersion', 'creationTimestamp', 'deletionTimestamp', 'lastTransitionTime', 'time', 'startedAt', 'finishedAt', 'id']);
/** Longer values are rarely repeated. */
const MAX_SHARED_LENGTH = 200;
/** The pool starts over past this many values, so CRs that come and go cannot grow it for ever. */
const MAX_POOL_SIZE = 50_000;

export class StringPool {
  readonly #values = new Map<string, string>();

  /** `value` with its repeated strings replaced, in place, by the pool's copies; returns it. */
  share<T>(value: T): T {
    this.#walk(value as unknown);
    return value;
  }

  #walk(node: unknown): void {
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const item: unknown = node[i];
        if (typeof item === 'string') node[i] = this.#shared(item);
        else this.#walk(item);
      }
    } else if (typeof node === 'object' && node !== null) {
      const record = node as Record<string, unknown>;
      for (const key of Object.keys(record)) {
        const item = record[key];
        if (typeof item === 'string') {
          if (!OWN_VALUES.has(key)) record[key] = this.#shared(item);
        } else this.#walk(item);
      }
    }
  }

  #shared(value: string): string {
    if (value.length > MAX_SHARED_LENGTH) return value;
    const known = this.#values.get(value);
    if (known !== undefined) return known;
    if (this.#values.size >= MAX_POOL_SIZE) this.#values.clear();
    this.#values.set(value, value);
    return value;
  }
}
