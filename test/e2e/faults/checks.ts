// What must hold after a fault-injection run, whatever the faults were. A CR's status and events are
// read in the names of the graph revision that wrote them (graph.revision; see
// test/fixtures/database-revisions.ts): the operator may have been rolled to another one mid-walk.
import { expect } from 'vitest';
import { fateOf, type Graph, type GraphNode } from '../../../src/graph/index.ts';
import { LIFECYCLE_EVENT_TYPES, lifecycleEventId, type LifecycleEvent } from '../../../src/events/index.ts';
import { resolveDesired } from '../../../src/plan/index.ts';
import type { Operation } from '../../../src/sidecar-client/protocol.ts';
import { databaseGraphAt } from '../../fixtures/database-revisions.ts';
import { conditionOf, type DatabaseObject } from '../helpers/lifecycle.ts';

/** The graph of the revision the CR is on. */
function graphOf(db: DatabaseObject): Graph {
  return databaseGraphAt(db.status?.graphRevision);
}

/**
 * The name a node of an earlier revision has in `graph`: its own or its new one (kept, renamed); a
 * removed node keeps its old name, as a migration leaves it in status.path.
 */
function nameIn(graph: Graph, name: string): string {
  const fate = fateOf(graph, name);
  return fate.kind === 'kept' || fate.kind === 'renamed' ? fate.node : name;
}

/** A node as status.path names it: of `graph`, or, removed there, of the earlier revision that had it. */
function nodeAt(graph: Graph, name: string): GraphNode {
  const holder = [graph, ...graph.previous].find((g) => g.has(name));
  if (holder === undefined) throw new Error(`node ${name} is in no revision of graph "${graph.name}" (${graph.revision})`);
  return holder.node(name);
}

/**
 * Whether `from` -> `to`, as status.path names them in `graph`'s words, is a transition: an edge of
 * `graph`, an edge of an earlier revision it serves, or the move a migration makes from a removed
 * node to the node its CRs go to.
 */
function isTransition(graph: Graph, from: string, to: string): boolean {
  const fate = fateOf(graph, from);
  if (fate.kind === 'moved' && fate.node === to) return true;
  return [graph, ...graph.previous].some((g) => g.nodeNames.some((n) => nameIn(graph, n) === from && g.node(n).children.some((c) => nameIn(graph, c) === to)));
}

/** The CR sits at its desired node (spec.desiredState may hold a former name of it) and says so for its current spec. */
export function isSettledAt(db: DatabaseObject, desired: string): boolean {
  const status = db.status;
  if (db.spec.desiredState !== desired || status?.state === undefined) return false;
  const target = resolveDesired(graphOf(db), desired);
  return 'node' in target && status.state === target.node && conditionOf(db, 'Ready')?.status === 'True' && status.observedGeneration === db.metadata.generation;
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
  /** Migrated events: one per change of graph revision. */
  migrations: number;
}

