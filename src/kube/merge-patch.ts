import { isDeepStrictEqual } from 'node:util';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/**
 * The JSON merge patch (RFC 7386) that turns `before` into `after`: changed fields, nested objects
 * patched field by field, removed fields set to null, arrays replaced whole. undefined: no change.
 */
export function mergePatchFrom(before: unknown, after: unknown): Record<string, unknown> | undefined {
  const patch = diff(toJson(before), toJson(after));
  return patch === undefined ? undefined : (patch as Record<string, unknown>);
}

function diff(before: Json | undefined, after: Json): Json | undefined {
  if (!isRecord(before) || !isRecord(after)) return isDeepStrictEqual(before, after) ? undefined : after;
  const patch: { [key: string]: Json } = {};
  for (const key of Object.keys(before)) if (!(key in after)) patch[key] = null;
  for (const [key, value] of Object.entries(after)) {
    const change = diff(before[key], value);
    if (change !== undefined) patch[key] = change;
  }
  return Object.keys(patch).length === 0 ? undefined : patch;
}

function isRecord(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Drops undefined fields the way JSON does, so they never read as changes. */
function toJson(value: unknown): Json {
  return value === undefined ? {} : (JSON.parse(JSON.stringify(value)) as Json);
}
