// The lifecycle events a CR's status holds: the outbox (events of earlier writes not yet delivered
// when the next write was made, in full) and `emitted`, the events of the write that holds it, kept
// as what they add to that status. Most of an event's data is the status it was written with (graph
// revision, transition, nodes, path, generation), so a write's events cost a few bytes each; once
// they are delivered they go with the next write, and at rest nothing but that short record stays.
import type { EmittedEvents, LifecycleStatus, OperationStatus, OutboxEntry } from '../kube/lifecycle-resource.ts';
import type { LifecycleEventData } from './types.ts';
import { sameJson } from '../util/same-json.ts';

/** Every lifecycle event type starts so; `emitted` keeps only the rest. */
const TYPE_PREFIX = 'dev.okt.lifecycle.';
/** Events about the action: their `operation` is, unless they say otherwise, the status's. */
const ACTION_TYPES = new Set(['action.started.v1', 'action.succeeded.v1', 'action.failed.v1'].map((type) => TYPE_PREFIX + type));

type EmittedEvent = EmittedEvents['events'][number];

/**
 * The data an event of type `type` of a write has unless it says otherwise, read from the status of
 * that write, in the order events carry these fields (the others follow in their own order).
 */
function baseData(status: LifecycleStatus, graph: string, desired: string, type: string): Record<string, unknown> {
  const { operation } = status;
  const base: Record<string, unknown> = {
    graph,
    graphRevision: status.graphRevision,
    transition: status.transition,
    from: status.state,
    to: status.state,
    desired,
    events: [],
    path: status.pathSummary,
    generation: status.observedGeneration,
  };
  if (ACTION_TYPES.has(type)) base.operation = operation === undefined ? undefined : operationSummary(operation);
  return base;
}

/** What an event says of an operation. */
export function operationSummary(operation: OperationStatus): NonNullable<LifecycleEventData['operation']> {
  const out: NonNullable<LifecycleEventData['operation']> = { id: operation.id, node: operation.node, phase: operation.phase };
  if (operation.message !== undefined) out.message = operation.message;
  return out;
}

/** The events `emitted` stands for, in full (sequence, time and data as they were emitted). */
function expand(status: LifecycleStatus & { emitted: EmittedEvents }, graph: string): OutboxEntry[] {
  const { emitted } = status;
  const first = status.sequence - emitted.events.length + 1;
  return emitted.events.map((event, i) => {
    const type = TYPE_PREFIX + event.type;
    const base = baseData(status, graph, emitted.desired, type);
    const delta = event.data ?? {};
    const data: Record<string, unknown> = {};
    for (const field of Object.keys(base)) {
      const value = field in delta ? delta[field] : base[field];
      if (value !== undefined) data[field] = value;
    }
    for (const [field, value] of Object.entries(delta)) if (!(field in base)) data[field] = value;
    return { sequence: first + i, type, time: emitted.time, subject: event.subject ?? status.state, data };
  });
}

/** Every event a status holds, in sequence order: its outbox, then the events of its own write. */
export function statusEvents(status: LifecycleStatus, graph: string): OutboxEntry[] {
  const outbox = status.outbox ?? [];
  return status.emitted === undefined ? outbox : [...outbox, ...expand({ ...status, emitted: status.emitted }, graph)];
}

/** The highest sequence of the events a status holds (those of `statusEvents`), without reading them; 0: none. */
export function newestEventSequence(status: LifecycleStatus): number {
  let newest = status.emitted === undefined ? 0 : status.sequence;
  for (const entry of status.outbox ?? []) newest = Math.max(newest, entry.sequence);
  return newest;
}

/**
 * `status` (without `outbox` and `emitted`) as written with `earlier` (events of earlier writes not yet
 * delivered, in full) and `added` (this write's, numbered up to status.sequence, all at `time`). The
 * added events are kept short when they read back exactly; otherwise they join the outbox in full.
 */
export function withEvents(
  status: Omit<LifecycleStatus, 'outbox' | 'emitted'>,
  earlier: readonly OutboxEntry[],
  added: readonly OutboxEntry[],
  graph: string,
  desired: string,
): LifecycleStatus {
  const written: LifecycleStatus = { ...status };
  const short = added.length > 0 ? shorten(written, added, graph, desired) : undefined;
  const outbox = short === undefined ? [...earlier, ...added] : [...earlier];
  if (outbox.length > 0) written.outbox = outbox;
  if (short !== undefined) written.emitted = short;
  return written;
}

function shorten(status: LifecycleStatus, added: readonly OutboxEntry[], graph: string, desired: string): EmittedEvents | undefined {
  const time = added[0]!.time;
  const events = added.map((entry): EmittedEvent => {
    const base = baseData(status, graph, desired, entry.type);
    const event: EmittedEvent = { type: entry.type.startsWith(TYPE_PREFIX) ? entry.type.slice(TYPE_PREFIX.length) : entry.type };
    if (entry.subject !== status.state) event.subject = entry.subject;
    const delta = Object.fromEntries(Object.entries(entry.data).filter(([field, value]) => !(field in base) || !sameJson(value, base[field])));
    if (Object.keys(delta).length > 0) event.data = delta;
    return event;
  });
  const emitted: EmittedEvents = { time, desired, events };
  // Exactly what was emitted or nothing: a field the status cannot say (an absent base field, another
  // time, a sequence gap) keeps the events in full.
  const readBack = expand({ ...status, emitted }, graph);
  return sameJson(readBack, added) ? emitted : undefined;
}

/**
 * `status` with more events of its own write (a write outside the step: the objects' apply), numbered
 * after its sequence: those of earlier writes delivered up to `delivered` leave it, the rest stay.
 */
export function withMoreEvents(
  status: LifecycleStatus,
  delivered: number,
  graph: string,
  desired: string,
  added: readonly Omit<OutboxEntry, 'sequence'>[],
): LifecycleStatus {
  if (added.length === 0) return status;
  const earlier = statusEvents(status, graph).filter((entry) => entry.sequence > delivered);
  const { outbox: _outbox, emitted: _emitted, ...rest } = status;
  const numbered = added.map((entry, i): OutboxEntry => ({ ...entry, sequence: status.sequence + 1 + i }));
  return withEvents({ ...rest, sequence: status.sequence + added.length }, earlier, numbered, graph, desired);
}