/**
 * The CR's stream: sequences 1..status.sequence, none missing, none beyond; first deliveries in order;
 * a redelivery only with the same id and the same content; the transition events' `to`, in sequence
 * order and in the names of the CR's revision, are status.path[1..]. Each event names a node of the
 * revision it says the CR was on; the revision changes only at a migrated event, which says from
 * which revision and node to which (the node's fate in the new revision), and ends at status.graphRevision.
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
  const stream = expected.map((n) => first.get(n)!);
  const migrations = checkRevisions(db, stream);
  const graph = graphOf(db);
  const transitions = stream.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.transition);
  const named = transitions.map((e) => (e.data.graphRevision === graph.revision ? e.data.to : nameIn(graph, e.data.to)));
  expect(named, `${name}: the transition events' \`to\` (in revision ${graph.revision}'s names) against status.path`).toEqual(status.path.slice(1));
  expect(transitions.map((e) => e.data.transition), `${name}: transition numbers`).toEqual(Array.from({ length: status.transition }, (_, i) => i + 1));
  return { events: first.size, redeliveries, migrations };
}

/** The revisions a CR's stream (first deliveries, in sequence order) went through; returns its migrated events. */
function checkRevisions(db: DatabaseObject, stream: readonly LifecycleEvent[]): number {
  const name = db.metadata.name;
  // A status written with no event yet (waiting at the entry for the sidecar) may be migrated first.
  const opening = stream[0];
  let revision = opening?.type === LIFECYCLE_EVENT_TYPES.migrated ? opening.data.migration?.fromRevision ?? undefined : opening?.data.graphRevision;
  let state = databaseGraphAt(revision).entry;
  let migrations = 0;
  for (const event of stream) {
    const { graphRevision, to } = event.data;
    const what = `${name}: event ${Number(event.sequence)} (${event.type})`;
    expect(databaseGraphAt(graphRevision).has(to), `${what}: node ${to} in the revision it names, ${graphRevision}`).toBe(true);
    if (event.type === LIFECYCLE_EVENT_TYPES.migrated) {
      expect(graphRevision, `${what}: a migration changes the revision`).not.toBe(revision);
      const fate = fateOf(databaseGraphAt(graphRevision), state);
      expect('node' in fate, `${what}: ${state} has a place in revision ${graphRevision}`).toBe(true);
      expect(event.data.migration, what).toEqual({ fromRevision: revision, toRevision: graphRevision, fromState: state, toState: 'node' in fate ? fate.node : undefined, kind: fate.kind });
      migrations += 1;
    } else {
      expect(graphRevision, `${what}: the revision changes only at a migrated event`).toBe(revision);
    }
    revision = graphRevision;
    if (event.type === LIFECYCLE_EVENT_TYPES.transition) state = to;
  }
  if (stream.length > 0) expect(revision, `${name}: the revision of its last event`).toBe(db.status!.graphRevision);
  return migrations;
}

export interface OperationTally {
  operations: number;
  /** Operations started again after a sidecar crash or memory loss interrupted them (declared idempotent). */
  reruns: number;
  /** Failed actions run again under a new operation id (spec.retry). */
  retried: number;
}

/** What the sidecar under test knows of reruns: crashes that found an operation unfinished, and losses of memory it may have been re-run after. */
export interface RerunAllowance {
  interruptions: ReadonlyMap<string, number>;
  mayRerun: ReadonlyMap<string, number>;
  /** Operations a memory loss touched: the attempts its lost journal counted are not known any more. */
  forgotten: ReadonlySet<string>;
  /** Whether the actions are declared idempotent (only then may an operation run again). */
  idempotent: boolean;
  /**
   * How many times the sidecar lost its memory: an operation committed with the old epoch after the
   * last look but never started there is re-run (attempt + 1) by the new one, which no journal shows.
   */
  memoryLosses: number;
}

/**
 * Each committed transition into a node with an action has its operations `${uid}-${n}`, then
 * `${uid}-${n}.${k}` for each retry of a failure: every one Failed (or, not idempotent and lost with a
 * journal, left unfinished there) but the last, which Succeeded. An idempotent one is attempted once,
 * plus once per sidecar crash that interrupted it (after a memory loss, at least once and at most once
 * more per crash or loss, as the lost journal's count is gone), and ran at most once per attempt; one
 * not declared idempotent ran at most once, whatever happened. No operation exists for a transition
 * never committed.
 */
