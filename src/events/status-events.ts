// The lifecycle events a CR's status holds: the outbox (events of earlier writes not yet delivered
// when the next write was made, in full) and `emitted`, the events of the write that holds it, kept
// as what they add to that status. Most of an event's data is the status it was written with (graph
// revision, transition, nodes, path, generation), so a write's events cost a few bytes each; once
// they are delivered they go with the next write, and at rest nothing but that short record stays.
import type { EmittedEvents, LifecycleStatus, OutboxEntry } from '../kube/lifecycle-resource.ts';

/** Every lifecycle event type starts so; `emitted` keeps only the rest. */
const TYPE_PREFIX = 'dev.okt.lifecycle.';
/** The data fields every event has, in the order events carry them; the rest follow in their own order. */
const BASE_FIELDS = ['graph', 'graphRevision', 'transition', 'from', 'to', 'desired', 'events', 'path', 'generation'] as const;

type EmittedEvent = EmittedEvents['events'][number];

/** The data every event of a write shares unless it says otherwise: read from the status of that write. */
function baseData(status: LifecycleStatus, graph: string, desired: string): Record<string, unknown> {
  return {
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
}

const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);

/** The events `emitted` stands for, in full (sequence, time and data as they were emitted). */
function expand(status: LifecycleStatus & { emitted: EmittedEvents }, graph: string): OutboxEntry[] {
  const { emitted } = status;
  const base = baseData(status, graph, emitted.desired);
  const first = status.sequence - emitted.events.length + 1;
  return emitted.events.map((event, i) => {
    const delta = event.data ?? {};
    const data: Record<string, unknown> = {};
    for (const field of BASE_FIELDS) {
      const value = field in delta ? delta[field] : base[field];
      if (value !== undefined) data[field] = value;
    }
    for (const [field, value] of Object.entries(delta)) if (!(BASE_FIELDS as readonly string[]).includes(field)) data[field] = value;
    return { sequence: first + i, type: TYPE_PREFIX + event.type, time: emitted.time, subject: event.subject ?? status.state, data };
  });
}

/** Every event a status holds, in sequence order: its outbox, then the events of its own write. */
export function statusEvents(status: LifecycleStatus, graph: string): OutboxEntry[] {
  const outbox = status.outbox ?? [];
  return status.emitted === undefined ? outbox : [...outbox, ...expand({ ...status, emitted: status.emitted }, graph)];
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
  const base = baseData(status, graph, desired);
  const events = added.map((entry): EmittedEvent => {
    const event: EmittedEvent = { type: entry.type.startsWith(TYPE_PREFIX) ? entry.type.slice(TYPE_PREFIX.length) : entry.type };
    if (entry.subject !== status.state) event.subject = entry.subject;
    const delta = Object.fromEntries(Object.entries(entry.data).filter(([field, value]) => !(field in base) || !same(value, base[field])));
    if (Object.keys(delta).length > 0) event.data = delta;
    return event;
  });
  const emitted: EmittedEvents = { time, desired, events };
  // Exactly what was emitted or nothing: a field the status cannot say (an absent base field, another
  // time, a sequence gap) keeps the events in full.
  const readBack = expand({ ...status, emitted }, graph);
  return same(readBack, added) ? emitted : undefined;
}
