// A fault-injection run: many CRs walk the database graph while fast-check-chosen faults hit the
// operator, the API server, the sidecar and the event sink; then every invariant is checked.
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import fc from 'fast-check';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { databaseGraph } from '../../../graphs/database.ts';
import { createPlanner } from '../../../src/plan/index.ts';
import type { ControlPlane } from '../../../src/cluster/index.ts';
import { createNamespace, mergePatch } from '../helpers/cluster.ts';
import { DATABASES, databases, type DatabaseObject } from '../helpers/lifecycle.ts';
import { checkEvents, checkOperations, eventsByUid, hasAllEvents, isSettledAt } from './checks.ts';
import { OperatorsUnderTest, SidecarUnderTest, SinkUnderTest } from './system.ts';

export const FAULT_KINDS = ['operator', 'apiserver', 'sidecar', 'sink', 'rival'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** One fault: when (after that many transitions in total, so it lands while CRs move) and for how long. */
export interface Fault {
  kind: FaultKind;
  afterTransitions: number;
  /** operator: pause before the restart; apiserver, sidecar, sink: downtime; rival: how long it writes. */
  forMs: number;
}

export interface Scenario {
  /** Per CR, the desired nodes it is moved to one after the other (each once the previous is reached). */
  walks: string[][];
  /** 1: one operator; 2: two replicas with leader election, and an operator fault kills the leader. */
  replicas: number;
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
};

export interface ScenarioBounds {
  kinds: readonly FaultKind[];
  crs: { min: number; max: number };
  /** How many times each CR goes Running <-> Servicing before it stops. */
  loops: { min: number; max: number };
  /** Faults beyond one of each kind. */
  extraFaults: { min: number; max: number };
  replicas: readonly number[];
}

/** Walks: into the Running/Servicing loop, around it, and out to Stopping; faults spread over the walk. */
export function scenarioArbitrary(bounds: ScenarioBounds): fc.Arbitrary<Scenario> {
  const walk = fc
    .array(fc.constantFrom(...LOOPED), { minLength: bounds.loops.min, maxLength: bounds.loops.max })
    .map((targets) => [...targets.filter((t, i) => i === 0 || targets[i - 1] !== t), 'Stopping']);
  return fc
    .record({ walks: fc.array(walk, { minLength: bounds.crs.min, maxLength: bounds.crs.max }), replicas: fc.constantFrom(...bounds.replicas) })
    .chain(({ walks, replicas }) => {
      const total = walks.reduce((sum, w) => sum + walkTransitions(w), 0);
      const faultOf = (kind: FaultKind) =>
        fc.record({ kind: fc.constant(kind), afterTransitions: fc.integer({ min: 0, max: Math.floor(total * 0.9) }), forMs: fc.integer(DOWNTIME_MS[kind]) });
      // Every kind at least once per run, then more of any kind.
      const faults = fc
        .tuple(fc.tuple(...bounds.kinds.map(faultOf)), fc.array(fc.constantFrom(...bounds.kinds).chain(faultOf), { minLength: bounds.extraFaults.min, maxLength: bounds.extraFaults.max }))
        .map(([each, extra]) => [...each, ...extra].sort((a, b) => a.afterTransitions - b.afterTransitions));
      return fc.record({ walks: fc.constant(walks), replicas: fc.constant(replicas), faults });
    });
}

export interface RunEnvironment {
  kc: KubeConfig;
  /** Another control plane than the run's shared one (needed to restart its API server). */
  plane?: ControlPlane;
  log: (line: string) => void;
}

/** What one run did, for the report. */
export interface RunTally {
  runs: number;
  /** Runs with two operator replicas under leader election. */
  replicatedRuns: number;
  crs: number;
  transitions: number;
  faults: Record<FaultKind, number>;
  /** Sidecar crashes that found an action running. */
  interruptedOperations: number;
  reruns: number;
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
  const namespace = await createNamespace(kc, 'okt-faults');
  const sidecar = await SidecarUnderTest.start({ idempotent: true });
  const sink = await SinkUnderTest.start();
  const operators = new OperatorsUnderTest({
    kc, namespace, sidecar, sink, replicas: scenario.replicas,
    ...(env.plane === undefined ? {} : { kubeconfigPath: env.plane.kubeconfigPath }),
  });
  const faults = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  const progress = { transitions: 0, walked: false };
  const rival = { writes: 0 };
  try {
    const names = scenario.walks.map((_, i) => `db-${i}`);
    const api = databases(kc);
    await Promise.all(names.map((name, i) => api.create(namespace, name, { desiredState: scenario.walks[i]![0]!, onLeaf: 'Keep' })));

    const inject = async (fault: Fault): Promise<void> => {
      faults[fault.kind] += 1;
      switch (fault.kind) {
        case 'operator':
          await operators.killLeader(fault.forMs);
          break;
        case 'apiserver':
          if (env.plane === undefined) throw new Error('an API server restart needs a control plane of its own (env.plane)');
          await env.plane.restartApiServer({ downMs: fault.forMs });
          break;
        case 'sidecar':
          // Aim at the middle of an action: the journal shows one accepted and not yet finished.
          if (!progress.walked) await sidecar.waitForRunningAction(3000);
          await sidecar.kill();
          await sleep(fault.forMs);
          await sidecar.restart();
          break;
        case 'sink':
          await sink.close();
          await sleep(fault.forMs);
          await sink.open();
          break;
        case 'rival':
          await rivalWrites(kc, namespace, names, fault.forMs, rival);
          break;
      }
    };
    const walking = walk(kc, namespace, names, scenario.walks, progress).finally(() => (progress.walked = true));
    const faulting = injectAll(scenario.faults, progress, inject, env.log);
    await Promise.all([walking, faulting]);
    const walkedAt = Date.now();

    // Everything is back up: each CR must rest at its last desired node with all its events at the sink.
    const settled = await waitUntilSettled(kc, namespace, names, scenario.walks, sink);
    const settledAt = Date.now();
    const operations = sidecar.operations();
    const runs = sidecar.runs();
    const tally: RunTally = {
      runs: 1, replicatedRuns: scenario.replicas > 1 ? 1 : 0, crs: names.length, transitions: 0, faults, interruptedOperations: sidecar.interruptions.size,
      reruns: 0, operations: 0, events: 0, redeliveries: 0, rivalWrites: rival.writes,
      conflictsLogged: operators.countLogLines(/\b409\b|[Cc]onflict/), operatorSelfExits: operators.selfExits,
      walkSeconds: seconds(walkedAt - started), settleSeconds: seconds(settledAt - walkedAt), seconds: 0,
    };
    const byUid = eventsByUid(sink.received);
    for (const db of settled) {
      const walked = scenario.walks[names.indexOf(db.metadata.name)]!;
      expect(db.status!.transition, `${db.metadata.name}: transitions of the walk ${walked.join('>')}, no more`).toBe(walkTransitions(walked));
      tally.transitions += db.status!.transition;
      const events = checkEvents(db, byUid.get(db.metadata.uid) ?? []);
      tally.events += events.events;
      tally.redeliveries += events.redeliveries;
      const ops = checkOperations(db, operations, runs, sidecar.interruptions);
      tally.operations += ops.operations;
      tally.reruns += ops.reruns;
    }
    tally.seconds = seconds(Date.now() - started);
    return tally;
  } catch (error) {
    env.log(`run failed; operator logs:\n${operators.logs()}`);
    throw error;
  } finally {
    await operators.stop();
    await sidecar.stop();
    await sink.close();
  }
}

/** Faults of one kind one after the other; kinds overlap, as independent failures do. */
async function injectAll(faults: readonly Fault[], progress: { transitions: number; walked: boolean }, inject: (f: Fault) => Promise<void>, log: (line: string) => void): Promise<void> {
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

/**
 * Moves each CR to the next node of its walk once it rests at the current one, reading all CRs with one
 * LIST per tick. API errors (the API server restarting) are ridden out; the spec it holds is the truth.
 */
async function walk(kc: KubeConfig, namespace: string, names: readonly string[], walks: readonly string[][], progress: { transitions: number }): Promise<void> {
  const api = databases(kc);
  const at = new Map(names.map((name) => [name, 0]));
  const deadline = Date.now() + WALK_TIMEOUT_MS;
  let last: DatabaseObject[] = [];
  for (;;) {
    if (Date.now() > deadline) throw new Error(`the walk did not finish in ${WALK_TIMEOUT_MS / 1000} s:\n${describeAll(last, names, walks, at)}`);
    let items: DatabaseObject[];
    try {
      items = await list(kc, namespace);
    } catch {
      await sleep(200);
      continue;
    }
    last = items;
    progress.transitions = items.reduce((sum, db) => sum + (db.status?.transition ?? 0), 0);
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
          return;
        }
        if (step + 1 === plan.length) return;
        done = false;
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

async function list(kc: KubeConfig, namespace: string): Promise<DatabaseObject[]> {
  const objects = kc.makeApiClient(CustomObjectsApi);
  const result = (await objects.listNamespacedCustomObject({ group: DATABASES.group, version: DATABASES.version, plural: DATABASES.plural, namespace })) as { items: DatabaseObject[] };
  return result.items;
}

/** After the faults: every CR at its last node, Ready for its generation, and the sink holding 1..status.sequence of each. */
async function waitUntilSettled(kc: KubeConfig, namespace: string, names: readonly string[], walks: readonly string[][], sink: SinkUnderTest): Promise<DatabaseObject[]> {
  const deadline = Date.now() + 90_000;
  let last: DatabaseObject[] = [];
  for (;;) {
    try {
      last = await list(kc, namespace);
      const byUid = eventsByUid(sink.received);
      const settled = last.every((db) => isSettledAt(db, walks[names.indexOf(db.metadata.name)]!.at(-1)!) && hasAllEvents(db, byUid));
      if (settled && last.length === walks.length) return last;
    } catch {
      // the API server may still be coming back
    }
    if (Date.now() > deadline) {
      const byUid = eventsByUid(sink.received);
      const lines = last.map((db) => `${db.metadata.name}: ${db.status?.pathSummary} sequence ${db.status?.sequence} received ${new Set(byUid.get(db.metadata.uid)?.map((e) => e.sequence)).size} Ready=${db.status?.conditions.find((c) => c.type === 'Ready')?.reason}`);
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
async function rivalWrites(kc: KubeConfig, namespace: string, names: readonly string[], forMs: number, count: { writes: number }): Promise<void> {
  const objects = kc.makeApiClient(CustomObjectsApi);
  const until = Date.now() + forMs;
  await Promise.all(
    [0, 1, 2].map(async () => {
      while (Date.now() < until) {
        const name = names[Math.floor(Math.random() * names.length)]!;
        try {
          await objects.patchNamespacedCustomObject({ group: DATABASES.group, version: DATABASES.version, plural: DATABASES.plural, namespace, name, body: { metadata: { labels: { rival: String(count.writes++) } } } }, mergePatch);
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
    { numRuns, endOnFailure: true },
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
