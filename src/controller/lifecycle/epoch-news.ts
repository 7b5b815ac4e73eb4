// Which events a sidecar observed outside any action are a CR's news. In the epoch its status records
// (status.observedEpoch), those after status.observedSequence. An epoch counts its events from 1, so in
// another epoch the CR is offered only events it had a part in:
// - an epoch it read before (this operator remembers where it left it: two replicas behind one Service,
//   a rolling update flipping back) is read on from there;
// - an epoch that began after this operator last heard the recorded one at the same URL is a sidecar
//   that lost its memory since: every event it raised came after the CR's last look, so it is read from
//   its start;
// - any other (one that already existed then: another replica, a rolling update's older Pod; or one at
//   another URL: spec.sidecar.url switched to a sidecar with a life of its own) is read from its current
//   end: what it raised before the CR met it is not news.
// When that cannot be told (the sidecar does not say how old its epoch is, or this operator has not heard
// the recorded epoch there since it started), the epoch is taken as one that had a life: an old event
// taken for news can drive a CR anywhere (to Stopping, say), a missed one only waits for the next.

/** A position in an epoch: events with a greater seq come after it. */
export interface EpochPosition {
  epoch: string;
  seq: number;
}

/** One answer of a sidecar, as far as news goes. */
export interface SidecarAnswer {
  epoch: string;
  /** The sidecar's URL the answer came from. */
  url: string;
  /** When it came, in ms on the operator's own (monotonic) clock. */
  atMs: number;
}

/** One answer of a sidecar's observation. */
export interface ObservationAnswer extends SidecarAnswer {
  /** How old its epoch was when it answered (Observation.epochAgeMs); undefined: it did not say. */
  epochAgeMs: number | undefined;
  /** Its newest event's seq. */
  lastSeq: number;
}

/**
 * Whether the answer's epoch began after `atMs` (both on the operator's clock): `epochAgeMs` is the
 * sidecar's, a duration, so the two machines' clocks are never compared. Unknown either way: false.
 */
export function bornAfter(answer: ObservationAnswer, atMs: number | undefined): boolean {
  if (atMs === undefined || answer.epochAgeMs === undefined) return false;
  return answer.atMs - answer.epochAgeMs > atMs;
}

/** How many epochs' positions are kept per CR (two replicas flipping, a rolling update, a switch and back). */
const REMEMBERED_EPOCHS = 8;

/**
 * Per CR, what this operator remembers of the sidecar epochs it heard: when it last heard the one the
 * CR's status records, and where the CR's news begins in others: where it left an epoch for another, or
 * where it chose to start one it met (kept until the status records it, so that a write lost to a
 * conflict does not choose again later).
 */
export class EpochMemory {
  /** Per CR, the last answer of the epoch it reads events from. */
  readonly #lastHeard = new Map<string, SidecarAnswer>();
  readonly #positions = new Map<string, Map<string, number>>();

  /** An answer (to an observation or of an operation) came for the CR `key`, which reads the events of the epoch `reading`. */
  heard(key: string, reading: string | undefined, answer: SidecarAnswer): void {
    if (answer.epoch === reading) this.#lastHeard.set(key, answer);
  }

  /** The seq after which `answer`'s events are news to the CR `key`, whose status records the position `recorded`. */
  newsAfter(key: string, recorded: EpochPosition, answer: ObservationAnswer): number {
    if (answer.epoch === recorded.epoch) return recorded.seq;
    const positions = this.#positions.get(key) ?? new Map<string, number>();
    this.#positions.set(key, positions);
    remember(positions, recorded.epoch, recorded.seq);
    const known = positions.get(answer.epoch);
    if (known !== undefined) return known;
    const heard = this.#lastHeard.get(key);
    const sameSidecar = heard?.epoch === recorded.epoch && heard.url === answer.url;
    const seq = bornAfter(answer, sameSidecar ? heard.atMs : undefined) ? 0 : answer.lastSeq;
    remember(positions, answer.epoch, seq);
    return seq;
  }

  forget(key: string): void {
    this.#lastHeard.delete(key);
    this.#positions.delete(key);
  }
}

/** Sets an epoch's position as the newest, dropping the oldest beyond REMEMBERED_EPOCHS. */
function remember(positions: Map<string, number>, epoch: string, seq: number): void {
  positions.delete(epoch);
  positions.set(epoch, seq);
  if (positions.size > REMEMBERED_EPOCHS) positions.delete(positions.keys().next().value as string);
}
