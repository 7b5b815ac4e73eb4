// The compact status format: an encoding of the lean status at the boundary with the API server. It
// leaves out what the rest of the status (and the CR's uid) says exactly, and okt's reader puts it
// back before anything else sees the status, so the step, the events, okt status and okt ui see the
// lean status as ever. A status is compact when it has no `path` (lean and full always hold it): the
// path is its `pathSummary` read back. encodeCompact only writes a status expandStatus gives back
// exactly; one it cannot (a node name the path summary cannot be read back from) is written lean.
import { isDeepStrictEqual } from 'node:util';
import type { LifecycleStatus } from '../../../kube/lifecycle-resource.ts';
import { COMPACT_EVENT_MARKS, COMPACT_SUCCEEDED_MESSAGES } from '../../../kube/status-format.ts';
import { COMMAND_SUCCEEDED_MESSAGE } from '../../../sidecar-client/protocol.ts';
import { REASONS, READY } from '../reasons.ts';
import { renderPath } from '../../../machine/index.ts';
import { isOktCondition } from './conditions.ts';
import { operationId } from './operation.ts';
import { unpackStatus } from './packed-format.ts';
import { isRecord } from '../../../util/is-record.ts';
import { withoutKeys } from '../../../util/without-keys.ts';

type Json = Record<string, unknown>;

/** Event types of `emitted` as short codes (a type always holds a '.', a code never does). */
const EVENT_CODES: Readonly<Record<string, string>> = {
  'transition.v1': 't',
  'action.started.v1': 'as',
  'action.succeeded.v1': 'ok',
  'action.failed.v1': 'af',
  'converged.v1': 'c',
  'stalled.v1': 's',
  'migrated.v1': 'm',
  'braked.v1': 'b',
  'objects.applied.v1': 'oa',
  'objects.ready.v1': 'or',
  'objects.failed.v1': 'of',
};
const EVENT_TYPES_BY_CODE: ReadonlyMap<string, string> = new Map(Object.entries(EVENT_CODES).map(([type, code]) => [code, type]));
/** A Succeeded, Completed operation's message unless it says another: what okt's sidecar says of a command that succeeded. */
const COMPLETED_MESSAGE = COMMAND_SUCCEEDED_MESSAGE;
/** What a converged event's data says unless it says more (it converged at the desired node). */
const CONVERGED_DATA = { reason: REASONS.reached };

/** Whether a status as stored is in the compact format. */
export function isCompactStatus(raw: unknown): boolean {
  return isRecord(raw) && typeof raw.state === 'string' && raw.path === undefined && typeof raw.pathSummary === 'string';
}

/**
 * `status` (lean, with any fields okt does not know) as the compact format stores it for the CR of
 * `uid`; the lean status itself when compact cannot say it exactly.
 */
export function encodeCompact(status: LifecycleStatus, uid: string): Json {
  const candidate = compactCandidate(status as unknown as Json, uid);
  return candidate !== undefined && isDeepStrictEqual(expandStatus(candidate, uid), status) ? candidate : (status as unknown as Json);
}

