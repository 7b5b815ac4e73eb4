// Which shape okt writes a CR's status in: a property of the CRD version, given alike to `okt crd` (which
// records it in the CRD for the CR's readers) and to the operator (which writes it).
import { COMMAND_SUCCEEDED_MESSAGE, MODULE_SUCCEEDED_MESSAGE } from '../sidecar-client/protocol.ts';

/**
 * `full`: every condition and operation field, as since the first version. `lean`, `compact` (lean's
 * fields, those the rest of the status says left out) and `packed` (compact, what only okt reads in
 * one string): see docs/operator.md.
 */
export const STATUS_FORMATS = ['full', 'lean', 'compact', 'packed'] as const;
export type StatusFormat = (typeof STATUS_FORMATS)[number];
export const DEFAULT_STATUS_FORMAT: StatusFormat = 'full';

/** The CRD annotation that tells a CR's readers which format its status is written in. */
export const STATUS_FORMAT_ANNOTATION = 'okt.dev/status-format';

/** `value` as a status format; an error naming `source` (where it was read) otherwise. */
export function parseStatusFormat(value: string, source: string): StatusFormat {
  if ((STATUS_FORMATS as readonly string[]).includes(value)) return value as StatusFormat;
  throw new Error(`${source}: "${value}" is not a status format okt knows (${STATUS_FORMATS.join(', ')})`);
}

/** The status format a CRD's annotations give (absent: full, as every CRD of an okt before the choice). */
export function statusFormatOf(annotations: Record<string, string> | undefined): StatusFormat {
  const value = annotations?.[STATUS_FORMAT_ANNOTATION];
  return value === undefined ? DEFAULT_STATUS_FORMAT : parseStatusFormat(value, STATUS_FORMAT_ANNOTATION);
}

/** The sidecar's messages of a succeeded action that compact leaves out; a `pa` mark is 1 + the index (append only). */
export const COMPACT_SUCCEEDED_MESSAGES = [COMMAND_SUCCEEDED_MESSAGE, MODULE_SUCCEEDED_MESSAGE] as const;

/**
 * Marks of an `emitted` event in the compact format, with their values: `lt` (1), its data's `from`
 * and `events` are lastTransition's; `pa` (1 + the index of the action's message in
 * COMPACT_SUCCEEDED_MESSAGES), its data is the previous node's action succeeding. Its CRD version has them.
 */
export const COMPACT_EVENT_MARKS: Readonly<Record<string, readonly number[]>> = { lt: [1], pa: COMPACT_SUCCEEDED_MESSAGES.map((_, i) => i + 1) };

/**
 * Fields the compact format leaves out where the rest of the status says them (okt's reader puts them
 * back): the CRD of a compact version does not require them. Per object of status, by its path.
 */
export const COMPACT_OPTIONAL_FIELDS: Readonly<Record<string, readonly string[]>> = {
  'conditions[]': ['message', 'lastTransitionTime'],
  operation: ['id', 'node'],
  lastTransition: ['from', 'to', 'generation'],
  cycleBrake: ['generation', 'turns', 'at'],
  emitted: ['desired', 'time'],
};

/** The field of a packed status that holds, as one string, every field but UNPACKED_FIELDS. */
export const PACKED_FIELD = 'packed';

/** The fields a packed status keeps as fields: what kubectl reads (`kubectl wait`, the printer columns). */
export const UNPACKED_FIELDS = ['state', 'observedGeneration', 'conditions', 'pathSummary', 'graphRevision'] as const;