export function checkOperations(
  db: DatabaseObject,
  operations: ReadonlyMap<string, Operation>,
  runs: ReadonlyMap<string, number>,
  allowance: RerunAllowance,
): OperationTally {
  const { uid, name } = db.metadata;
  const status = db.status!;
  const graph = graphOf(db);
  expect(status.path.length, `${name}: path length against transition`).toBe(status.transition + 1);
  const expected: string[] = [];
  let rerunsTotal = 0;
  let retried = 0;
  for (let n = 1; n <= status.transition; n++) {
    const node = status.path[n]!;
    expect(isTransition(graph, status.path[n - 1]!, node), `${name}: transition ${n}, ${status.path[n - 1]} -> ${node}`).toBe(true);
    if (!nodeAt(graph, node).hasAction) continue;
    // The first run and its retries; one not declared idempotent that its sidecar lost before the start
    // reached it is in no journal, so the highest retry tells how many there were.
    const retries = Math.max(0, ...[...operations.keys()].filter((id) => id.startsWith(`${uid}-${n}.`)).map((id) => Number(id.slice(`${uid}-${n}.`.length))));
    const ids = Array.from({ length: retries + 1 }, (_, k) => (k === 0 ? `${uid}-${n}` : `${uid}-${n}.${k}`));
    retried += retries;
    ids.forEach((id, k) => {
      const operation = operations.get(id);
      const last = k === ids.length - 1;
      const interrupted = allowance.interruptions.get(id) ?? 0;
      const maybe = allowance.mayRerun.get(id) ?? 0;
      const forgotten = allowance.forgotten.has(id);
      const why = `${name}: operation ${id} (${node}; interrupted ${interrupted} times, forgotten ${maybe} more, ${allowance.idempotent ? '' : 'not '}idempotent)`;
      // Committed (with an epoch about to be lost, possibly after the memory loss was counted), and that
      // sidecar lost before the start reached it: no journal ever had it (not idempotent: Interrupted, then retried).
      if (operation === undefined && !last && !allowance.idempotent && (forgotten || allowance.memoryLosses > 0)) {
        expect(runs.get(id) ?? 0, `${why}: runs`).toBe(0);
        return;
      }
      expected.push(id);
      // A retried one failed; or its sidecar lost it (not idempotent): the operator could not know how it
      // ended, and the lost journal says whatever it had got to.
      if (last) expect(operation?.phase, why).toBe('Succeeded');
      else if (!(forgotten && !allowance.idempotent)) expect(operation?.phase, why).toBe('Failed');
      // The sidecar keeps the name the action was started under: a renamed node's operation has its old one.
      expect(operation === undefined ? undefined : nameIn(graph, operation.node), why).toBe(node);
      // Runs again only when declared idempotent, and only once per crash or memory loss that left its fate unknown.
      const reruns = allowance.idempotent ? interrupted + maybe : 0;
      const ran = runs.get(id) ?? 0;
      // A crash between the journal's acceptance and the action's start interrupts an action that never ran.
      expect(ran, `${why}: runs`).toBeGreaterThanOrEqual(last || interrupted + maybe === 0 ? 1 : 0);
      expect(ran, `${why}: runs`).toBeLessThanOrEqual(1 + reruns);
      if (allowance.idempotent) {
        expect(operation?.attempts, `${why}: attempts`).toBeGreaterThanOrEqual(forgotten ? 1 : 1 + interrupted);
        expect(operation?.attempts, `${why}: attempts`).toBeLessThanOrEqual(1 + interrupted + maybe + allowance.memoryLosses);
      } else {
        expect(operation?.attempts, `${why}: attempts`).toBeLessThanOrEqual(1);
      }
      rerunsTotal += Math.max(ran - 1, 0);
    });
  }
  const ofThisCr = [...operations.keys()].filter((id) => id.startsWith(`${uid}-`)).sort();
  expect(ofThisCr, `${name}: operations on the sidecar against committed transitions`).toEqual(expected.sort());
  return { operations: expected.length, reruns: rerunsTotal, retried };
}

/** Ready=True only over a succeeded action (or none): status and conditions are written together, so this holds in every read. */
export function readyOverFailure(db: DatabaseObject): string | undefined {
  if (conditionOf(db, 'Ready')?.status !== 'True') return undefined;
  const operation = db.status?.operation;
  if (operation === undefined || operation.phase === 'Succeeded') return undefined;
  return `${db.metadata.name}: Ready=True over operation ${operation.id} ${operation.phase} at ${db.status?.state}`;
}

/** The nodes deletion walks from `from` in `graph`: each node's deletion child (its onDelete, else its default child; none from the entry node without onDelete), to the end. */
export function deletionPath(graph: Graph, from: string): string[] {
  const path: string[] = [];
  for (let at = graph.node(from); at.deletionChild !== undefined; at = graph.node(at.deletionChild)) path.push(at.deletionChild);
  return path;
}