/** A status as stored, in any format, as okt reads it: a packed one unpacked, a compact one expanded to its lean status; any other as it is. */
export function expandStatus(input: unknown, uid: string): unknown {
  const raw = unpackStatus(input);
  if (!isCompactStatus(raw)) return raw;
  const stored = raw as Json;
  const state = stored.state as string;
  const observedGeneration = stored.observedGeneration;
  const out: Json = { ...stored };
  const path = parsePath(stored.pathSummary as string);
  if (path !== undefined) out.path = path;
  if (stored.transition === undefined && path !== undefined) out.transition = path.length - 1;
  if (stored.observedSequence === undefined && stored.observedEpoch !== undefined) out.observedSequence = 0;
  const last = isRecord(stored.lastTransition) ? { ...stored.lastTransition } : undefined;
  if (last !== undefined) {
    if (last.from === undefined && path !== undefined && path.length > 1) last.from = path[path.length - 2];
    last.to ??= state;
    last.generation ??= observedGeneration;
    out.lastTransition = last;
  }
  if (isRecord(stored.operation)) {
    const operation = stored.operation;
    const retries = typeof operation.retries === 'number' ? operation.retries : 0;
    const id = operation.id ?? (typeof out.transition === 'number' ? operationId(uid, out.transition, retries) : undefined);
    const message = operation.message ?? (isCompleted(operation) ? COMPLETED_MESSAGE : undefined);
    out.operation = defined({ id, node: operation.node ?? state, ...withoutKeys(operation, ['id', 'node']), message });
  }
  if (isRecord(stored.cycleBrake) && last !== undefined) {
    const brake = stored.cycleBrake;
    out.cycleBrake = { generation: brake.generation ?? last.generation, turns: brake.turns ?? 1, at: brake.at ?? last.time, ...withoutKeys(brake, ['generation', 'turns', 'at']) };
  }
  if (Array.isArray(stored.conditions)) {
    out.conditions = stored.conditions.map((c: unknown) => (isRecord(c) ? expandCondition(c, out, last) : c));
  }
  if (isRecord(stored.emitted)) out.emitted = expandEmitted(stored.emitted, out, uid);
  return out;
}

/**
 * Besides the parts below: `transition` when it is the path's moves (not once the path is cut at its
 * limit), and `observedSequence` 0 beside the epoch it counts in (an epoch without a sequence, which
 * the reconciler never records, cannot be said and is written lean).
 */
function compactCandidate(status: Json, uid: string): Json | undefined {
  const state = status.state as string;
  if (typeof status.pathSummary !== 'string' || !isDeepStrictEqual(parsePath(status.pathSummary), status.path)) return undefined;
  const out: Json = withoutKeys(status, ['path']);
  if (Array.isArray(status.path) && status.transition === status.path.length - 1) delete out.transition;
  if (status.observedSequence === 0 && status.observedEpoch !== undefined) delete out.observedSequence;
  const last = status.lastTransition as Json | undefined;
  if (last !== undefined) {
    const compact = { ...last };
    if (Array.isArray(status.path) && compact.from === status.path[status.path.length - 2]) delete compact.from;
    if (compact.to === state) delete compact.to;
    if (compact.generation === status.observedGeneration) delete compact.generation;
    out.lastTransition = compact;
  }
  const operation = status.operation as Json | undefined;
  if (operation !== undefined) {
    const compact = { ...operation };
    const retries = typeof operation.retries === 'number' ? operation.retries : 0;
    if (compact.id === operationId(uid, status.transition as number, retries)) delete compact.id;
    if (compact.node === state) delete compact.node;
    if (isCompleted(operation) && compact.message === COMPLETED_MESSAGE) delete compact.message;
    out.operation = compact;
  }
  const brake = status.cycleBrake as Json | undefined;
  if (brake !== undefined && last !== undefined) {
    const compact = { ...brake };
    if (compact.generation === last.generation) delete compact.generation;
    if (compact.turns === 1) delete compact.turns;
    if (compact.at === last.time) delete compact.at;
    out.cycleBrake = compact;
  }
  out.conditions = (status.conditions as Json[]).map((c) => compactCondition(c, status, last));
  const emitted = status.emitted as Json | undefined;
  if (emitted !== undefined) out.emitted = compactEmitted(emitted, status, uid);
  return out;
}

/**
 * Of okt's conditions, each leaves out its time when it is lastTransition's (the node condition's
 * entry; Ready reached with the transition), the node condition and Ready at the desired node their
 * message when it is the derived one. Their generation stays: `kubectl wait` takes a condition without
 * one as judged at the object's generation.
 */
function compactCondition(condition: Json, status: Json, last: Json | undefined): Json {
  const out = { ...condition };
  if (!isOktCondition(condition as { type: string; reason: string })) return out;
  const derived = derivedMessage(condition, status, last);
  if (derived !== undefined && derived === out.message) delete out.message;
  if (last !== undefined && out.lastTransitionTime === last.time) delete out.lastTransitionTime;
  return out;
}

