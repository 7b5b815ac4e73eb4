// A fault-injection run: many CRs walk the database graph, their status in a format fast-check picks
// (full, lean or compact), while fast-check-chosen faults hit the operator (killed, or rolled to
// another revision of the graph), the API server, the sidecar (crashed, or losing its journal), the
// event sink, the actions (a failure the walker retries), a second namespace (torn down with its
// sidecar) and the objects CRs of the store graph own (stores.ts); then every invariant is checked, and
// every CR is deleted and checked to go down its graph's default path.
import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { databaseGraph } from '../../../graphs/database.ts';
import { createPlanner } from '../../../src/plan/index.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../../src/events/index.ts';
import { databaseGraphAt, databaseRenamed } from '../../fixtures/database-revisions.ts';
import type { ControlPlane } from '../../../src/cluster/index.ts';
import { CoreV1Api } from '@kubernetes/client-node';
import { createNamespace, e2eKubeconfigPath, mergePatch } from '../helpers/cluster.ts';
import { installFinalizerPolicy } from '../helpers/finalizer-policy.ts';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.ts';
import { conditionOf, databaseCrdIn, DATABASES, lifecycleObjects, type DatabaseObject } from '../helpers/lifecycle.ts';
import { applyCrd } from '../helpers/crd.ts';
import { expandStatus, type LifecycleResourceRef } from '../../../src/controller/lifecycle/index.ts';
import type { LifecycleStatus } from '../../../src/kube/lifecycle-resource.ts';
import { STATUS_FORMATS, type StatusFormat } from '../../../src/kube/status-format.ts';
import { checkDeletion, checkEvents, checkOperations, eventsByUid, hasAllEvents, isSettledAt, readyOverFailure } from './checks.ts';
import { maxTurnsWithin } from '../../../src/controller/lifecycle/cycle-brake.ts';
import type { Graph } from '../../../src/graph/index.ts';
import type { Operation } from '../../../src/sidecar-client/protocol.ts';
import { OperatorsUnderTest, SidecarUnderTest, SinkUnderTest, type SidecarUnderTestOptions } from './system.ts';
import { fcRuns } from '../../fixtures/fast-check.ts';
import { NO_STORES, StoresUnderTest, type StoreTally } from './stores.ts';

export const FAULT_KINDS = ['operator', 'apiserver', 'sidecar', 'sink', 'rival', 'sidecar-forgets', 'sidecar-replaced', 'sidecar-doubled', 'action-fails', 'teardown', 'disk-full', 'silent-network', 'graph-upgrade', 'sidecar-switch', 'action-cycle', 'object-deleted', 'operator-mid-apply', 'field-fight', 'apply-refused', 'never-ready'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];
/** The faults that hit the store CRs and the objects they own (stores.ts), run beside the databases when a scenario has one. */
const OBJECT_FAULT_KINDS: readonly FaultKind[] = ['object-deleted', 'operator-mid-apply', 'field-fight', 'apply-refused', 'never-ready'];

/** One fault: when (after that many transitions in total, so it lands while CRs move) and for how long. */
export interface Fault {
  kind: FaultKind;
  afterTransitions: number;
  /**
   * operator, graph-upgrade: pause before the restart; apiserver, sidecar, sink: downtime; rival: how
   * long it writes; sidecar-switch: how long the CRs stay on the second sidecar; action-cycle: how long
   * the actions drive the cycle; operator-mid-apply: pause before the restart; field-fight: how long
   * okt is watched leaving the fought field alone once Contested; apply-refused: how long the refusal
   * lasts once a CR says so; the others: unused.
   */
  forMs: number;
}

export interface Scenario {
  /** Per CR, the desired nodes it is moved to one after the other (each once the previous is reached). */
  walks: string[][];
  /** 1: one operator; 2: two replicas with leader election, and an operator fault kills the leader. */
  replicas: number;
  /** Whether the sidecar's actions are declared idempotent (re-run when their fate is unknown) or not (the CR stalls, Interrupted, and is retried by its user). */
  idempotent: boolean;
  /** The status format of the databases' CRD and operators; the suite's reads expand it. */
  statusFormat: StatusFormat;
  /** okt's finalizer policy in force (okt manifests --finalizer-policy): the CRs are created with the finalizer. */
  finalizerPolicy: boolean;
  faults: Fault[];
}

const planner = createPlanner(databaseGraph);
const LOOPED = ['Running', 'Servicing'] as const;

/** Transitions a walk takes from the entry node. */
export function walkTransitions(walk: readonly string[]): number {
  let at: string = databaseGraph.entry;
  let total = 0;
  for (const desired of walk) {
    total += planner.distance(at as never, desired as never) ?? 0;
    at = desired;
  }
  return total;
}

const DOWNTIME_MS: Record<FaultKind, { min: number; max: number }> = {
  operator: { min: 0, max: 1500 },
  // Beyond the renew deadline (2 s) the leader loses its Lease.
  apiserver: { min: 0, max: 4000 },
  sidecar: { min: 0, max: 1500 },
  sink: { min: 200, max: 3000 },
  rival: { min: 300, max: 2000 },
  'sidecar-forgets': { min: 0, max: 0 },
  'sidecar-replaced': { min: 0, max: 0 },
  'sidecar-doubled': { min: 0, max: 0 },
  'action-fails': { min: 0, max: 0 },
  teardown: { min: 0, max: 0 },
  // How long the journal's disk stays full.
  'disk-full': { min: 500, max: 2000 },
  'silent-network': { min: 0, max: 0 },
  // The rollout's pause between the last replica of revision 1 stopped and the first of revision 2 started.
  'graph-upgrade': { min: 0, max: 1500 },
  'sidecar-switch': { min: 500, max: 3000 },
  // Long enough for the brake to hold turns, among the other faults' delays.
  'action-cycle': { min: 8000, max: 20000 },
  'object-deleted': { min: 0, max: 0 },
  'operator-mid-apply': { min: 0, max: 1500 },
  'field-fight': { min: 1000, max: 3000 },
  'apply-refused': { min: 500, max: 3000 },
  'never-ready': { min: 0, max: 0 },
};

/** CRs one sidecar-switch, or one action-cycle, takes (at most). */
const SWITCHED_CRS = 3;
const CYCLING_CRS = 3;

/**
 * The graph the operators are rolled to: it only renames Servicing to Backup, so the walks, written in
 * revision 1's names (spec.desiredState may hold a former name), take the same transitions on it.
 */
const UPGRADE = databaseRenamed;

/** The journal's own disk, when the run fills it: room for the whole walk's journal. */
const JOURNAL_DISK_BYTES = 8 * 1024 * 1024;
/**
 * okt run --watch-idle-timeout and --request-timeout when the run black-holes the operator's
 * connections: each request caught on a silent connection costs the walk one request timeout.
 */