/**
 * After a CR rested at `before` (its last status) was deleted and is gone: its stream holds every
 * sequence up to the last without a gap, the transitions after `before.transition` walk exactly the
 * deletion path, and exactly the actions of that path ran, once each, and succeeded.
 */
export function checkDeletion(before: DatabaseObject, events: readonly LifecycleEvent[], operations: ReadonlyMap<string, Operation>, runs: ReadonlyMap<string, number>): number {
  const { uid, name } = before.metadata;
  const status = before.status!;
  const sequences = [...new Set(events.map((e) => Number(e.sequence)))].sort((a, b) => a - b);
  expect(sequences, `${name}: every event up to the last, after its deletion`).toEqual(sequences.map((_, i) => i + 1));
  const graph = graphOf(before);
  const path = deletionPath(graph, status.state);
  const walked = events
    .filter((e) => e.type === LIFECYCLE_EVENT_TYPES.transition && (e.data.transition as number) > status.transition)
    .sort((a, b) => Number(a.sequence) - Number(b.sequence));
  expect([...new Map(walked.map((e) => [e.data.transition, e.data.to])).values()], `${name}: deleted at ${status.state}, the path it was driven down`).toEqual(path);
  const expected = path.flatMap((node, i) => (graph.node(node).hasAction ? [`${uid}-${status.transition + i + 1}`] : []));
  const after = [...operations.keys()].filter((id) => id.startsWith(`${uid}-`) && Number(id.slice(uid.length + 1).split('.')[0]) > status.transition).sort();
  expect(after, `${name}: the operations of its deletion`).toEqual(expected.sort());
  for (const id of expected) {
    expect(operations.get(id)?.phase, `${name}: deletion operation ${id}`).toBe('Succeeded');
    expect(runs.get(id), `${name}: runs of deletion operation ${id}`).toBe(1);
  }
  return walked.length;
}

/** An object okt made, as a LIST by its labels finds it. */
export interface LabelledObject {
  kind: string;
  name: string;
  /** Its labels okt.dev/owner-uid and okt.dev/object-id. */
  ownerUid: string;
  objectId: string;
  /** The uid its controller owner reference names (none: disowned). */
  controllerUid: string | undefined;
}

/**
 * No orphan, no duplicate: every object labelled with a CR's uid belongs to a live CR, is in that CR's
 * inventory (status.objects, by kind and name) and is controlled by it; no CR has two objects of one
 * declaration. Returns how many objects were checked.
 */
export function checkNoOrphans(crs: readonly DatabaseObject[], objects: readonly LabelledObject[]): number {
  const byUid = new Map(crs.map((cr) => [cr.metadata.uid, cr]));
  const orphans = objects.filter((o) => {
    const cr = byUid.get(o.ownerUid);
    return cr === undefined || o.controllerUid !== o.ownerUid || !(cr.status?.objects ?? []).some((e) => e.kind === o.kind && e.name === o.name);
  });
  expect(orphans.map((o) => `${o.kind} ${o.name} (object "${o.objectId}" of ${o.ownerUid})`), 'objects okt made that no live CR\'s inventory holds (orphans)').toEqual([]);
  const seen = new Set<string>();
  const duplicates = objects.filter((o) => seen.size === seen.add(`${o.ownerUid} ${o.objectId}`).size);
  expect(duplicates.map((o) => `${o.kind} ${o.name} (object "${o.objectId}" of ${o.ownerUid})`), 'a second object of one declaration of one CR (duplicates)').toEqual([]);
  return objects.length;
}

/** After every CR is gone: nothing okt made is left but objects of `kept` declarations (deletion: Keep), each disowned. Returns how many were kept. */
export function checkLeftAfterDeletion(objects: readonly LabelledObject[], kept: ReadonlySet<string>): number {
  const left = objects.filter((o) => !kept.has(o.objectId) || o.controllerUid !== undefined);
  expect(left.map((o) => `${o.kind} ${o.name} (object "${o.objectId}", controller ${o.controllerUid ?? 'none'})`), 'objects with okt\'s labels left after every CR is gone (but kept ones, disowned)').toEqual([]);
  return objects.length;
}
