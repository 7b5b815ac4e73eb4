import { setField } from './set-field.ts';

/**
 * A copy of `object` without `keys`. A plain loop: it runs on every field of every status read and
 * written (Object.entries and fromEntries build an array per field).
 */
export function withoutKeys(object: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(object)) if (!keys.includes(key)) setField(out, key, object[key]);
  return out;
}
