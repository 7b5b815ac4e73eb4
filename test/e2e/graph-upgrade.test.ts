// A graph upgraded under live CRs: CRs walk the database graph (revision 1) with a real `okt run` and
// a real sidecar; mid-walk, with actions running, the operator is rolled to revision 2 (Servicing
// renamed Backup, Stopping removed: its CRs go to Draining). What predictMigration says of each CR,
// from its status just before the roll, must be exactly what the operator then does; no action is
// lost or run twice; every CR's event stream stays gapless with one migrated event; every CR ends
// Ready on revision 2 at its desired node.
import { unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { LIFECYCLE_EVENT_TYPES, type LifecycleEvent } from '../../src/events/index.ts';
import { TERMINAL_PHASES } from '../../src/kube/lifecycle-resource.ts';
import { createPlanner, predictMigration, type RecordedPosition } from '../../src/plan/index.ts';
import { databaseRevision2 } from '../fixtures/database-revisions.ts';
import { checkEvents, checkOperations, eventsByUid, hasAllEvents, isSettledAt } from './faults/checks.ts';
import { walkTransitions } from './faults/scenario.ts';
import { OperatorsUnderTest, SidecarUnderTest, SinkUnderTest } from './faults/system.ts';
import { createNamespace, e2eKubeConfig, waitFor } from './helpers/index.ts';
import { conditionOf, databases, installDatabaseCrd, waitForDatabase, type DatabaseObject } from './helpers/lifecycle.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
const v2 = databaseRevision2();
let namespace: string;
let sidecar: SidecarUnderTest;
let sink: SinkUnderTest;
let operators: OperatorsUnderTest;

/**
 * Each CR's walk on revision 1, and on revision 2 after the roll (in revision 1's names: the shared
 * CRD of the e2e files is revision 1's, and spec.desiredState may hold a former name). `held`: the
 * last node before the roll, whose action is held running until the test lets it end.
 */
const WALKS = {
  // Rests at Running: kept; then walks on through Backup, asked for by its former name.
  kept: { before: ['Running', 'Servicing', 'Running'], after: ['Servicing', 'Running'] },
  // Its Servicing action runs across the roll and ends once revision 2 has migrated it.
  renamed: { before: ['Running', 'Servicing', 'Running'], held: 'Servicing', after: ['Running'] },
  // Its Servicing action ends while no operator runs: revision 2 migrates it and sees the end in one step.
  finished: { before: ['Running'], held: 'Servicing', after: [] },
  // Rests at Stopping, which revision 2 removed: it enters Draining by a transition.
  moved: { before: ['Running', 'Stopping'], after: [] },
  // Its Stopping action runs across the roll: it waits on revision 1 until the action ends, then moves.
  waits: { before: ['Running'], held: 'Stopping', after: [] },
} as const satisfies Record<string, { before: readonly string[]; held?: string; after: readonly string[] }>;
type Name = keyof typeof WALKS;
const NAMES = Object.keys(WALKS) as Name[];

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-upgrade');
  // The sidecar has actions under the old names and the new ones before the operator is rolled, as a
  // user would expand its config first and drop the old names only once every CR is migrated and no
  // operation started under them can run again: a sidecar keeps the node name an operation was
  // started under (its journal re-runs an interrupted idempotent action by that name), and an operator
  // re-runs what a sidecar forgot under the name the CR's unmigrated status holds, while revision 2
  // starts new operations under the new names. Swapping the config at the roll refuses one or the
  // other (422: SidecarRefused, asked again a minute later).
  // An action waits while the file hold-<uid> of its CR exists, so the test says when it ends.
  sidecar = await SidecarUnderTest.start({
    idempotent: false,
    graphs: [databaseGraph, v2],
    script: 'while [ -e "hold-${OKT_OPERATION_ID%-*}" ]; do sleep 0.05; done; sleep 0.05',
  });
  sink = await SinkUnderTest.start();
  operators = new OperatorsUnderTest({ kc, namespace, sidecar, sink, replicas: 1 });
});
afterAll(async () => {
  await operators?.stop();
  await sidecar?.stop();
  await sink?.close();
});

