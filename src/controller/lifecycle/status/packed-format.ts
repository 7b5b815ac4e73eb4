// The packed status format: the compact status with the fields only okt reads held in one string,
// `status.packed`. The API server's cost of a write grows with the number of fields of the object far
// more than with its bytes (it decodes, validates, tracks and encodes each): the same bytes as one
// string cost it about what a status of a few fields does (docs/benchmarks.md). What kubectl and its
// users read stays a field of its own: the state, the conditions with their generations (`kubectl
// wait`), the printer columns' path summary and graph revision.
//
// The string is the JSON of the fields it holds with `"` and `'` swapped, so that the CR's JSON needs
// no escape for its quotes; the swap is its own inverse, so reading it back is exact.

import { PACKED_FIELD, UNPACKED_FIELDS } from '../../../kube/status-format.ts';
import { UNKNOWN_FIELDS_KEPT } from '../../../kube/unknown-status-fields.ts';
import { isRecord } from '../../../util/is-record.ts';
import { setField } from '../../../util/set-field.ts';

type Json = Record<string, unknown>;

const UNPACKED: ReadonlySet<string> = new Set(UNPACKED_FIELDS);
const OKT_FIELDS: ReadonlySet<string> = new Set(UNKNOWN_FIELDS_KEPT.known);

/** Whether `field` of status goes in the string: okt's own, but for what kubectl reads. Another tool's field stays where that tool reads it. */
const packs = (field: string) => OKT_FIELDS.has(field) && !UNPACKED.has(field);

/** Whether a status as stored is in the packed format. */
export function isPackedStatus(raw: unknown): raw is Json & { packed: string } {
  return isRecord(raw) && typeof raw[PACKED_FIELD] === 'string';
}

/** `status` (a status as compact or lean writes it) with every field of okt's but UNPACKED_FIELDS in `packed`. */
export function packStatus(status: Json): Json {
  // A field of that name from another writer would be lost in the reading back: such a status stays as it is.
  if (PACKED_FIELD in status) return status;
  const kept: Json = {};
  const rest: Json = {};
  for (const key of Object.keys(status)) setField(packs(key) ? rest : kept, key, status[key]);
  kept[PACKED_FIELD] = swapQuotes(JSON.stringify(rest));
  return kept;
}

/**
 * A status as stored with its `packed` fields read back among the others (a field beside the string
 * wins: it was written later, by another writer); any other status, or a string that is no packed
 * object (edited by hand), as it is.
 */
export function unpackStatus(raw: unknown): unknown {
  if (!isPackedStatus(raw)) return raw;
  const { [PACKED_FIELD]: packed, ...fields } = raw;
  let rest: unknown;
  try {
    rest = JSON.parse(swapQuotes(packed));
  } catch {
    return raw;
  }
  return isRecord(rest) ? { ...rest, ...fields } : raw;
}

const DOUBLE_QUOTE = 0x22;
const SINGLE_QUOTE = 0x27;

/**
 * Over the UTF-8 bytes, where no byte of a multi-byte character is an ASCII quote: about 5x faster than
 * a replace with a function, on every status read and written. The strings okt writes are well formed
 * (JSON.stringify escapes a lone surrogate), so the bytes read back as the same string.
 */
function swapQuotes(text: string): string {
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === DOUBLE_QUOTE) bytes[i] = SINGLE_QUOTE;
    else if (bytes[i] === SINGLE_QUOTE) bytes[i] = DOUBLE_QUOTE;
  }
  return bytes.toString('utf8');
}
