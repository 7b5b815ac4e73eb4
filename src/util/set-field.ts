/**
 * Sets `object[key]` as a field of its own, also one named __proto__ (JSON.parse reads one as a field;
 * assigned, it would set the object's prototype and the field would be lost).
 */
export function setField(object: Record<string, unknown>, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  else object[key] = value;
}
