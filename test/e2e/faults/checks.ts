// What must hold after a fault-injection run, whatever the faults were.
import { expect } from 'vitest';
import { databaseGraph } from '../../../graphs/database.ts';
import { LIFECYCLE_EVENT_TYPES, lifecycleEventId, type LifecycleEvent } from '../../../src/events/index.ts';
import type { Operation } from '../../../src/sidecar-client/protocol.ts';
import { conditionOf, type DatabaseObject } from '../helpers/lifecycle.ts';

/** The CR sits at its desired node and says so for its current spec. */
export function isSettledAt(db: DatabaseObject, desired: string): boolean {
  return (
    db.spec.desiredState === desired &&
    db.status?.state === desired &&
    conditionOf(db, 'Ready')?.status === 'True' &&
    db.status.observedGeneration === db.metadata.generation
  );
}

/** Events of one CR by sequence (redeliveries included), in arrival order. */
export function eventsByUid(received: readonly LifecycleEvent[]): Map<string, LifecycleEvent[]> {
  const byUid = new Map<string, LifecycleEvent[]>();
  for (const event of received) {
    const list = byUid.get(event.partitionkey) ?? [];
    list.push(event);
    byUid.set(event.partitionkey, list);
  }
  return byUid;
}

/** Whether the sink has every event 1..status.sequence of the CR. */
export function hasAllEvents(db: DatabaseObject, byUid: Map<string, LifecycleEvent[]>): boolean {
  const got = new Set((byUid.get(db.metadata.uid) ?? []).map((e) => Number(e.sequence)));
  for (let n = 1; n <= (db.status?.sequence ?? 0); n++) if (!got.has(n)) return false;
  return true;
}

/** What a redelivery must repeat exactly (traceparent may differ: it is the trace of the reconcile that offered it). */
function content(event: LifecycleEvent): string {
  const { id, source, type, subject, time, dataschema, sequence, partitionkey, data } = event;
  return JSON.stringify({ id, source, type, subject, time, dataschema, sequence, partitionkey, data });
}

export interface EventTally {
  events: number;
  redeliveries: number;
}

/**
 * The CR's stream: sequences 1..status.sequence, none missing, none beyond; first deliveries in order;
 * a redelivery only with the same id and the same content; the transition events' `to`, in sequence
 * order, are status.path[1..].
 */
export function checkEvents(db: DatabaseObject, events: readonly LifecycleEvent[]): EventTally {
  const name = db.metadata.name;
  const status = db.status!;
  const first = new Map<number, LifecycleEvent>();
  const firstOrder: number[] = [];
  let redeliveries = 0;
  for (const event of events) {
    const sequence = Number(event.sequence);
    expect(event.id, `${name}: the id of event ${sequence}`).toBe(lifecycleEventId(db.metadata.uid, sequence));
    const earlier = first.get(sequence);
    if (earlier === undefined) {
      first.set(sequence, event);
      firstOrder.push(sequence);
    } else {
      redeliveries += 1;
      expect(content(event), `${name}: a redelivery of event ${sequence} differs from the first delivery`).toBe(content(earlier));
    }
  }
  const expected = Array.from({ length: status.sequence }, (_, i) => i + 1);
  expect([...first.keys()].sort((a, b) => a - b), `${name}: the sequences received (status.sequence = ${status.sequence})`).toEqual(expected);
  expect(firstOrder, `${name}: first deliveries in sequence order`).toEqual(expected);
  const transitions = expected.map((n) => first.get(n)!).filter((e) => e.type === LIFECYCLE_EVENT_TYPES.transition);
  expect(transitions.map((e) => e.data.to), `${name}: the transition events' \`to\` against status.path`).toEqual(status.path.slice(1));
  expect(transitions.map((e) => e.data.transition), `${name}: transition numbers`).toEqual(Array.from({ length: status.transition }, (_, i) => i + 1));
  return { events: first.size, redeliveries };
}

export interface OperationTally {
  operations: number;
  /** Operations the sidecar started again after a crash interrupted them (declared idempotent). */
  reruns: number;
}

/**
 * Each committed transition into a node with an action has exactly one operation `${uid}-${n}`, which
 * succeeded; it was attempted once, plus once per sidecar crash that interrupted it; its action ran
 * once, or (interrupted) at most once per attempt. No operation exists for a transition never committed.
 */
export function checkOperations(
  db: DatabaseObject,
  operations: ReadonlyMap<string, Operation>,
  runs: ReadonlyMap<string, number>,
  interruptions: ReadonlyMap<string, number>,
): OperationTally {
  const { uid, name } = db.metadata;
  const status = db.status!;
  expect(status.path.length, `${name}: path length against transition`).toBe(status.transition + 1);
  const expected: string[] = [];
  let reruns = 0;
  for (let n = 1; n <= status.transition; n++) {
    const node = status.path[n]!;
    expect(databaseGraph.node(status.path[n - 1] as never).children, `${name}: transition ${n}`).toContain(node);
    if (!databaseGraph.node(node as never).hasAction) continue;
    const id = `${uid}-${n}`;
    expected.push(id);
    const operation = operations.get(id);
    expect(operation?.phase, `${name}: operation ${id} (${node})`).toBe('Succeeded');
    expect(operation?.node, `${name}: operation ${id}`).toBe(node);
    const interrupted = interruptions.get(id) ?? 0;
    expect(operation?.attempts, `${name}: attempts of ${id} (interrupted ${interrupted} times)`).toBe(1 + interrupted);
    const ran = runs.get(id) ?? 0;
    if (interrupted === 0) expect(ran, `${name}: runs of ${id}`).toBe(1);
    else {
      // A crash between the journal's acceptance and the action's start interrupts an action that never ran.
      expect(ran, `${name}: runs of ${id}, interrupted ${interrupted} times`).toBeGreaterThanOrEqual(1);
      expect(ran, `${name}: runs of ${id}, interrupted ${interrupted} times`).toBeLessThanOrEqual(1 + interrupted);
      reruns += ran - 1;
    }
  }
  const ofThisCr = [...operations.keys()].filter((id) => id.startsWith(`${uid}-`)).sort();
  expect(ofThisCr, `${name}: operations on the sidecar against committed transitions`).toEqual(expected.sort());
  return { operations: expected.length, reruns };
}