const holdFile = (db: DatabaseObject) => path.join(sidecar.dir, `hold-${db.metadata.uid}`);

/** Sets the CR's desired node and waits until it rests there (Ready, on the revision it is on). */
async function moveTo(name: Name, desired: string): Promise<DatabaseObject> {
  await api.patchSpec(namespace, name, { desiredState: desired });
  return waitForDatabase(kc, namespace, name, `Ready at ${desired}`, (db) => isSettledAt(db, desired), 30_000);
}

/** Whether the CR's current operation is an action of `node` that the sidecar runs right now. */
function runs(db: DatabaseObject, node: string): boolean {
  const operation = db.status?.operation;
  return operation?.node === node && !TERMINAL_PHASES.has(operation.phase) && sidecar.unfinished().includes(operation.id);
}

/** The CR's events, first deliveries in sequence order. */
function streamOf(db: DatabaseObject): LifecycleEvent[] {
  const first = new Map<number, LifecycleEvent>();
  for (const event of eventsByUid(sink.received).get(db.metadata.uid) ?? []) if (!first.has(Number(event.sequence))) first.set(Number(event.sequence), event);
  return [...first.values()].sort((a, b) => Number(a.sequence) - Number(b.sequence));
}

/** Where the CR stands for predictMigration, from its status and spec. */
function positionOf(db: DatabaseObject): RecordedPosition {
  const operation = db.status!.operation;
  return {
    revision: db.status!.graphRevision,
    state: db.status!.state,
    desired: db.spec.desiredState,
    runningAction: operation !== undefined && !TERMINAL_PHASES.has(operation.phase) ? operation.node : undefined,
  };
}

