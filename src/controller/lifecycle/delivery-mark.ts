// What a leader knows of its deliveries, carried in the Lease it renews anyway: a time before which
// every lifecycle event committed is known delivered. A CR at rest keeps its last write's events in
// status (the status is its outbox); without the mark, every new leader would send them all again.
// With it, a new leader skips the events committed before the mark its predecessor left: no write
// per delivery, only the renewals that happen anyway (every retry period).
import type { LeaseRecord } from '../leader-election.ts';

/** The Lease annotation: an RFC 3339 time; every lifecycle event committed before it was delivered. */
export const EVENTS_DELIVERED_BEFORE = 'okt.dev/events-delivered-before';

/** What this process has not delivered yet: the commit time (ms) of its oldest undelivered event. */
export interface UndeliveredEvents {
  oldestUndeliveredTime(): number | undefined;
}

export class DeliveryMark implements LeaseRecord {
  readonly #events: UndeliveredEvents;
  readonly #now: () => number;
  /** The previous holder's mark; undefined: none, or not leading yet. */
  #inherited: number | undefined;
  #leading = false;
  /** Every cached CR was looked at since leading began: what the previous holder left undelivered is queued here. */
  #caughtUp = false;
  /** The CRs each source (one per kind) caches, and those looked at since leading began. */
  readonly #sources = new Map<string, { cached: () => Iterable<string>; lookedAt: Set<string> }>();
  /** Per CR, the earliest commit time of status writes under way or whose outcome is unknown (their events are not offered yet). */
  readonly #writes = new Map<string, number>();

  constructor(events: UndeliveredEvents, now: () => number = Date.now) {
    this.#events = events;
    this.#now = now;
  }

  /** A source of CRs (one kind's cache, by key) that must all be looked at before the mark may pass the inherited one. */
  track(source: string, cached: () => Iterable<string>): void {
    this.#sources.set(source, { cached, lookedAt: new Set() });
  }

  /** The CR's stored events were offered (or found delivered). */
  lookedAt(source: string, key: string): void {
    if (this.#leading && !this.#caughtUp) this.#sources.get(source)?.lookedAt.add(key);
  }

  /** Events committed before this time (ms) were delivered by an earlier leader. */
  get deliveredBefore(): number | undefined {
    return this.#inherited;
  }

  /**
   * A reconcile of `key` may commit events at `time`: the mark stays below it until `settled(key)`. A
   * write that failed may still have been committed (a timeout, an API server restarting), so only a
   * reconcile that ends well settles the CR: its events are then offered, or there were none.
   */
  hold(key: string, time: string): void {
    const at = Date.parse(time);
    this.#writes.set(key, Math.min(this.#writes.get(key) ?? at, at));
  }

  /** A reconcile of `key` ended well, or the CR is gone. */
  settled(key: string): void {
    this.#writes.delete(key);
  }

  acquired(annotations: Readonly<Record<string, string>>): void {
    const mark = Date.parse(annotations[EVENTS_DELIVERED_BEFORE] ?? '');
    this.#inherited = Number.isNaN(mark) ? undefined : mark;
    this.#leading = true;
    this.#caughtUp = false;
    for (const source of this.#sources.values()) source.lookedAt.clear();
  }

  annotations(current: Readonly<Record<string, string>>): Record<string, string> {
    const carried = current[EVENTS_DELIVERED_BEFORE];
    // Acquiring: the previous holder's mark stays until this process knows better.
    if (!this.#leading) return carried === undefined ? {} : { [EVENTS_DELIVERED_BEFORE]: carried };
    let mark = Math.min(this.#now(), this.#events.oldestUndeliveredTime() ?? Infinity, ...this.#writes.values());
    if (!this.#isCaughtUp()) {
      // CRs not looked at yet may hold events the previous holder committed after its mark.
      if (this.#inherited === undefined) return {};
      mark = Math.min(mark, this.#inherited);
    }
    return { [EVENTS_DELIVERED_BEFORE]: new Date(mark).toISOString() };
  }

  #isCaughtUp(): boolean {
    if (this.#caughtUp) return true;
    for (const { cached, lookedAt } of this.#sources.values()) {
      for (const key of cached()) if (!lookedAt.has(key)) return false;
    }
    this.#caughtUp = true;
    for (const source of this.#sources.values()) source.lookedAt.clear();
    return true;
  }
}