function expandCondition(condition: Json, status: Json, last: Json | undefined): Json {
  if (!isOktCondition(condition as { type: string; reason: string })) return condition;
  const message = condition.message ?? derivedMessage(condition, status, last);
  const time = condition.lastTransitionTime ?? last?.time;
  return { ...withoutKeys(condition, ['message', 'lastTransitionTime']), ...defined({ message, lastTransitionTime: time }) };
}

/** The message okt gives the condition, as the status says it (src/controller/lifecycle/status/commit.ts), when derivable. */
function derivedMessage(condition: Json, status: Json, last: Json | undefined): string | undefined {
  const state = status.state as string;
  if (condition.reason === REASONS.entered && condition.status === 'True') {
    if (last === undefined) return `${state} is the entry node`;
    const events = Array.isArray(last.events) ? (last.events as string[]) : [];
    const why = events.length > 0 ? ` on ${events.join(', ')}` : ' by migration';
    return `entered from ${String(last.from)} at transition ${String(status.transition)}${why}`;
  }
  if (condition.type === READY && condition.reason === REASONS.reached && condition.status === 'True') {
    return `${state} reached${status.operation === undefined ? '' : '; its action succeeded'}`;
  }
  return undefined;
}

function isCompleted(operation: Json): boolean {
  return operation.phase === 'Succeeded' && operation.reason === 'Completed';
}

/**
 * `emitted` leaves out the desired node when it is the state, its time when it is the status's latest,
 * types as codes, and of an event's data what the rest of the status says: `lt` stands for the
 * `from` and `events` of lastTransition (a transition's, a convergence's), `pa` for the whole data
 * (and the subject) of the previous node's action succeeding (the write that reached a node without an action), and a
 * converged event's usual data. Each only when the event reads back exactly.
 */
function compactEmitted(emitted: Json, status: Json, uid: string): Json {
  const out = { ...emitted };
  if (out.desired === status.state) delete out.desired;
  if (out.time === latestTime(status)) delete out.time;
  if (Array.isArray(emitted.events)) {
    out.events = emitted.events.map((event: Json) => {
      const compact = compactEvent(event, status, uid);
      return isDeepStrictEqual(expandEvent(compact, status, uid), event) ? compact : event;
    });
  }
  return out;
}

function compactEvent(event: Json, status: Json, uid: string): Json {
  const compact: Json = { ...event };
  const code = EVENT_CODES[event.type as string];
  if (code !== undefined) compact.type = code;
  if (!isRecord(event.data)) return compact;
  // Only the message of the event's own operation can make its data the derived one: that one is built.
  const message = isRecord(event.data.operation) ? event.data.operation.message : undefined;
  const mark = event.type === 'action.succeeded.v1' && typeof message === 'string' ? (COMPACT_SUCCEEDED_MESSAGES as readonly string[]).indexOf(message) : -1;
  if (mark >= 0 && isDeepStrictEqual(event.data, previousActionSucceeded(status, uid, message as string))) {
    delete compact.data;
    compact.pa = mark + 1;
    if (compact.subject !== undefined && compact.subject === previousNode(status)) delete compact.subject;
    return compact;
  }
  let data: Json = event.data;
  const last = status.lastTransition as Json | undefined;
  if (last !== undefined && isDeepStrictEqual(data.from, last.from) && isDeepStrictEqual(data.events, last.events)) {
    data = withoutKeys(data, ['from', 'events']);
    compact.lt = 1;
  }
  if (event.type === 'converged.v1' && isDeepStrictEqual(data, CONVERGED_DATA)) delete compact.data;
  else compact.data = Object.keys(data).length === 0 ? undefined : data;
  return defined(compact);
}