test('CRs mid-walk, actions running, the operator rolled to revision 2: what predictMigration said happened, nothing lost or run twice, every stream gapless, all Ready on revision 2', async () => {
  const created = new Map<Name, DatabaseObject>();
  for (const name of NAMES) created.set(name, await api.create(namespace, name, { desiredState: WALKS[name].before[0], onLeaf: 'Keep' }));
  const crOf = (name: Name) => created.get(name)!;

  // Revision 1: each CR walks to where the roll finds it; a held action is running.
  await Promise.all(NAMES.map(async (name) => {
    const walk: { before: readonly string[]; held?: string } = WALKS[name];
    for (const desired of walk.before) await moveTo(name, desired);
    const held = walk.held;
    if (held === undefined) return;
    writeFileSync(holdFile(crOf(name)), '');
    await api.patchSpec(namespace, name, { desiredState: held });
    await waitForDatabase(kc, namespace, name, `its ${held} action running`, (db) => runs(db, held), 30_000);
  }));

  // Just before the roll: what revision 2 will do to each CR.
  const before = new Map<Name, DatabaseObject>();
  for (const name of NAMES) before.set(name, await api.get(namespace, name));
  const planner = createPlanner(v2);
  const predicted = new Map(NAMES.map((name) => [name, predictMigration(v2, planner, positionOf(before.get(name)!))]));
  for (const name of NAMES) expect(before.get(name)!.status?.graphRevision, name).toBe(databaseGraph.revision);
  // The kinds this test means to exercise: kept, renamed with a running action (twice), moved, waits.
  expect(Object.fromEntries(predicted)).toEqual({
    kept: { kind: 'migrates', state: { kind: 'kept', node: 'Running' }, desired: 'Running' },
    renamed: { kind: 'migrates', state: { kind: 'renamed', node: 'Backup' }, desired: 'Backup', operation: { from: 'Servicing', to: 'Backup' } },
    finished: { kind: 'migrates', state: { kind: 'renamed', node: 'Backup' }, desired: 'Backup', operation: { from: 'Servicing', to: 'Backup' } },
    moved: { kind: 'migrates', state: { kind: 'moved', node: 'Draining' }, desired: 'Draining' },
    waits: { kind: 'waits', reason: expect.stringContaining('the action of Stopping still runs') },
  });
  const heldOperation = (name: Name) => before.get(name)!.status!.operation!.id;

  const rolledAt = Date.now();
  await operators.roll(v2, async () => {
    unlinkSync(holdFile(crOf('finished')));
    await waitFor('the held Servicing action to end while no operator runs', async () => (sidecar.operations().get(heldOperation('finished'))?.phase === 'Succeeded' ? true : undefined), 30_000);
  });

  // Revision 2: the renamed CR's action, still running, goes on under Backup with its operation id.
  const migrated = await waitForDatabase(kc, namespace, 'renamed', 'migrated, its action running', (db) => db.status?.graphRevision === v2.revision, 30_000);
  expect(migrated.status).toMatchObject({ state: 'Backup', transition: before.get('renamed')!.status!.transition, operation: { id: heldOperation('renamed'), node: 'Backup' } });
  expect(runs(migrated, 'Backup'), 'its action still runs').toBe(true);
  expect(conditionOf(migrated, 'Ready')).toMatchObject({ status: 'False', reason: 'ActionRunning' });
  unlinkSync(holdFile(crOf('renamed')));
  // The CR on a removed node with its action running waits on revision 1, and says where it goes.
  const waiting = await waitForDatabase(kc, namespace, 'waits', 'seen waiting by revision 2', (db) => conditionOf(db, 'Ready')?.message?.includes('Draining') === true, 30_000);
  expect(waiting.status).toMatchObject({ state: 'Stopping', graphRevision: databaseGraph.revision, operation: { id: heldOperation('waits'), node: 'Stopping' } });
  expect(runs(waiting, 'Stopping'), 'its action still runs').toBe(true);
  unlinkSync(holdFile(crOf('waits')));

  // The walks go on in revision 1's names; each ends at its desired node, on revision 2, its events all out.
  await Promise.all(NAMES.map(async (name) => {
    const walk = WALKS[name];
    const desired = walk.after.at(-1) ?? ('held' in walk ? walk.held : walk.before.at(-1)!);
    await waitForDatabase(kc, namespace, name, 'migrated', (db) => db.status?.graphRevision === v2.revision, 30_000);
    for (const next of walk.after) await moveTo(name, next);
    await waitForDatabase(kc, namespace, name, `Ready at ${desired} on revision 2 with every event at the sink`, (db) => isSettledAt(db, desired) && hasAllEvents(db, eventsByUid(sink.received)), 30_000);
  }));
  console.log(`graph upgrade: the roll and the walks after it took ${((Date.now() - rolledAt) / 1000).toFixed(1)} s`);

  const operations = sidecar.operations();
  const ran = sidecar.runs();
  const finalStates = { kept: 'Running', renamed: 'Running', finished: 'Backup', moved: 'Draining', waits: 'Draining' };
  for (const name of NAMES) {
    const db = await api.get(namespace, name);
    const { uid } = db.metadata;
    const was = before.get(name)!.status!;
    const prediction = predicted.get(name)!;
    expect(db.status, name).toMatchObject({ state: finalStates[name], graphRevision: v2.revision });
    expect(conditionOf(db, 'Ready'), name).toMatchObject({ status: 'True', reason: 'DesiredStateReached' });
    // Gapless, in order, each event naming a node of its revision, one migrated event where the revision changes.
    expect(checkEvents(db, eventsByUid(sink.received).get(uid)!).migrations, `${name}: migrated events`).toBe(1);
    // Every committed action ran once and succeeded; none ran without its transition.
    checkOperations(db, operations, ran, { interruptions: sidecar.interruptions, mayRerun: sidecar.mayRerun, forgotten: sidecar.forgotten, idempotent: false, memoryLosses: sidecar.memoryLosses });

    // What happened is what was predicted from the status just before the roll.
    const stream = streamOf(db);
    const at = stream.findIndex((e) => e.type === LIFECYCLE_EVENT_TYPES.migrated);
    const event = stream[at]!;
    const landed = prediction.kind === 'waits' ? predictMigration(v2, planner, { ...positionOf(before.get(name)!), runningAction: undefined }) : prediction;
    if (landed.kind !== 'migrates') throw new Error(`${name}: predicted ${landed.kind}`);
    expect(event.data.migration, `${name}: the migration`).toEqual({ fromRevision: databaseGraph.revision, toRevision: v2.revision, fromState: was.state, toState: landed.state.node, kind: landed.state.kind });
    if (landed.operation === undefined) expect(event.data.operation, `${name}: no operation carried over`).toBeUndefined();
    else expect(event.data.operation, `${name}: the running operation kept`).toMatchObject({ id: was.operation!.id, node: landed.operation.to, formerNode: landed.operation.from });
    // The events of one reconcile's write carry its time.
    const sameWrite = (events: LifecycleEvent[], what: string) => expect(new Set(events.map((e) => e.time)).size, `${name}: ${what}, in the migration's write`).toBe(1);
    if (prediction.kind === 'waits') {
      // The action that held it back ended first, on revision 1, seen in the migration's step.
      expect(stream[at - 1], `${name}: the event before the migration`).toMatchObject({ type: LIFECYCLE_EVENT_TYPES.actionSucceeded, data: { graphRevision: databaseGraph.revision, operation: { id: was.operation!.id, node: 'Stopping' } } });
      sameWrite(stream.slice(at - 1, at + 1), 'the end of the action it waited for');
    }
    if (name === 'finished') {
      // Its action ended while no operator ran: the first step of revision 2 migrates it and records that end.
      expect(stream[at + 1], `${name}: the event after the migration`).toMatchObject({ type: LIFECYCLE_EVENT_TYPES.actionSucceeded, data: { graphRevision: v2.revision, to: 'Backup', operation: { id: was.operation!.id, node: 'Backup' } } });
      sameWrite(stream.slice(at, at + 2), 'the end of its action');
    }
    if (landed.state.kind === 'moved') {
      // The transition into the node the removed one maps to, and its action.
      const into = was.transition + 1;
      expect(stream.slice(at + 1, at + 3).map((e) => [e.type, e.data.from, e.data.to, e.data.transition]), `${name}: after the migration`).toEqual([
        [LIFECYCLE_EVENT_TYPES.transition, was.state, landed.state.node, into],
        [LIFECYCLE_EVENT_TYPES.actionStarted, was.state, landed.state.node, into],
      ]);
      sameWrite(stream.slice(at, at + 3), 'the transition and its action');
      expect(operations.get(`${uid}-${into}`), `${name}: the action of ${landed.state.node}`).toMatchObject({ node: landed.state.node, phase: 'Succeeded' });
    }
    // The walk's own transitions, plus one for a move: a rename or a kept node takes none.
    const walk: { before: readonly string[]; held?: string; after: readonly string[] } = WALKS[name];
    const walked = [...walk.before, ...(walk.held === undefined ? [] : [walk.held]), ...walk.after];
    expect(db.status!.transition, `${name}: transitions`).toBe(walkTransitions(walked) + (landed.state.kind === 'moved' ? 1 : 0));
    if (landed.operation !== undefined) {
      // Same id, run once, under the name it was started with; the CR knows it by the new one.
      expect(operations.get(was.operation!.id), `${name}: the held operation`).toMatchObject({ node: landed.operation.from, phase: 'Succeeded' });
      expect(ran.get(was.operation!.id), `${name}: runs of the held operation`).toBe(1);
    }
  }
  // The finished CR rests where the migration left it, its operation under the new name.
  expect((await api.get(namespace, 'finished')).status?.operation).toMatchObject({ id: heldOperation('finished'), node: 'Backup', phase: 'Succeeded' });
  // After the roll the sidecar ran actions under the new names only.
  const afterRoll = [...operations.values()].filter((op) => Date.parse(op.createdAt) >= rolledAt).map((op) => op.node);
  expect(new Set(afterRoll)).toEqual(new Set(['Backup', 'Running', 'Draining']));
  for (const [id, count] of ran) expect(count, `runs of ${id}`).toBe(1);
}, 90_000);