const WATCH_IDLE_SECONDS = 3;
const REQUEST_TIMEOUT_SECONDS = 5;

/** CRs in the namespace the teardown fault deletes, with a sidecar of their own that goes with it. */
const TEARDOWN_CRS = 2;
const TEARDOWN_GRACE_SECONDS = 2;

export interface ScenarioBounds {
  kinds: readonly FaultKind[];
  crs: { min: number; max: number };
  /** How many times each CR goes Running <-> Servicing before it stops. */
  loops: { min: number; max: number };
  /** Faults beyond one of each kind. */
  extraFaults: { min: number; max: number };
  replicas: readonly number[];
  /** Whether runs have okt's finalizer policy in force (only where the release serves it); default never. */
  finalizerPolicy?: readonly boolean[];
}

/** Walks: into the Running/Servicing loop, around it, and to where deletion finds it (Running, Servicing or Stopping); faults spread over the walk. */
export function scenarioArbitrary(bounds: ScenarioBounds): fc.Arbitrary<Scenario> {
  const walk = fc
    .tuple(fc.array(fc.constantFrom(...LOOPED), { minLength: bounds.loops.min, maxLength: bounds.loops.max }), fc.constantFrom('Running', 'Servicing', 'Stopping'))
    .map(([loop, last]) => [...loop, last].filter((t, i, all) => i === 0 || all[i - 1] !== t));
  return fc
    .record({ walks: fc.array(walk, { minLength: bounds.crs.min, maxLength: bounds.crs.max }), replicas: fc.constantFrom(...bounds.replicas), idempotent: fc.boolean(), statusFormat: fc.constantFrom(...STATUS_FORMATS), finalizerPolicy: fc.constantFrom(...(bounds.finalizerPolicy ?? [false])) })
    .chain(({ walks, replicas, idempotent, statusFormat, finalizerPolicy }) => {
      const total = walks.reduce((sum, w) => sum + walkTransitions(w), 0);
      // A graph upgrade lands mid-walk, on CRs of revision 1 already moving; a cycle while the walker
      // still moves CRs between Running and Servicing (it starts with such a move), and a sidecar switch
      // while CRs rest with steps still to take (late in a run none may, and it would switch none); the
      // others at any moment.
      const faultOf = (kind: FaultKind) =>
        fc.record({ kind: fc.constant(kind), afterTransitions: fc.integer({ min: kind === 'graph-upgrade' ? Math.floor(total * 0.2) : 0, max: Math.floor(total * (kind === 'action-cycle' || kind === 'sidecar-switch' ? 0.6 : 0.9)) }), forMs: fc.integer(DOWNTIME_MS[kind]) });
      // Every kind at least once per run, then more of any kind but these: a teardown happens once (and
      // so does an upgrade, to its one revision), each silent network costs the operator a request
      // timeout, a fight leaves its object alone for longer than a run, and a never-ready CR leaves the walk.
      const once: readonly FaultKind[] = ['teardown', 'silent-network', 'graph-upgrade', 'field-fight', 'never-ready'];
      const repeatable = bounds.kinds.filter((k) => !once.includes(k));
      const faults = fc
        .tuple(fc.tuple(...bounds.kinds.map(faultOf)), fc.array(fc.constantFrom(...repeatable).chain(faultOf), { minLength: bounds.extraFaults.min, maxLength: bounds.extraFaults.max }))
        .map(([each, extra]) => [...each, ...extra].sort((a, b) => a.afterTransitions - b.afterTransitions));
      return fc.record({ walks: fc.constant(walks), replicas: fc.constant(replicas), idempotent: fc.constant(idempotent), statusFormat: fc.constant(statusFormat), finalizerPolicy: fc.constant(finalizerPolicy), faults });
    });
}

/**
 * The databases of a run in `format`: in `full`, okt.dev's (every other test's); in `lean` and
 * `compact`, a group of their own, so that another test file applying okt.dev's CRD (in `full`) while
 * the run goes on does not change the schema its statuses are written against.
 */
export function databasesIn(format: StatusFormat): LifecycleResourceRef {
  return format === 'full' ? DATABASES : { ...DATABASES, group: `${format}.faults.e2e.okt.dev` };
}

/** A run's database CRs: the cluster, and their resource (databasesIn the run's status format). */
interface RunDatabases {
  kc: KubeConfig;
  resource: LifecycleResourceRef;
}

export interface RunEnvironment {
  kc: KubeConfig;
  /** Another control plane than the run's shared one (needed to restart its API server). */
  plane?: ControlPlane;
  log: (line: string) => void;
}

/** What one run did, for the report. */
export interface RunTally extends StoreTally {
  runs: number;
  /** Runs with two operator replicas under leader election. */
  replicatedRuns: number;
  /** Runs whose actions were not declared idempotent. */
  nonIdempotentRuns: number;
  crs: number;
  transitions: number;
  faults: Record<FaultKind, number>;
  /** Sidecar crashes that found an action running. */
  interruptedOperations: number;
  /** Operations a sidecar that lost its memory may have re-run (their CR still held them unfinished). */
  forgottenOperations: number;
  reruns: number;
  /** Failed actions run again through spec.retry. */
  retried: number;
  /** Times the sidecar ended by itself on a full journal disk (exit 4), and operator connections black-holed. */
  diskFullExits: number;
  /** Migrated events (CRs moved to the revision the operators were rolled to). */
  migrations: number;
  blackHoledConnections: number;
  /** CRs switched to the second sidecar and back; CRs whose actions drove a cycle, the events they raised, the braked CloudEvents. */
  switchedCrs: number;
  cycledCrs: number;
  cycleEventsRaised: number;
  brakedEvents: number;
  /** CRs deleted after the walk and driven down their default path; CRs abandoned in a torn-down namespace. */
  deleted: number;
  abandoned: number;
  operations: number;
  events: number;
  redeliveries: number;
  rivalWrites: number;
  conflictsLogged: number;
  operatorSelfExits: number;
  /** Wall time of the walk under faults, then of the wait for the last events once all is back up. */
  walkSeconds: number;
  settleSeconds: number;
  seconds: number;
}

const WALK_TIMEOUT_MS = 150_000;

