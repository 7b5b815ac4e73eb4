// Whether two values have the same JSON text, without building it: the outbox compares an event's
// data field by field and each write's events read back, on every transition (JSON.stringify of both
// sides was about 2% of the operator's CPU per transition).

/**
 * `JSON.stringify(a) === JSON.stringify(b)`: plain data (strings, finite numbers, booleans, plain
 * objects in key order, arrays) compared in place, anything else by its JSON text.
 */
export function sameJson(a: unknown, b: unknown): boolean {
  if (typeof a === 'string' || typeof a === 'boolean' || (typeof a === 'number' && Number.isFinite(a))) return a === b;
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i += 1) if (!sameJson(inArray(a[i]), inArray(b[i]))) return false;
    return true;
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const aKeys = writtenKeys(a);
    const bKeys = writtenKeys(b);
    if (aKeys.length !== bKeys.length) return false;
    for (let i = 0; i < aKeys.length; i += 1) {
      const key = aKeys[i]!;
      if (key !== bKeys[i] || !sameJson(a[key], b[key])) return false;
    }
    return true;
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

/** An array writes undefined, a function and a symbol as null. */
function inArray(value: unknown): unknown {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol' ? null : value;
}

/** The keys JSON writes of a plain object, in its order: those whose value is not undefined, a function or a symbol. */
function writtenKeys(object: Record<string, unknown>): string[] {
  return Object.keys(object).filter((key) => {
    const value = object[key];
    return value !== undefined && typeof value !== 'function' && typeof value !== 'symbol';
  });
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
