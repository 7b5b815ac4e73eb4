// Status fields okt does not know (a newer okt's, another tool's) are kept: the CRD preserves them
// (src/kube/crd.ts) and okt writes them back as stored (statusToWrite). Where: at the top level
// of status, and inside okt's own objects for as long as each is the same object; an object okt
// replaces or removes takes its unknown fields with it, as they were about that object.
import type { z } from 'zod';
import { lastTransitionSchema, lifecycleStatusSchema, operationStatusSchema, outboxEntrySchema } from './lifecycle-resource.ts';
import { isRecord } from '../util/is-record.ts';
import { withoutKeys } from '../util/without-keys.ts';

/** One of okt's objects inside status. */
export interface OpenObject {
  /** Its fields okt knows (and validates). */
  readonly known: readonly string[];
  /** The fields that make it the same object from one write to the next. */
  readonly identity: readonly string[];
}

const fieldsOf = (schema: z.ZodObject) => Object.keys(schema.shape);

/** Where status keeps fields okt does not know. */
export const UNKNOWN_FIELDS_KEPT = {
  /** Fields okt knows at the top level of status; any other is kept. */
  known: fieldsOf(lifecycleStatusSchema),
  /** status.<field>: one object. */
  objects: {
    // An operation is its id: a new one (the next transition, a retry) starts without the old one's fields.
    operation: { known: fieldsOf(operationStatusSchema), identity: ['id'] },
    // Written whole at each transition and never edited: any change is another transition.
    lastTransition: { known: fieldsOf(lastTransitionSchema), identity: fieldsOf(lastTransitionSchema) },
  },
  /** status.<field>: a list of objects, each matched by its identity. */
  lists: {
    outbox: { known: fieldsOf(outboxEntrySchema), identity: ['sequence'] },
  },
} as const satisfies { known: readonly string[]; objects: Record<string, OpenObject>; lists: Record<string, OpenObject> };

type Json = Record<string, unknown>;

/**
 * The whole status okt writes (it replaces `/status`): `next`, the status okt computed from what it
 * could parse, with what the status as stored (raw) holds that okt does not know. A status of
 * conditions only (okt could not read the CR) replaces the conditions and keeps everything else.
 */
export function statusToWrite(stored: unknown, next: object): Json {
  if (!('state' in next)) return isRecord(stored) ? { ...stored, ...next } : { ...next };
  return withUnknownFields(stored, next as Json);
}

/** `next` plus the fields of `stored` okt does not know, where they are still about the same objects. */
export function withUnknownFields(stored: unknown, next: Json): Json {
  if (!isRecord(stored)) return next;
  const out: Json = { ...withoutKeys(stored, UNKNOWN_FIELDS_KEPT.known), ...next };
  for (const [field, shape] of Object.entries(UNKNOWN_FIELDS_KEPT.objects)) {
    const before = stored[field];
    const after = next[field];
    if (isRecord(before) && isRecord(after) && sameObject(before, after, shape)) out[field] = { ...withoutKeys(before, shape.known), ...after };
  }
  for (const [field, shape] of Object.entries(UNKNOWN_FIELDS_KEPT.lists)) {
    const before = stored[field];
    const after = next[field];
    if (!Array.isArray(before) || !Array.isArray(after)) continue;
    out[field] = after.map((entry: unknown) => {
      const old = isRecord(entry) ? before.find((b: unknown) => isRecord(b) && sameObject(b, entry, shape)) : undefined;
      return old === undefined ? entry : { ...withoutKeys(old as Json, shape.known), ...(entry as Json) };
    });
  }
  return out;
}

function sameObject(a: Json, b: Json, shape: OpenObject): boolean {
  // Identity fields are strings, numbers and lists of strings: their JSON compares them.
  return shape.identity.every((key) => JSON.stringify(a[key]) === JSON.stringify(b[key]));
}