export async function runScenario(env: RunEnvironment, scenario: Scenario): Promise<RunTally> {
  const started = Date.now();
  const { kc } = env;
  const dbs: RunDatabases = { kc, resource: databasesIn(scenario.statusFormat) };
  env.log(`run in the ${scenario.statusFormat} status format (${dbs.resource.group})${scenario.finalizerPolicy ? ', okt\'s finalizer policy in force' : ''}`);
  await applyCrd(kc, databaseCrdIn(dbs.resource, scenario.statusFormat));
  const namespace = await createNamespace(kc, 'okt-faults');
  const runLabel = { 'okt-faults': namespace };
  // Before any CR of the run is created: each then has okt's finalizer from its creation.
  const removePolicy = scenario.finalizerPolicy ? await installFinalizerPolicy(kc, dbs.resource, namespace, runLabel) : undefined;
  const fillsDisk = scenario.faults.some((f) => f.kind === 'disk-full');
  // Upgrading: the sidecar has actions under both names before the operators roll (graph-upgrade.test.ts says why).
  const upgrading = scenario.faults.some((f) => f.kind === 'graph-upgrade');
  const sidecarOptions: SidecarUnderTestOptions = { idempotent: scenario.idempotent, ...(upgrading ? { graphs: [databaseGraph, UPGRADE] } : {}) };
  const sidecar = await SidecarUnderTest.start({ ...sidecarOptions, ...(fillsDisk ? { journalDiskBytes: JOURNAL_DISK_BYTES } : {}) });
  const switching = scenario.faults.some((f) => f.kind === 'sidecar-switch') ? await SidecarSwitch.start(sidecarOptions) : undefined;
  // The operators reach the API server through a TCP proxy that a fault can black-hole (no FIN, no RST).
  const silencing = scenario.faults.some((f) => f.kind === 'silent-network');
  const network = silencing ? await ProxiedApiServer.start(env.plane?.kubeconfigPath ?? e2eKubeconfigPath()) : undefined;
  const sink = await SinkUnderTest.start();
  const tearingDown = scenario.faults.some((f) => f.kind === 'teardown');
  const teardown = tearingDown ? await TeardownUnderTest.start(dbs, runLabel) : undefined;
  const operators = new OperatorsUnderTest({
    kc, namespace, sidecar, sink, replicas: scenario.replicas, resource: dbs.resource, statusFormat: scenario.statusFormat,
    labelSelector: `okt-faults=${namespace}`, teardownGraceSeconds: TEARDOWN_GRACE_SECONDS,
    ...(network !== undefined ? { kubeconfigPath: network.kubeconfigPath, watchIdleSeconds: WATCH_IDLE_SECONDS, requestTimeoutSeconds: REQUEST_TIMEOUT_SECONDS } : env.plane === undefined ? {} : { kubeconfigPath: env.plane.kubeconfigPath }),
  });
  const faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  const progress: WalkProgress = { transitions: 0, walked: false, retried: 0, readyOverFailure: [], at: new Map(), taken: new Set(), held: new Set() };
  const cycles: CycleTally = { cycled: 0, braked: new Set() };
  const rival = { writes: 0 };
  const stores = scenario.faults.some((f) => OBJECT_FAULT_KINDS.includes(f.kind)) ? await StoresUnderTest.start(kc, namespace) : undefined;
  try {
    const names = scenario.walks.map((_, i) => `db-${i}`);
    const api = lifecycleObjects(kc, dbs.resource);
    await Promise.all(names.map((name, i) => api.create(namespace, name, { desiredState: scenario.walks[i]![0]!, onLeaf: 'Keep' }, runLabel)));
    // What the CRs' status holds unfinished right now: a sidecar that forgets may run those again.
    const heldUnfinished = async () => new Set((await list(dbs, namespace)).flatMap((db) => {
      const op = db.status?.operation;
      // A CR switched to the second sidecar holds an operation of that one.
      if (db.spec.sidecar !== undefined) return [];
      return op !== undefined && !['Succeeded', 'Failed', 'Cancelled'].includes(op.phase) ? [op.id] : [];
    }));

    // The sidecar's faults take turns: one process, one port; so do the operators' (a kill, a rollout).
    let sidecarTurn = Promise.resolve();
    const onSidecar = (fault: () => Promise<void>) => (sidecarTurn = sidecarTurn.then(fault));
    let operatorsTurn = Promise.resolve();
    const onOperators = (fault: () => Promise<void>) => (operatorsTurn = operatorsTurn.then(fault));
    const inject = async (fault: Fault): Promise<void> => {
      faults[fault.kind] += 1;
      switch (fault.kind) {
        case 'operator':
          await onOperators(() => operators.killLeader(fault.forMs));
          break;
        case 'graph-upgrade':
          await onOperators(() => operators.roll(UPGRADE, () => sleep(fault.forMs)));
          break;
        case 'apiserver':
          if (env.plane === undefined) throw new Error('an API server restart needs a control plane of its own (env.plane)');
          await env.plane.restartApiServer({ downMs: fault.forMs });
          break;
        case 'sidecar':
          await onSidecar(async () => {
            // Aim at the middle of an action: the journal shows one accepted and not yet finished.
            if (!progress.walked) await sidecar.waitForRunningAction(3000);
            await sidecar.kill();
            await sleep(fault.forMs);
            await sidecar.restart();
          });
          break;
        case 'sidecar-forgets':
        case 'sidecar-replaced':
          await onSidecar(async () => {
            if (!progress.walked) await sidecar.waitForRunningAction(3000);
            await sidecar.forget(fault.kind === 'sidecar-forgets' ? 'kill' : 'term', heldUnfinished);
          });
          break;
        case 'sidecar-doubled':
          await onSidecar(() => sidecar.startSecond());
          break;
        case 'action-fails':
          sidecar.failNext();
          break;
        case 'disk-full':
          await onSidecar(() => sidecar.fillDisk(fault.forMs));
          break;
        case 'silent-network':
          network!.blackHole();
          break;
        case 'teardown':
          await teardown!.tearDown();
          break;
        case 'sink':
          await sink.close();
          await sleep(fault.forMs);
          await sink.open();
          break;
        case 'rival':
          await rivalWrites(dbs, namespace, names, fault.forMs, rival);
          break;
        case 'sidecar-switch':
          await switching!.switchAndBack(dbs, namespace, progress, operators.graph, fault.forMs);
          break;
        case 'action-cycle':
          // Not across a rollout: the event a cycling action raises is named in the operators' revision.
          await onOperators(() => driveCycle(dbs, namespace, progress, sidecar, operators.graph, fault.forMs, cycles));
          break;
        case 'object-deleted':
          await stores!.inTurn((s) => s.deleteOwned());
          break;
        case 'operator-mid-apply':
          await stores!.inTurn((s) => s.killMidApply(fault.forMs));
          break;
        case 'field-fight':
          await stores!.inTurn((s) => s.fight(fault.forMs));
          break;
        case 'apply-refused':
          await stores!.inTurn((s) => s.refuseApplies(fault.forMs));
          break;
        case 'never-ready':
          await stores!.inTurn((s) => s.neverReady());
          break;
      }
    };
    const walking = walk(dbs, namespace, names, scenario.walks, progress).finally(() => (progress.walked = true));
    const faulting = injectAll(scenario.faults, progress, inject, env.log);
    await Promise.all([walking, faulting]);
    const walkedAt = Date.now();

    // Everything is back up: each CR must rest at its last desired node, on the operators' revision, with all its events at the sink.
    const settled = await waitUntilSettled(dbs, namespace, names, scenario.walks, sink, operators.graph.revision);
    // The store CRs too, their objects checked for orphans and duplicates.
    await stores?.settle();
    const settledAt = Date.now();
    const operations = allOperations(sidecar, switching?.sidecar);
    const runs = allRuns(sidecar, switching?.sidecar);
    const raised = sidecar.raised();
    const tally: RunTally = {
      runs: 1, replicatedRuns: scenario.replicas > 1 ? 1 : 0, nonIdempotentRuns: scenario.idempotent ? 0 : 1, crs: names.length, transitions: 0, faults, interruptedOperations: sidecar.interruptions.size,
      forgottenOperations: sidecar.mayRerun.size, reruns: 0, retried: 0, diskFullExits: sidecar.diskFullExits, migrations: 0, blackHoledConnections: network?.blackHoled ?? 0, deleted: 0, abandoned: 0, operations: 0, events: 0, redeliveries: 0, rivalWrites: rival.writes,
      switchedCrs: switching?.switched ?? 0, cycledCrs: cycles.cycled, cycleEventsRaised: [...raised.values()].reduce((a, b) => a + b, 0),
      brakedEvents: new Set(sink.received.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.braked).map((e) => e.id)).size,
      conflictsLogged: operators.countLogLines(/\b409\b|[Cc]onflict/), operatorSelfExits: operators.selfExits,
      walkSeconds: seconds(walkedAt - started), settleSeconds: seconds(settledAt - walkedAt), seconds: 0, ...NO_STORES,
    };
    expect(progress.readyOverFailure, 'Ready=True over an action that did not succeed, in any read during the walk').toEqual([]);
    const byUid = eventsByUid(sink.received);
    for (const db of settled) {
      const walked = scenario.walks[names.indexOf(db.metadata.name)]!;
      const cycleEvents = raised.get(db.metadata.uid) ?? 0;
      if (cycleEvents === 0) {
        expect(db.status!.transition, `${db.metadata.name}: transitions of the walk ${walked.join('>')}, no more`).toBe(walkTransitions(walked));
      } else {
        // Each event its actions raised took one transition between Running and Servicing, one step nearer
        // the desired node (no detour) or one farther (a detour of two): the walk's, plus an even number.
        const detour = db.status!.transition - walkTransitions(walked);
        expect({ detour, even: detour % 2 === 0 }, `${db.metadata.name}: transitions of the walk ${walked.join('>')} (${walkTransitions(walked)}), plus at most two per event its actions raised (${cycleEvents})`).toEqual({ detour: Math.min(Math.max(detour, 0), 2 * cycleEvents), even: true });
      }
      tally.transitions += db.status!.transition;
      const events = checkEvents(db, byUid.get(db.metadata.uid) ?? []);
      if (cycles.braked.has(db.metadata.uid)) expect(byUid.get(db.metadata.uid)?.some((e) => e.type === LIFECYCLE_EVENT_TYPES.braked), `${db.metadata.name}: a braked CloudEvent, a turn of it having been held by the cycle brake`).toBe(true);
      tally.events += events.events;
      tally.redeliveries += events.redeliveries;
      tally.migrations += events.migrations;
      const ops = checkOperations(db, operations, runs, { forgotten: sidecar.forgotten, interruptions: sidecar.interruptions, mayRerun: sidecar.mayRerun, idempotent: scenario.idempotent, memoryLosses: sidecar.memoryLosses });
      tally.operations += ops.operations;
      tally.reruns += ops.reruns;
      tally.retried += ops.retried;
    }
    expect(tally.retried, 'failed actions retried through spec.retry, as the walker saw them stall').toBe(progress.retried);
    // Rolled mid-walk: CRs of revision 1 were migrated (each CR's stream says so once, checked above).
    if (upgrading) expect(tally.migrations, 'CRs migrated to the revision the operators were rolled to').toBeGreaterThan(0);
    if (switching !== undefined) expect(tally.switchedCrs, 'CRs switched to the second sidecar and back').toBeGreaterThan(0);
    if (faults['action-cycle'] > 0) expect(tally.cycledCrs, 'CRs whose actions drove a cycle').toBeGreaterThan(0);

    // Deletion from wherever each walk ended: down the default path, exactly its actions, every event out.
    await Promise.all(names.map((name) => api.remove(namespace, name)));
    await waitUntilGone(dbs, namespace, names.length, 60_000);
    await waitFor(() => settled.every((db) => lastEventIsLeaf(sink, db.metadata.uid)), 30_000, 'the last events of the deleted CRs at the sink');
    const after = eventsByUid(sink.received);
    for (const db of settled) tally.transitions += checkDeletion(db, after.get(db.metadata.uid) ?? [], allOperations(sidecar, switching?.sidecar), allRuns(sidecar, switching?.sidecar));
    tally.deleted = settled.length;
    if (teardown !== undefined) tally.abandoned = await teardown.check(sink);
    if (stores !== undefined) {
      await stores.deleteAll();
      Object.assign(tally, stores.tally);
    }
    tally.seconds = seconds(Date.now() - started);
    return tally;
  } catch (error) {
    env.log(`run failed; operator logs:\n${operators.logs()}${stores === undefined ? '' : `\nstore operator logs:\n${stores.logs()}`}`);
    throw error;
  } finally {
    await operators.stop();
    await stores?.stop();
    await sidecar.stop();
    await switching?.sidecar.stop();
    await teardown?.stop();
    await network?.close();
    await sink.close();
    await removePolicy?.();
  }
}