function expandEvent(event: Json, status: Json, uid: string): Json {
  const type = EVENT_TYPES_BY_CODE.get(event.type as string) ?? event.type;
  const succeeded = typeof event.pa === 'number' ? COMPACT_SUCCEEDED_MESSAGES[event.pa - 1] : undefined;
  const subject = event.subject ?? (succeeded === undefined ? undefined : previousNode(status));
  let data = succeeded === undefined ? (event.data as Json | undefined) : previousActionSucceeded(status, uid, succeeded);
  if (data === undefined && type === 'converged.v1') data = { ...CONVERGED_DATA };
  const last = status.lastTransition as Json | undefined;
  if (event.lt === 1 && last !== undefined) data = { ...data, from: last.from, events: last.events };
  return defined({ ...withoutKeys(event, Object.keys(COMPACT_EVENT_MARKS)), type, subject, data });
}

/**
 * The subject of a `pa` event written without one: the node whose action succeeded, lastTransition.from.
 * Undefined when that is the state, where an event without a subject already stands for it (an earlier
 * okt's `pa` event without one says so).
 */
function previousNode(status: Json): string | undefined {
  const from = (status.lastTransition as Json | undefined)?.from;
  return typeof from === 'string' && from !== status.state ? from : undefined;
}

/**
 * What an `action.succeeded.v1` event adds to the status of the write that reached a node with no
 * action: the previous node's operation (its id of the previous transition, `message` the sidecar's),
 * at the previous transition and path. Undefined when the status has no previous node.
 */
function previousActionSucceeded(status: Json, uid: string, message: string): Json | undefined {
  const last = status.lastTransition as Json | undefined;
  const path = status.path as string[] | undefined;
  if (last === undefined || typeof last.from !== 'string' || typeof status.transition !== 'number' || path === undefined || path.length < 2) return undefined;
  const transition = status.transition - 1;
  return {
    from: last.from,
    to: last.from,
    transition,
    path: renderPath(path.slice(0, -1)),
    operation: { id: operationId(uid, transition), node: last.from, phase: 'Succeeded', message },
  };
}

function expandEmitted(emitted: Json, status: Json, uid: string): Json {
  const events = Array.isArray(emitted.events) ? emitted.events.map((event: unknown) => (isRecord(event) && typeof event.type === 'string' ? expandEvent(event, status, uid) : event)) : emitted.events;
  return defined({ ...emitted, desired: emitted.desired ?? status.state, events, time: emitted.time ?? latestTime(status) });
}

/** The latest time the status holds (lastTransition's, the conditions'): the time of the write that changed it last, when it had events. */
function latestTime(status: Json): string | undefined {
  let latest: string | undefined;
  let latestMs = -Infinity;
  for (const time of [(status.lastTransition as Json | undefined)?.time, ...((status.conditions as Json[] | undefined) ?? []).map((c) => c.lastTransitionTime)]) {
    if (typeof time !== 'string') continue;
    const ms = Date.parse(time);
    // A time wins only when it parses later than the one before: ties and times that do not parse keep that one.
    if (latest === undefined || ms > latestMs) {
      latest = time;
      latestMs = ms;
    }
  }
  return latest;
}

/** `renderPath`'s output (src/machine/path.ts) read back; undefined when it is not of that form. */
export function parsePath(summary: string): string[] | undefined {
  const step = /^>(?:\(([^<>()]+)<<>>([^<>()]+)\)x(\d+)|([^>]+))/;
  const path: string[] = [];
  let rest = summary;
  while (rest.length > 0) {
    const match = step.exec(rest);
    if (match === null) return undefined;
    if (match[4] !== undefined) path.push(match[4]);
    else for (let i = 0; i < Number(match[3]); i++) path.push(match[1]!, match[2]!);
    rest = rest.slice(match[0].length);
  }
  return path;
}

/** `object` without its undefined fields (a plain loop, as withoutKeys). */
function defined(object: Json): Json {
  const out: Json = {};
  for (const key of Object.keys(object)) if (object[key] !== undefined) out[key] = object[key];
  return out;
}
