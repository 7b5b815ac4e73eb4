// The parts of a fault-injection run, each a real process or server that a fault can take down and
// bring back: the sidecar (a child process with a file journal), the event sink (a receiver on a fixed
// port), and the operator replicas (`okt run` children, restarted like a kubelet restarts a pod).
import { CoordinationV1Api, type KubeConfig } from '@kubernetes/client-node';
import { execFileSync } from 'node:child_process';
import { closeSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, unlinkSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { databaseGraph } from '../../../graphs/database.ts';
import type { Graph } from '../../../src/graph/index.ts';
import type { LifecycleResourceRef } from '../../../src/controller/lifecycle/index.ts';
import type { StatusFormat } from '../../../src/kube/status-format.ts';
import { createLifecycleEventReceiver, type LifecycleEvent, type LifecycleEventReceiver } from '../../../src/events/index.ts';
import { freePort } from '../../../src/net/free-ports.ts';
import type { Observation, Operation } from '../../../src/sidecar-client/protocol.ts';
import { readJournal, replayJournal } from '../../../sidecar/journal.ts';
import { spawnSidecarProcess, type SidecarProcess } from '../../../sidecar/index.ts';
import { okt } from '../../fixtures/okt-process.ts';
import { SidecarClient } from '../../../src/sidecar-client/index.ts';
import { killHard, spawnOperator, stopGracefully } from '../helpers/operator-process.ts';

const TOKEN = 'fault-sidecar-token-0123456789abcdef';
const PROBE_INTERVAL_MS = 100;
/** How long after its disk has room again a sidecar may still end on a journal write that failed just before. */
const LATE_EXIT_MS = 1000;

export interface SidecarUnderTestOptions {
  /** Whether the actions are declared idempotent (re-run by the sidecar after a crash interrupted them). */
  idempotent: boolean;
  /** The shell script of every action; it runs with OKT_OPERATION_ID set, in the sidecar's directory. Default: a no-op that takes a little time. */
  script?: string;
  /** Put the journal on a filesystem of its own this small (a tmpfs: needs root), so that it can be filled. */
  journalDiskBytes?: number;
  /**
   * The graph revisions whose nodes get an action (default: graphs/database.ts alone). Across a graph
   * upgrade, the old and the new names (see the graph-upgrade e2e test for why both).
   */
  graphs?: readonly Graph[];
  /** A probe, every 100 ms, raising what the file `raise` in its directory says (`okt-event: <Event>` lines): see raiseFromProbe. */
  probe?: boolean;
}

/** Operation id -> how many times its action started: a runs log holds one id per start (none yet: empty). */
export function readRuns(file: string): Map<string, number> {
  const counts = new Map<string, number>();
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  for (const id of text.split('\n').filter(Boolean)) counts.set(id, (counts.get(id) ?? 0) + 1);
  return counts;
}

/** Uid -> how many times an action of that CR raised the event its cycling file says (a CR's operation ids begin with its uid). */
export function readRaised(file: string): Map<string, number> {
  const counts = new Map<string, number>();
  const uid = (id: string) => id.slice(0, 36);
  for (const [id, count] of readRuns(file)) counts.set(uid(id), (counts.get(uid(id)) ?? 0) + count);
  return counts;
}

/** The operations a journal file holds as accepted but not finished (a missing file: none). */
export function unfinishedIn(journalFile: string): string[] {
  return [...replayJournal(readJournal(journalFile)).values()].filter((r) => r.type === 'accepted').map((r) => r.operation.id);
}

/**
 * `okt sidecar` as a child process on a fixed port with a journal file. Every action first appends its
 * operation id to runs.log, so the runs of each operation can be counted independently of the sidecar;
 * an action that finds the file fail-next takes it and fails (exit 3). The sidecar can lose its memory
 * (its journal is moved aside and kept for the checks): a new epoch.
 */
export class SidecarUnderTest {
  readonly dir: string;
  readonly port: number;
  readonly url: string;
  readonly token = TOKEN;
  /** Operation id -> how many sidecar crashes or memory losses found it accepted but not finished (the journal's view). */
  readonly interruptions = new Map<string, number>();
  /** Operation id -> memory losses that found it finished in the journal while a CR's status still held it unfinished: it may run again. */
  readonly mayRerun = new Map<string, number>();
  /** Operations a memory loss found unfinished or still held: the attempts a lost journal counted are gone with it. */
  readonly forgotten = new Set<string>();
  crashes = 0;
  memoryLosses = 0;
  /** Times the sidecar ended by itself because its journal could not be written (exit 4). */
  diskFullExits = 0;
  /** Journals of the epochs it forgot, oldest first. */
  readonly #formerJournals: string[] = [];
  #process: SidecarProcess | undefined;
  #mounted = false;

  private constructor(dir: string, port: number) {
    this.dir = dir;
    this.port = port;
    this.url = `http://127.0.0.1:${port}`;
  }

  static async start(options: SidecarUnderTestOptions): Promise<SidecarUnderTest> {
    const dir = mkdtempSync(path.join(tmpdir(), 'okt-fault-sidecar-'));
    const sidecar = new SidecarUnderTest(dir, await freePort());
    writeFileSync(path.join(dir, 'token'), TOKEN);
    mkdirSync(sidecar.diskDir);
    if (options.journalDiskBytes !== undefined) {
      execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${options.journalDiskBytes}`, 'okt-fault-journal', sidecar.diskDir]);
      sidecar.#mounted = true;
    }
    mkdirSync(sidecar.cyclingDir);
    // An action of a CR with a cycling file for its node raises the event the file names, after its work (a failed one raises nothing).
    const cycling = `f="cycling/$(echo "$OKT_OPERATION_ID" | cut -c1-36).$OKT_NODE"; if [ -f "$f" ]; then echo "$OKT_OPERATION_ID" >> raised.log; cat "$f"; fi`;
    const script = `if rm fail-next 2>/dev/null; then echo "okt-test: told to fail" >&2; exit 3; fi; ${options.script ?? 'sleep 0.05'}; ${cycling}`;
    const nodes: Record<string, unknown> = {};
    for (const graph of options.graphs ?? [databaseGraph]) {
      for (const name of graph.nodeNames) {
        if (!graph.node(name).hasAction) continue;
        nodes[name] = { command: { argv: ['sh', '-c', `echo "$OKT_OPERATION_ID" >> runs.log; ${script}`] }, onSuccess: [], idempotent: options.idempotent };
      }
    }
    const config = {
      listen: { host: '127.0.0.1', port: sidecar.port },
      tokenFile: 'token',
      journal: 'disk/journal.jsonl',
      logLevel: 'silent',
      // One sidecar serves every CR of the run here, so it must run their actions side by side.
      maxActiveOperations: 256,
      graphs: { [databaseGraph.name]: { nodes, ...(options.probe ? { probe: { command: { argv: ['sh', '-c', 'cat raise 2>/dev/null; true'] }, intervalMs: PROBE_INTERVAL_MS } } : {}) } },
    };
    writeFileSync(sidecar.configFile, JSON.stringify(config));
    await sidecar.restart();
    return sidecar;
  }

  get configFile(): string {
    return path.join(this.dir, 'sidecar.json');
  }

  /** Where the journal lives (its own small filesystem when journalDiskBytes is set). */
  get diskDir(): string {
    return path.join(this.dir, 'disk');
  }

  get journalFile(): string {
    return path.join(this.diskDir, 'journal.jsonl');
  }

  /**
   * The journal's disk fills up for `forMs`: the sidecar's next journal write fails and it ends (exit 4),
   * as it must; then space comes back and it is started again, as a kubelet would, with its journal.
   */
  async fillDisk(forMs: number): Promise<void> {
    const filler = path.join(this.diskDir, 'filler');
    const fd = openSync(filler, 'w');
    try {
      const block = Buffer.alloc(64 * 1024);
      for (let size = block.length; size >= 1; ) {
        try {
          writeSync(fd, block, 0, size);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'ENOSPC') throw error;
          size = Math.floor(size / 2);
        }
      }
    } finally {
      closeSync(fd);
    }
    const running = this.#process;
    if (running === undefined) {
      unlinkSync(filler);
      return;
    }
    const exitWithin = (ms: number) => Promise.race([running.exited, sleep(ms).then(() => 'still running' as const)]);
    let exited = await exitWithin(forMs);
    unlinkSync(filler);
    // A write that failed just before the space came back ends the sidecar a moment later: waited for
    // too, else nobody would start it again and every CR would wait for a sidecar that is gone.
    if (exited === 'still running') exited = await exitWithin(LATE_EXIT_MS);
    if (exited === 'still running') return;
    expect(exited, `the sidecar's exit code when its journal cannot be written\n${running.stderr()}`).toBe(4);
    expect(running.stderr()).toMatch(/journal .*no space left on device/i);
    this.#process = undefined;
    this.diskFullExits += 1;
    this.crashes += 1;
    for (const id of this.unfinished()) this.interruptions.set(id, (this.interruptions.get(id) ?? 0) + 1);
    this.#process = await spawnSidecarProcess(this.configFile);
  }

  /** The latest journal record of every operation over every epoch, read from the files (a torn last line is ignored). */
  operations(): Map<string, Operation> {
    const records = [...this.#formerJournals, this.journalFile].flatMap((file) => readJournal(file));
    return new Map([...replayJournal(records)].map(([id, record]) => [id, record.operation]));
  }

  get cyclingDir(): string {
    return path.join(this.dir, 'cycling');
  }

  /** From now on, each action of the CR `uid` at a node of `raises` raises the event it names there (a world whose actions drive a cycle). */
  cycle(uid: string, raises: Record<string, string>): void {
    for (const [node, event] of Object.entries(raises)) writeFileSync(path.join(this.cyclingDir, `${uid}.${node}`), `okt-event: ${event}\n`);
  }

  /** The actions of the CR `uid` raise nothing any more. */
  stopCycling(uid: string): void {
    for (const file of readdirSync(this.cyclingDir)) if (file.startsWith(`${uid}.`)) unlinkSync(path.join(this.cyclingDir, file));
  }

  /** Uid -> the events the actions of that CR raised from their cycling files (runs that raised). */
  raised(): Map<string, number> {
    return readRaised(path.join(this.dir, 'raised.log'));
  }

  /** The sidecar's observation (its epoch, its probe's events). */
  async observe(): Promise<Observation> {
    const client = new SidecarClient({ baseUrl: this.url, token: TOKEN, retries: 0 });
    try {
      return await client.observe({ since: 0 });
    } finally {
      await client.close();
    }
  }

  /** Runs an operation of no CR (a life of its own before any CR meets it): `id` on `node`, to its end. */
  async runOwnOperation(id: string, node: string): Promise<Operation> {
    const client = new SidecarClient({ baseUrl: this.url, token: TOKEN, retries: 0 });
    try {
      await client.startOperation(id, { graph: databaseGraph.name, node });
      return await client.waitForOperation(id, { timeoutMs: 10_000 });
    } finally {
      await client.close();
    }
  }

  /**
   * Its probe (`probe: true`) raises `events` once (recorded while no action runs), then nothing: the
   * probe reads nothing again for a few intervals before this returns. Returns the observation with them.
   */
  async raiseFromProbe(events: readonly string[]): Promise<Observation> {
    const before = (await this.observe()).lastSeq;
    const raise = path.join(this.dir, 'raise');
    writeFileSync(raise, events.map((e) => `okt-event: ${e}\n`).join(''));
    const deadline = Date.now() + 10_000;
    let seen = await this.observe();
    while (seen.lastSeq < before + events.length) {
      if (Date.now() > deadline) throw new Error(`the probe of ${this.url} did not raise ${events.join(', ')} within 10 s (lastSeq ${seen.lastSeq}, was ${before})`);
      await sleep(PROBE_INTERVAL_MS);
      seen = await this.observe();
    }
    unlinkSync(raise);
    await sleep(4 * PROBE_INTERVAL_MS);
    return seen;
  }

  /** The next action to start fails (once). */
  failNext(): void {
    writeFileSync(path.join(this.dir, 'fail-next'), '');
  }

  /**
   * The sidecar loses its memory mid-walk, as a container restarted without its journal volume (`kill`)
   * or a rolling update to a new Pod (`term`: it stops its actions first) does: it comes back with an
   * empty journal, a new epoch. `heldUnfinished` reads which operations the CRs' status still hold
   * unfinished (those may run again when idempotent).
   */
  async forget(how: 'kill' | 'term', heldUnfinished: () => Promise<Set<string>>): Promise<void> {
    const running = this.#process;
    this.#process = undefined;
    if (running !== undefined) {
      running.child.kill(how === 'kill' ? 'SIGKILL' : 'SIGTERM');
      await running.exited;
    }
    const unfinished = new Set(this.unfinished());
    for (const id of unfinished) this.interruptions.set(id, (this.interruptions.get(id) ?? 0) + 1);
    for (const id of await heldUnfinished()) if (!unfinished.has(id)) this.mayRerun.set(id, (this.mayRerun.get(id) ?? 0) + 1);
    for (const id of [...unfinished, ...this.mayRerun.keys()]) this.forgotten.add(id);
    if (existsSync(this.journalFile)) {
      // Kept for the checks, off the journal's own (small) disk.
      const former = path.join(this.dir, `journal.epoch-${this.#formerJournals.length}.jsonl`);
      copyFileSync(this.journalFile, former);
      unlinkSync(this.journalFile);
      this.#formerJournals.push(former);
    }
    this.crashes += 1;
    this.memoryLosses += 1;
    this.#process = await spawnSidecarProcess(this.configFile);
  }

  /**
   * A second `okt sidecar` started on this one's config while it runs (a restart that did not wait for
   * the old process): it must exit 2 with one line naming the port and journal this one holds, and
   * leave the journal alone (the same file: the running one, far from journalCompactionBytes, rewrites
   * it only at start), so that this one remembers all it accepts after.
   */
  async startSecond(): Promise<void> {
    const running = this.#process;
    if (running === undefined) return;
    const journal = statSync(this.journalFile).ino;
    const second = await okt(['sidecar', '--config', this.configFile]);
    expect(second.code, `a second sidecar on the running one's config\n${second.stderr}`).toBe(2);
    expect(second.stderr).toBe(
      `okt sidecar: 127.0.0.1:${this.port} is in use by another process (the okt sidecar of pid ${running.child.pid} holds this config's journal ${this.journalFile})\n`,
    );
    expect(statSync(this.journalFile).ino, 'the journal a second sidecar was started on').toBe(journal);
    expect(running.child.exitCode, 'the running sidecar, after a second was started on its config').toBeNull();
  }

  /** Operation id -> how many times its action started, from runs.log. */
  runs(): Map<string, number> {
    return readRuns(path.join(this.dir, 'runs.log'));
  }

  /** Operations the journal holds as accepted but not finished: actions running (or about to) right now. */
  unfinished(): string[] {
    return unfinishedIn(this.journalFile);
  }

  /** Waits (up to timeoutMs) until an action runs, so that a crash lands mid-action; false if none did. */
  async waitForRunningAction(timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      if (this.unfinished().length > 0) return true;
      await sleep(5);
    }
    return false;
  }

  /** SIGKILL; records which operations the crash interrupted (the restart settles them). */
  async kill(): Promise<string[]> {
    const running = this.#process;
    this.#process = undefined;
    if (running === undefined) return [];
    running.child.kill('SIGKILL');
    await running.exited;
    this.crashes += 1;
    const interrupted = this.unfinished();
    for (const id of interrupted) this.interruptions.set(id, (this.interruptions.get(id) ?? 0) + 1);
    return interrupted;
  }

  async restart(): Promise<void> {
    if (this.#process !== undefined) return;
    this.#process = await spawnSidecarProcess(this.configFile);
  }

  async stop(): Promise<void> {
    const running = this.#process;
    this.#process = undefined;
    if (running !== undefined) {
      running.child.kill('SIGTERM');
      await running.exited;
    }
    if (this.#mounted) execFileSync('umount', [this.diskDir]);
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A CloudEvents receiver on a fixed port that records every delivery, duplicates included; it can go down and come back. */
export class SinkUnderTest {
  readonly port: number;
  readonly url: string;
  readonly received: LifecycleEvent[] = [];
  outages = 0;
  #receiver: LifecycleEventReceiver | undefined;

  private constructor(port: number) {
    this.port = port;
    this.url = `http://127.0.0.1:${port}/`;
  }

  static async start(): Promise<SinkUnderTest> {
    const sink = new SinkUnderTest(await freePort());
    await sink.open();
    return sink;
  }

  async open(): Promise<void> {
    // dedupe 0: redeliveries reach onEvent too, so the checks see every one of them.
    this.#receiver ??= await createLifecycleEventReceiver({ port: this.port, onEvent: (event) => void this.received.push(event) });
  }

  /** Closes the listener and every connection: sends in flight fail and are retried by the operator. */
  async close(): Promise<void> {
    const receiver = this.#receiver;
    this.#receiver = undefined;
    if (receiver === undefined) return;
    this.outages += 1;
    await receiver.close();
  }
}

export interface OperatorsOptions {
  kc: KubeConfig;
  kubeconfigPath?: string;
  namespace: string;
  sidecar: SidecarUnderTest;
  sink: SinkUnderTest;
  /** 1: a single operator; 2: two replicas with leader election (short lease). */
  replicas: number;
  /** Watch the CRs with these labels in every namespace, instead of `namespace` alone (which keeps the Lease). */
  labelSelector?: string;
  /** okt run --teardown-grace, in seconds. */
  teardownGraceSeconds?: number;
  /** okt run --watch-idle-timeout and --request-timeout, in seconds (a silent network makes both count). */
  watchIdleSeconds?: number;
  requestTimeoutSeconds?: number;
  /** The CRs' resource (default okt.dev's databases) and okt run --status-format (default okt's), as the CRD applied says. */
  resource?: LifecycleResourceRef;
  statusFormat?: StatusFormat;
}

const LEASE = 'okt-faults';

/**
 * The operator replicas, each supervised as a kubelet would: a replica that exits (killed by a fault,
 * or by itself, e.g. after losing its lease) is started again, under a new identity. They run
 * graphs/database.ts until rolled to another revision of it.
 */
export class OperatorsUnderTest {
  /** Replicas that exited without being killed by a fault (a lost lease, a crash). */
  selfExits = 0;
  kills = 0;
  /** The graph the replicas run (a replica started after a roll runs the new one). */
  graph: Graph = databaseGraph;
  readonly #options: OperatorsOptions;
  /** The graph file of the revision rolled to (written to a directory of its own); undefined: graphs/database.ts. */
  #graphFile: string | undefined;
  #graphDir: string | undefined;
  readonly #slots: { child: ReturnType<typeof spawnOperator>; identity: string; killed: boolean }[] = [];
  readonly #logs: string[] = [];
  #generation = 0;
  #stopping = false;

  constructor(options: OperatorsOptions) {
    this.#options = options;
    for (let slot = 0; slot < options.replicas; slot++) this.#spawn(slot);
  }

  /** kill -9 the replica that leads (the only one when there is no election); it comes back after restartAfterMs. */
  async killLeader(restartAfterMs: number): Promise<void> {
    const slot = await this.#leaderSlot();
    const replica = this.#slots[slot]!;
    replica.killed = true;
    this.kills += 1;
    await killHard(replica.child);
    await sleep(restartAfterMs);
    if (!this.#stopping) this.#spawn(slot);
  }

  /**
   * A rollout to another revision of the graph, as a Deployment with the Recreate strategy does it:
   * every replica is stopped (SIGTERM: it drains and releases its Lease; SIGKILL after 5 s, as its
   * stop then still waits for its long-polls on running actions, up to 30 s), then `whileDown` runs
   * (the pause of the rollout), then every replica starts on `graph`, written as JSON to a file of its
   * own. No replica of the old revision ever runs beside one of the new.
   */
  async roll(graph: Graph, whileDown: () => Promise<void>): Promise<void> {
    this.#graphDir ??= mkdtempSync(path.join(tmpdir(), 'okt-fault-graph-'));
    const file = path.join(this.#graphDir, `database-${graph.revision}.json`);
    writeFileSync(file, JSON.stringify(graph.toData()));
    await Promise.all(this.#slots.map(async (replica) => {
      replica.killed = true;
      await stopGracefully(replica.child, 5_000);
    }));
    this.#graphFile = file;
    this.graph = graph;
    await whileDown();
    if (!this.#stopping) this.#slots.forEach((_, slot) => this.#spawn(slot));
  }

  /** Every replica's output, for a failure's diagnostics. */
  logs(): string {
    return [...this.#logs, ...this.#slots.map((s) => `--- ${s.identity} (running)\n${s.child.output()}`)].join('\n').slice(-20_000);
  }

  /** Counts lines of the replicas' logs (finished and running) that match. */
  countLogLines(pattern: RegExp): number {
    const all = [...this.#logs, ...this.#slots.map((s) => s.child.output())].join('\n');
    return all.split('\n').filter((line) => pattern.test(line)).length;
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await Promise.all(this.#slots.map((slot) => killHard(slot.child)));
    if (this.#graphDir !== undefined) rmSync(this.#graphDir, { recursive: true, force: true });
  }

  #spawn(slot: number): void {
    const { namespace, sidecar, sink, replicas, kubeconfigPath, labelSelector, teardownGraceSeconds, watchIdleSeconds, requestTimeoutSeconds, resource, statusFormat } = this.#options;
    const identity = `replica-${slot}-${this.#generation++}`;
    const election = replicas > 1
      ? ['--leader-elect', '--leader-election-namespace', namespace, '--leader-election-id', LEASE, '--leader-election-identity', identity,
         '--lease-duration', '3', '--renew-deadline', '2', '--retry-period', '0.5']
      : [];
    const scope = labelSelector === undefined ? { namespace } : {};
    const child = spawnOperator({
      ...scope, sidecarUrl: sidecar.url, token: sidecar.token,
      extra: [
        '--sink', sink.url, '--log-level', 'warn', ...election,
        // The teardown namespace's CRs name a sidecar of their own on a free loopback port, trusted with the operator-wide token.
        '--sidecar-url-allow', 'http://127.0.0.1:*',
        ...(labelSelector === undefined ? [] : ['--label-selector', labelSelector]),
        ...(teardownGraceSeconds === undefined ? [] : ['--teardown-grace', String(teardownGraceSeconds)]),
        ...(watchIdleSeconds === undefined ? [] : ['--watch-idle-timeout', String(watchIdleSeconds)]),
        ...(requestTimeoutSeconds === undefined ? [] : ['--request-timeout', String(requestTimeoutSeconds)]),
      ],
      ...(kubeconfigPath === undefined ? {} : { kubeconfigPath }),
      ...(this.#graphFile === undefined ? {} : { graphFile: this.#graphFile }),
      ...(resource === undefined ? {} : { resource }),
      ...(statusFormat === undefined ? {} : { statusFormat }),
    });
    const replica = { child, identity, killed: false };
    this.#slots[slot] = replica;
    child.once('exit', (code, signal) => {
      this.#logs.push(`--- ${identity} exited (${code ?? signal})\n${child.output().slice(-4000)}`);
      if (replica.killed || this.#stopping) return;
      this.selfExits += 1;
      // A restarted pod: back after a short pause, a fresh candidate (unless a rollout replaces it meanwhile).
      setTimeout(() => {
        if (!this.#stopping && !replica.killed && this.#slots[slot] === replica) this.#spawn(slot);
      }, 300);
    });
  }

  async #leaderSlot(): Promise<number> {
    if (this.#options.replicas === 1) return 0;
    const leases = this.#options.kc.makeApiClient(CoordinationV1Api);
    for (let tries = 0; tries < 100; tries++) {
      try {
        const holder = (await leases.readNamespacedLease({ name: LEASE, namespace: this.#options.namespace })).spec?.holderIdentity;
        const slot = this.#slots.findIndex((s) => s.identity === holder && s.child.exitCode === null && s.child.signalCode === null);
        if (slot >= 0) return slot;
      } catch {
        // No Lease yet, or the API server is restarting: look again.
      }
      await sleep(100);
    }
    return 0; // nobody leads for 10 s: kill the first replica anyway
  }
}