/** A TCP proxy in front of the API server with a kubeconfig that goes through it. */
class ProxiedApiServer {
  readonly kubeconfigPath: string;
  readonly #proxy: TcpProxy;
  readonly #dir: string;
  blackHoled = 0;

  private constructor(proxy: TcpProxy, dir: string, kubeconfigPath: string) {
    this.#proxy = proxy;
    this.#dir = dir;
    this.kubeconfigPath = kubeconfigPath;
  }

  static async start(kubeconfigPath: string): Promise<ProxiedApiServer> {
    const text = readFileSync(kubeconfigPath, 'utf8');
    const kc = new KubeConfig();
    kc.loadFromString(text);
    const server = new URL(kc.getCurrentCluster()!.server);
    const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port) });
    const dir = mkdtempSync(path.join(tmpdir(), 'okt-fault-proxy-'));
    const proxied = path.join(dir, 'kubeconfig');
    writeFileSync(proxied, text.replaceAll(server.origin, `${server.protocol}//${server.hostname}:${proxy.port}`));
    return new ProxiedApiServer(proxy, dir, proxied);
  }

  /** Every connection open now goes silent for good; new ones work. */
  blackHole(): void {
    this.blackHoled += this.#proxy.blackHoleOpenLinks();
  }

  async close(): Promise<void> {
    await this.#proxy.close();
    rmSync(this.#dir, { recursive: true, force: true });
  }
}

/** Whether the sink's newest transition event of a CR entered a leaf (deletion's end). */
function lastEventIsLeaf(sink: SinkUnderTest, uid: string): boolean {
  const transitions = (eventsByUid(sink.received).get(uid) ?? []).filter((e) => e.type === LIFECYCLE_EVENT_TYPES.transition);
  const last = transitions.sort((a, b) => Number(a.sequence) - Number(b.sequence)).at(-1);
  return last !== undefined && databaseGraphAt(last.data.graphRevision).node(last.data.to).isLeaf;
}

async function waitFor(ready: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(100);
  }
}

async function waitUntilGone(dbs: RunDatabases, namespace: string, count: number, timeoutMs: number): Promise<void> {
  let left: DatabaseObject[] = [];
  await waitFor(async () => {
    try {
      left = await list(dbs, namespace);
      return left.length === 0;
    } catch {
      return false;
    }
  }, timeoutMs, `${count} deleted CRs to be gone; left: ${left.map((db) => `${db.metadata.name} at ${db.status?.state} (${conditionOf(db, 'Ready')?.reason}: ${conditionOf(db, 'Ready')?.message})`).join('; ')}`);
}

/**
 * A namespace with CRs whose sidecar is their own: the teardown fault kills that sidecar and deletes
 * the namespace and its CRs (what the namespace controller would do). Each CR must be released after
 * the grace period, its stream ending with a stalled event saying the deletion was abandoned.
 */
class TeardownUnderTest {
  readonly #dbs: RunDatabases;
  readonly namespace: string;
  readonly sidecar: SidecarUnderTest;
  readonly #names: string[];
  #uids: string[] = [];
  #torn = false;

  private constructor(dbs: RunDatabases, namespace: string, sidecar: SidecarUnderTest, names: string[]) {
    this.#dbs = dbs;
    this.namespace = namespace;
    this.sidecar = sidecar;
    this.#names = names;
  }

  static async start(dbs: RunDatabases, labels: Record<string, string>): Promise<TeardownUnderTest> {
    const namespace = await createNamespace(dbs.kc, 'okt-teardown');
    const sidecar = await SidecarUnderTest.start({ idempotent: false });
    const names = Array.from({ length: TEARDOWN_CRS }, (_, i) => `doomed-${i}`);
    const api = lifecycleObjects(dbs.kc, dbs.resource);
    const created = await Promise.all(names.map((name) => api.create(namespace, name, { desiredState: 'Running', onLeaf: 'Keep', sidecar: { url: sidecar.url } }, labels)));
    const teardown = new TeardownUnderTest(dbs, namespace, sidecar, names);
    teardown.#uids = created.map((db) => db.metadata.uid);
    return teardown;
  }

  /** Once its CRs rest at Running: the sidecar goes, then the namespace and its CRs are deleted (once: a second teardown finds nothing left). */
  async tearDown(): Promise<void> {
    if (this.#torn) return;
    this.#torn = true;
    await waitFor(async () => (await list(this.#dbs, this.namespace)).every((db) => isSettledAt(db, 'Running')), 60_000, 'the teardown CRs at Running');
    await this.sidecar.kill();
    await this.#dbs.kc.makeApiClient(CoreV1Api).deleteNamespace({ name: this.namespace });
    const api = lifecycleObjects(this.#dbs.kc, this.#dbs.resource);
    await Promise.all(this.#names.map((name) => api.remove(this.namespace, name)));
  }

  /** Every CR gone, each stream complete and ending with the stalled event of an abandoned deletion. */
  async check(sink: SinkUnderTest): Promise<number> {
    expect(this.#torn, 'the teardown fault ran').toBe(true);
    await waitUntilGone(this.#dbs, this.namespace, this.#names.length, (4 * TEARDOWN_GRACE_SECONDS + 30) * 1000);
    await waitFor(() => this.#uids.every((uid) => (eventsByUid(sink.received).get(uid) ?? []).some((e) => e.type === LIFECYCLE_EVENT_TYPES.stalled && e.data.reason === 'DeletionAbandoned')), 30_000, 'the stalled events of the abandoned CRs');
    const byUid = eventsByUid(sink.received);
    for (const uid of this.#uids) {
      const stream = [...(byUid.get(uid) ?? [])].sort((a, b) => Number(a.sequence) - Number(b.sequence));
      const sequences = [...new Set(stream.map((e) => Number(e.sequence)))];
      expect(sequences, `teardown CR ${uid}: every event up to the last`).toEqual(sequences.map((_, i) => i + 1));
      const last = stream.at(-1)!;
      expect(last.type, `teardown CR ${uid}: its last event`).toBe(LIFECYCLE_EVENT_TYPES.stalled);
      expect(last.data.reason).toBe('DeletionAbandoned');
      expect(String(last.data.message)).toContain('namespace is terminating');
    }
    for (const [id, count] of this.sidecar.runs()) expect(count, `teardown operation ${id}: runs`).toBe(1);
    return this.#uids.length;
  }

  async stop(): Promise<void> {
    await this.sidecar.stop();
  }
}

/** Every sidecar's operations: an operation id is on one sidecar only (none ran on two). */
function allOperations(...sidecars: (SidecarUnderTest | undefined)[]): Map<string, Operation> {
  const all = new Map<string, Operation>();
  for (const sidecar of sidecars) {
    for (const [id, operation] of sidecar?.operations() ?? []) {
      expect(all.has(id), `operation ${id} on two sidecars`).toBe(false);
      all.set(id, operation);
    }
  }
  return all;
}

/** Every sidecar's runs of each operation, summed. */
function allRuns(...sidecars: (SidecarUnderTest | undefined)[]): Map<string, number> {
  const all = new Map<string, number>();
  for (const sidecar of sidecars) for (const [id, count] of sidecar?.runs() ?? []) all.set(id, (all.get(id) ?? 0) + count);
  return all;
}

/** The node the graph the operators run calls Servicing (Backup after the upgrade). */
function servicingIn(graph: Graph): string {
  return graph.has('Servicing') ? 'Servicing' : 'Backup';
}

/** A merge patch of the CR's spec that only applies to the object as read (resourceVersion): undefined on a conflict or any error. */
async function patchSpecIfUnchanged(dbs: RunDatabases, db: DatabaseObject, spec: Record<string, unknown>): Promise<DatabaseObject | undefined> {
  const objects = dbs.kc.makeApiClient(CustomObjectsApi);
  const { name, namespace, resourceVersion } = db.metadata as { name: string; namespace: string; resourceVersion: string };
  try {
    return (await objects.patchNamespacedCustomObject({ group: dbs.resource.group, version: dbs.resource.version, plural: dbs.resource.plural, namespace, name, body: { metadata: { resourceVersion }, spec } }, mergePatch)) as DatabaseObject;
  } catch {
    return undefined;
  }
}

/**
 * Up to `count` CRs resting at their desired node on the run's own sidecar, none taken before, whose
 * walks go on (so that they move while taken; once the walk is done, any), each patched with `spec`
 * while still resting as read, and held there by the walker (progress.held) until released. While the
 * walk goes on, a CR rests only between its settling and the walker's next tick, so the walker offers
 * each CR it is about to move (progress.offerResting) rather than this LIST racing it for that moment;
 * once the walk is done, every CR rests. Looks until one is taken, for the walk's own bound at most.
 */
async function takeResting(dbs: RunDatabases, namespace: string, progress: WalkProgress, count: number, spec: Record<string, unknown>): Promise<DatabaseObject[]> {
  const taken: DatabaseObject[] = [];
  const offered: DatabaseObject[] = [];
  const wanted = (db: DatabaseObject) => taken.length + offered.length < count && !progress.taken.has(db.metadata.name) && !progress.held.has(db.metadata.name) && db.spec.sidecar === undefined;
  progress.offerResting = (db) => {
    if (!wanted(db)) return false;
    progress.held.add(db.metadata.name);
    offered.push(db);
    return true;
  };
  const take = async (db: DatabaseObject) => {
    const patched = await patchSpecIfUnchanged(dbs, db, spec);
    if (patched === undefined) {
      progress.held.delete(db.metadata.name);
      return;
    }
    progress.taken.add(db.metadata.name);
    taken.push({ ...db, metadata: { ...db.metadata, generation: patched.metadata.generation } });
  };
  const deadline = Date.now() + WALK_TIMEOUT_MS;
  try {
    while (taken.length === 0 && Date.now() < deadline) {
      for (const db of offered.splice(0)) await take(db);
      if (progress.walked) {
        let items: DatabaseObject[] = [];
        try {
          items = await list(dbs, namespace);
        } catch {
          // the API server may be restarting
        }
        for (const db of items.filter((d) => isSettledAt(d, d.spec.desiredState))) {
          if (!wanted(db)) continue;
          progress.held.add(db.metadata.name);
          await take(db);
        }
      }
      if (taken.length === 0) await sleep(100);
    }
  } finally {
    progress.offerResting = undefined;
    // Offered after the last look: back to the walker.
    for (const db of offered.splice(0)) progress.held.delete(db.metadata.name);
  }
  return taken;
}

async function readCr(dbs: RunDatabases, namespace: string, name: string): Promise<DatabaseObject | undefined> {
  try {
    return expanded(await lifecycleObjects(dbs.kc, dbs.resource).get(namespace, name));
  } catch {
    return undefined;
  }
}

/**
 * A second sidecar with a life of its own (an operation of no CR, its probe's events) that resting CRs
 * are switched to (spec.sidecar.url) and, once resting again, back to the run's own (the field removed).
 * Before each switch its probe raises events that would move a CR at Running or Servicing: a CR is
 * offered only events it had a part in, so the switch is taken without a transition and the CR still
 * takes exactly its walk's transitions (checked with the others). A CR is switched once a run: one
 * switched back to an epoch it read before reads on from where it left it ("Whose events are news",
 * docs/operator.md), so what this one raised meanwhile would be its news.
 */
class SidecarSwitch {
  readonly sidecar: SidecarUnderTest;
  switched = 0;

  private constructor(sidecar: SidecarUnderTest) {
    this.sidecar = sidecar;
  }

  static async start(options: SidecarUnderTestOptions): Promise<SidecarSwitch> {
    const sidecar = await SidecarUnderTest.start({ ...options, probe: true });
    await sidecar.runOwnOperation('its-own-life-1', 'Running');
    return new SidecarSwitch(sidecar);
  }

  async switchAndBack(dbs: RunDatabases, namespace: string, progress: WalkProgress, graph: Graph, stayMs: number): Promise<void> {
    const stale = await this.sidecar.raiseFromProbe([servicingIn(graph), 'Running']);
    const chosen = await takeResting(dbs, namespace, progress, SWITCHED_CRS, { sidecar: { url: this.sidecar.url } });
    this.switched += chosen.length;
    await Promise.all(chosen.map(async (before) => {
      const name = before.metadata.name;
      // The first status for the switch: no transition, unless the walker moved the CR on meanwhile.
      const reading = await waitForCr(dbs, namespace, name, (db) => (db.status?.observedGeneration ?? 0) >= before.metadata.generation! && db.status?.observedEpoch === stale.epoch, `to take the switch to the second sidecar (epoch ${stale.epoch})`);
      // Held by the walker: nothing else moved it (unless the walker's look had come just before the hold).
      if (reading.metadata.generation === before.metadata.generation) {
        expect(reading.status?.transition, `${name}: transitions when switched to a sidecar whose probe raised ${servicingIn(graph)} and Running before (epoch ${stale.epoch})`).toBe(before.status?.transition);
      }
      expect(reading.status?.observedSequence, `${name}: where its news on the second sidecar begins, after what it raised before the switch`).toBeGreaterThanOrEqual(stale.lastSeq);
      progress.held.delete(name);
    }));
    await sleep(stayMs);
    await Promise.all(chosen.map(async ({ metadata: { name } }) => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const db = await readCr(dbs, namespace, name);
        if (db !== undefined && isSettledAt(db, db.spec.desiredState) && (await patchSpecIfUnchanged(dbs, db, { sidecar: null })) !== undefined) return;
        if (Date.now() > deadline) throw new Error(`${name} did not rest on the second sidecar within 60 s to be switched back: ${db?.status?.pathSummary}`);
        await sleep(100);
      }
    }));
  }
}

async function waitForCr(dbs: RunDatabases, namespace: string, name: string, ready: (db: DatabaseObject) => boolean, what: string): Promise<DatabaseObject> {
  let found: DatabaseObject | undefined;
  await waitFor(async () => {
    found = await readCr(dbs, namespace, name);
    return found !== undefined && ready(found);
  }, 60_000, `${name} ${what}`);
  return found!;
}

/**
 * A world whose actions drive a cycle: the next CRs (on the run's own sidecar) the walker moves between
 * Running and Servicing are taken; from then on, for `forMs`, each of their actions at Running raises
 * Servicing and each at Servicing raises Running, so they turn with no spec edit. Read every 100 ms
 * meanwhile: between any two reads at one generation, a CR takes at most twice maxTurnsWithin(the time
 * between them) plus the graph's node count transitions (the cycle brake's documented bound). Adds to
 * `cycles` how many CRs raised an event, and the uids of those a read saw with a held turn
 * (status.cycleBrake.held): each must have had a braked CloudEvent.
 */
async function driveCycle(dbs: RunDatabases, namespace: string, progress: WalkProgress, sidecar: SidecarUnderTest, graph: Graph, forMs: number, cycles: CycleTally): Promise<void> {
  const servicing = servicingIn(graph);
  const taken = new Map<string, string>();
  progress.startCycle = (db) => {
    if (taken.size === CYCLING_CRS || db.spec.sidecar !== undefined) return false;
    progress.taken.add(db.metadata.name);
    taken.set(db.metadata.name, db.metadata.uid);
    sidecar.cycle(db.metadata.uid, { Running: servicing, [servicing]: 'Running' });
    return true;
  };
  const reads = new Map<string, { sentMs: number; answeredMs: number; generation: number; transition: number; held: boolean }[]>();
  try {
    // As long as the walk may take: a walk slowed by the other faults offers its next move late, not never.
    await waitFor(() => taken.size > 0 || progress.walked, WALK_TIMEOUT_MS, 'the walker to move a CR between Running and Servicing');
    // The cycle lasts forMs from the first event a taken CR's action raised: under load (a run's start,
    // two replicas, the other faults) that first action may start seconds after the move.
    const raisedYet = () => [...taken.values()].some((uid) => (sidecar.raised().get(uid) ?? 0) > 0);
    const firstRaiseBy = Date.now() + WALK_TIMEOUT_MS;
    let until: number | undefined;
    while (taken.size > 0 && (until === undefined || Date.now() < until)) {
      if (until === undefined && raisedYet()) until = Date.now() + forMs;
      if (until === undefined && Date.now() > firstRaiseBy) throw new Error(`no action of the CRs taken for a cycle (${[...taken.keys()].join(', ')}) raised an event in ${WALK_TIMEOUT_MS / 1000} s`);
      const sentMs = Date.now();
      try {
        const items = await list(dbs, namespace);
        const answeredMs = Date.now();
        for (const db of items.filter((d) => taken.has(d.metadata.name))) {
          const seen = reads.get(db.metadata.name) ?? [];
          seen.push({ sentMs, answeredMs, generation: db.metadata.generation!, transition: db.status?.transition ?? 0, held: (db.status?.cycleBrake?.held ?? 0) > 0 });
          reads.set(db.metadata.name, seen);
        }
      } catch {
        // the API server may be restarting
      }
      await sleep(100);
    }
  } finally {
    progress.startCycle = undefined;
    for (const uid of taken.values()) sidecar.stopCycling(uid);
  }
  for (const [name, seen] of reads) {
    const overBound: string[] = [];
    for (let i = 0; i < seen.length; i++) {
      for (let j = i + 1; j < seen.length && seen[j]!.generation === seen[i]!.generation; j++) {
        const windowMs = seen[j]!.answeredMs - seen[i]!.sentMs;
        const transitions = seen[j]!.transition - seen[i]!.transition;
        const bound = 2 * maxTurnsWithin(windowMs) + graph.nodeNames.length;
        if (transitions > bound) overBound.push(`${transitions} > ${bound} within ${windowMs} ms (generation ${seen[i]!.generation})`);
      }
    }
    // A turn is held only when it comes sooner than its hold after the one before (a slow cycle, as
    // under this load, may turn past the free turns unheld); the first held one sends the braked event.
    if (seen.some((read) => read.held)) cycles.braked.add(taken.get(name)!);
    expect(overBound.slice(0, 3), `${name}: transitions without a spec edit, its actions driving a cycle, over the cycle brake's bound`).toEqual([]);
  }
  const raised = sidecar.raised();
  cycles.cycled += [...taken.values()].filter((uid) => (raised.get(uid) ?? 0) > 0).length;
}

/** What the action-cycle faults of a run did: CRs whose actions raised an event; uids that must have been braked. */
interface CycleTally {
  cycled: number;
  braked: Set<string>;
}

/** Faults of one kind one after the other; kinds overlap, as independent failures do. */
async function injectAll(faults: readonly Fault[], progress: WalkProgress, inject: (f: Fault) => Promise<void>, log: (line: string) => void): Promise<void> {
  await Promise.all(
    FAULT_KINDS.map(async (kind) => {
      for (const fault of faults.filter((f) => f.kind === kind)) {
        while (progress.transitions < fault.afterTransitions && !progress.walked) await sleep(10);
        log(`  fault ${fault.kind} after ${progress.transitions} transitions (${fault.forMs} ms)`);
        await inject(fault);
      }
    }),
  );
}

interface WalkProgress {
  transitions: number;
  walked: boolean;
  /** spec.retry patches the walker made for CRs stalled by a failed action. */
  retried: number;
  /** Every read in which a CR was Ready over an action that did not succeed. */
  readyOverFailure: string[];
  /** Per CR, the step of its walk it is at. */
  at: Map<string, number>;
  /** CRs a sidecar switch or a cycle took (each at most once a run). */
  taken: Set<string>;
  /** CRs the walker leaves where they are for now (a switch being taken). */
  held: Set<string>;
  /** While CRs are wanted at rest (takeResting): the walker offers each CR it is about to move on (true: taken and held). */
  offerResting?: (db: DatabaseObject) => boolean;
  /** While a cycle is wanted: the walker offers it each CR it is about to move between Running and Servicing (true: taken, its actions now raise the cycle's events). */
  startCycle?: (db: DatabaseObject) => boolean;
}

/**
 * Moves each CR to the next node of its walk once it rests at the current one, reading all CRs with one
 * LIST per tick; a CR stalled by a failed action gets a new spec.retry, as its user would. API errors
 * (the API server restarting) are ridden out; the spec it holds is the truth.
 */
async function walk(dbs: RunDatabases, namespace: string, names: readonly string[], walks: readonly string[][], progress: WalkProgress): Promise<void> {
  const api = lifecycleObjects(dbs.kc, dbs.resource);
  const at = progress.at;
  for (const name of names) at.set(name, 0);
  const deadline = Date.now() + WALK_TIMEOUT_MS;
  let last: DatabaseObject[] = [];
  for (;;) {
    if (Date.now() > deadline) throw new Error(`the walk did not finish in ${WALK_TIMEOUT_MS / 1000} s:\n${describeAll(last, names, walks, at)}`);
    let items: DatabaseObject[];
    try {
      items = await list(dbs, namespace);
    } catch {
      await sleep(200);
      continue;
    }
    last = items;
    progress.transitions = items.reduce((sum, db) => sum + (db.status?.transition ?? 0), 0);
    for (const db of items) {
      const lie = readyOverFailure(db);
      if (lie !== undefined) progress.readyOverFailure.push(lie);
    }
    let done = true;
    await Promise.all(
      items.map(async (db) => {
        const name = db.metadata.name;
        const plan = walks[names.indexOf(name)]!;
        let step = at.get(name)!;
        // A patch that reached the API server though its answer was lost: the spec says where the walk is.
        if (step + 1 < plan.length && db.spec.desiredState === plan[step + 1]) at.set(name, ++step);
        if (!isSettledAt(db, plan[step]!)) {
          done = false;
          const stalled = conditionOf(db, 'Stalled');
          // A failed action, or one whose fate a lost sidecar took with it: its user runs it again.
          if (stalled?.status === 'True' && ['ActionFailed', 'Interrupted'].includes(stalled.reason) && stalled.observedGeneration === db.metadata.generation) {
            try {
              await api.patchSpec(namespace, name, { retry: `after-${db.status?.operation?.id}` });
              progress.retried += 1;
            } catch {
              // Tried again on the next tick.
            }
          }
          return;
        }
        if (step + 1 === plan.length) return;
        done = false;
        if (progress.held.has(name) || progress.offerResting?.(db) === true) return;
        if (LOOPED.includes(plan[step + 1] as never) && !progress.taken.has(name)) progress.startCycle?.(db);
        try {
          await api.patchSpec(namespace, name, { desiredState: plan[step + 1] });
          at.set(name, step + 1);
        } catch {
          // Tried again on the next tick.
        }
      }),
    );
    if (done && items.length === names.length) return;
    await sleep(100);
  }
}

async function list(dbs: RunDatabases, namespace: string): Promise<DatabaseObject[]> {
  const objects = dbs.kc.makeApiClient(CustomObjectsApi);
  const result = (await objects.listNamespacedCustomObject({ group: dbs.resource.group, version: dbs.resource.version, plural: dbs.resource.plural, namespace })) as { items: DatabaseObject[] };
  return result.items.map(expanded);
}

/** A CR as okt's readers see it: its status expanded (a `compact` one) before any invariant looks at it. */
function expanded(db: DatabaseObject): DatabaseObject {
  return db.status === undefined ? db : { ...db, status: expandStatus(db.status, db.metadata.uid) as LifecycleStatus };
}

/** After the faults: every CR at its last node, on `revision`, Ready for its generation, and the sink holding 1..status.sequence of each. */
async function waitUntilSettled(dbs: RunDatabases, namespace: string, names: readonly string[], walks: readonly string[][], sink: SinkUnderTest, revision: string): Promise<DatabaseObject[]> {
  const deadline = Date.now() + 90_000;
  let last: DatabaseObject[] = [];
  for (;;) {
    try {
      last = await list(dbs, namespace);
      const byUid = eventsByUid(sink.received);
      const settled = last.every((db) => isSettledAt(db, walks[names.indexOf(db.metadata.name)]!.at(-1)!) && db.status?.graphRevision === revision && hasAllEvents(db, byUid));
      if (settled && last.length === walks.length) return last;
    } catch {
      // the API server may still be coming back
    }
    if (Date.now() > deadline) {
      const byUid = eventsByUid(sink.received);
      const lines = last.map((db) => `${db.metadata.name}: ${db.status?.pathSummary} revision ${db.status?.graphRevision} (want ${revision}) sequence ${db.status?.sequence} received ${new Set(byUid.get(db.metadata.uid)?.map((e) => e.sequence)).size} Ready=${db.status?.conditions.find((c) => c.type === 'Ready')?.reason}`);
      throw new Error(`not settled after 90 s:\n${lines.join('\n')}`);
    }
    await sleep(200);
  }
}

function describeAll(items: readonly DatabaseObject[], names: readonly string[], walks: readonly string[][], at: ReadonlyMap<string, number>): string {
  return items
    .map((db) => {
      const name = db.metadata.name;
      const ready = db.status?.conditions.find((c) => c.type === 'Ready');
      return `${name}: walk ${walks[names.indexOf(name)]!.join('>')} at step ${at.get(name)} spec ${db.spec.desiredState} status ${db.status?.pathSummary} Ready=${ready?.status}/${ready?.reason}: ${ready?.message}`;
    })
    .join('\n');
}

/** A second writer: label patches on random CRs, as fast as it can, so the operator's writes meet 409s. */
async function rivalWrites(dbs: RunDatabases, namespace: string, names: readonly string[], forMs: number, count: { writes: number }): Promise<void> {
  const objects = dbs.kc.makeApiClient(CustomObjectsApi);
  const until = Date.now() + forMs;
  await Promise.all(
    [0, 1, 2].map(async () => {
      while (Date.now() < until) {
        const name = names[Math.floor(Math.random() * names.length)]!;
        try {
          await objects.patchNamespacedCustomObject({ group: dbs.resource.group, version: dbs.resource.version, plural: dbs.resource.plural, namespace, name, body: { metadata: { labels: { rival: String(count.writes++) } } } }, mergePatch);
        } catch {
          await sleep(20);
        }
      }
    }),
  );
}

function seconds(ms: number): number {
  return Math.round(ms / 100) / 10;
}

/**
 * Runs `numRuns` scenarios fast-check picks within `bounds`, each checked by runScenario, and returns
 * their summed tally. No shrinking: each run is real processes for a while; a failure prints the seed
 * and the scenario.
 */
export async function assertUnderFaults(env: RunEnvironment, bounds: ScenarioBounds, numRuns: number): Promise<RunTally> {
  let total: RunTally | undefined;
  await fc.assert(
    fc.asyncProperty(scenarioArbitrary(bounds), async (scenario) => {
      const run = await runScenario(env, scenario);
      env.log(`run: ${JSON.stringify(run)}`);
      for (const kind of bounds.kinds) expect(run.faults[kind], `${kind} faults injected`).toBeGreaterThan(0);
      total = addTallies(total, run);
    }),
    { numRuns: fcRuns(numRuns), endOnFailure: true },
  );
  return total!;
}

/** Sums of many runs, for the report. */
export function addTallies(total: RunTally | undefined, run: RunTally): RunTally {
  if (total === undefined) return { ...run, faults: { ...run.faults } };
  const sum = { ...total, faults: { ...total.faults } };
  for (const key of Object.keys(run) as (keyof RunTally)[]) {
    if (key === 'faults') for (const kind of FAULT_KINDS) sum.faults[kind] += run.faults[kind];
    else sum[key] = seconds((sum[key] + run[key]) * 1000);
  }
  return sum;
}
