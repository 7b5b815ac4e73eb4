// The probe of one graph: run periodically, it says which node the application is observed in, and
// raises events outside any action (a crash seen while no operation runs, say). An event is recorded
// when the probe's raised events change (edge-triggered), not at every tick. Recorded events are
// journaled before anyone can see them, so that after a restart with the journal they are still
// there and their sequence goes on (a new journal, a new epoch, starts it again at 0).
import path from 'node:path';
import { NodeNameSchema, EventNameSchema, type Observation, type ObservedEvent } from '../src/sidecar-client/protocol.ts';
import { callHttp } from './actions.ts';
import type { ProbeConfig } from './config.ts';
import { KEPT_OBSERVED_EVENTS } from './journal.ts';
import { runProcess } from './process.ts';

export interface ProbeReading {
  ok: boolean;
  message: string;
  state: string | null;
  events: string[];
}

export async function readProbe(probe: ProbeConfig, baseDir: string, killGraceMs: number): Promise<ProbeReading> {
  let code: number | null;
  let states: string[] = [];
  let events: string[] = [];
  let message: string;
  if (probe.command !== undefined) {
    const result = await runProcess({
      argv: probe.command.argv,
      env: { ...(process.env as Record<string, string>), ...probe.command.env },
      cwd: path.resolve(baseDir, probe.command.cwd ?? '.'),
      timeoutMs: probe.timeoutMs,
      killGraceMs,
      tailLines: 5,
    });
    if (result.ended !== 'exited') {
      return { ok: false, message: result.error ?? `probe ${result.ended}`, state: null, events: [] };
    }
    code = result.exitCode;
    ({ states, events } = result);
    message = `exit code ${code}${result.tail.length > 0 ? `: ${result.tail.at(-1)}` : ''}`;
  } else if (probe.http !== undefined) {
    try {
      const answer = await callHttp(probe.http, undefined, AbortSignal.timeout(probe.timeoutMs));
      code = answer.status;
      const body = answer.json as { state?: unknown; events?: unknown } | undefined;
      if (typeof body?.state === 'string') states = [body.state];
      if (Array.isArray(body?.events)) events = body.events.map(String);
      message = `HTTP ${code}`;
    } catch (error) {
      return { ok: false, message: (error as Error).message, state: null, events: [] };
    }
  } else {
    return { ok: false, message: 'no probe configured', state: null, events: [] };
  }
  const mappedState = code === null ? undefined : probe.states[String(code)];
  const mappedEvent = code === null ? undefined : probe.events[String(code)];
  const state = states.at(-1) ?? mappedState ?? null;
  const raised = events.length > 0 ? events : mappedEvent !== undefined ? [mappedEvent] : [];
  if (state !== null && !NodeNameSchema.safeParse(state).success) {
    return { ok: false, message: `the probe reported ${JSON.stringify(state)}, not a node name`, state: null, events: [] };
  }
  const badEvent = raised.find((e) => !EventNameSchema.safeParse(e).success);
  if (badEvent !== undefined) {
    return { ok: false, message: `the probe raised ${JSON.stringify(badEvent)}, not an event name`, state, events: [] };
  }
  return { ok: true, message, state, events: raised };
}

export class GraphProbe {
  private reading: ProbeReading = { ok: false, message: 'not probed yet', state: null, events: [] };
  private observedAt: string | null = null;
  private readonly events: ObservedEvent[];
  /** The last seq given to an event (journaled or not: never given twice). */
  private seq: number;
  /** The last seq of an event journaled and visible. */
  private lastSeq: number;
  private lastSignature = '';
  private timer: NodeJS.Timeout | undefined;
  private inFlight: Promise<void> | undefined;
  private stopped = false;
  private readonly graph: string;
  private readonly probe: ProbeConfig | undefined;
  private readonly baseDir: string;
  private readonly killGraceMs: number;
  private readonly isIdle: () => boolean;
  private readonly record: (event: ObservedEvent) => Promise<void>;

  constructor(options: {
    graph: string;
    probe: ProbeConfig | undefined;
    baseDir: string;
    killGraceMs: number;
    /** True while no operation of this graph runs: only then are probe events recorded. */
    isIdle: () => boolean;
    /** Makes an event durable (the journal); it becomes visible once this resolves. Default: nothing to do. */
    record?: (event: ObservedEvent) => Promise<void>;
    /** The events recorded before (from the journal), oldest first, and the last seq given. */
    restored?: { events: readonly ObservedEvent[]; lastSeq: number };
  }) {
    this.graph = options.graph;
    this.probe = options.probe;
    this.baseDir = options.baseDir;
    this.killGraceMs = options.killGraceMs;
    this.isIdle = options.isIdle;
    this.record = options.record ?? (() => Promise.resolve());
    this.events = (options.restored?.events ?? []).slice(-KEPT_OBSERVED_EVENTS);
    this.seq = Math.max(options.restored?.lastSeq ?? 0, this.events.at(-1)?.seq ?? 0);
    this.lastSeq = this.seq;
  }

  start(): void {
    if (this.probe === undefined) return;
    const tick = () => {
      if (this.stopped) return;
      void this.probeNow().finally(() => {
        if (!this.stopped) this.timer = setTimeout(tick, this.probe?.intervalMs).unref();
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.inFlight;
  }

  /** Probes now (or joins the probe already running); nothing once stopped (the journal may be closing). */
  probeNow(): Promise<void> {
    if (this.probe === undefined || this.stopped) return Promise.resolve();
    this.inFlight ??= this.runOnce(this.probe).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async runOnce(probe: ProbeConfig): Promise<void> {
    const idleBefore = this.isIdle();
    const reading = await readProbe(probe, this.baseDir, this.killGraceMs);
    this.reading = reading;
    this.observedAt = new Date().toISOString();
    const signature = reading.events.join(',');
    if (signature !== this.lastSignature && idleBefore && this.isIdle()) {
      const at = this.observedAt;
      const fresh = reading.events.map((event) => ({ seq: ++this.seq, event, at, message: reading.message }));
      try {
        await Promise.all(fresh.map((event) => this.record(event)));
      } catch (error) {
        // Not durable, so not shown; the signature stays, so that the next probe records them again.
        this.reading = { ...reading, ok: false, message: `could not journal the probe's events: ${(error as Error).message}` };
        return;
      }
      this.events.push(...fresh);
      if (this.events.length > KEPT_OBSERVED_EVENTS) this.events.splice(0, this.events.length - KEPT_OBSERVED_EVENTS);
      if (fresh.length > 0) this.lastSeq = (fresh.at(-1) as ObservedEvent).seq;
    }
    this.lastSignature = signature;
  }

  /** The observation without the epoch, which the server adds. */
  observation(since: number, activeOperations: string[]): Omit<Observation, 'epoch'> {
    return {
      graph: this.graph,
      state: this.reading.state,
      observedAt: this.observedAt,
      probe: { ok: this.reading.ok, message: this.reading.message },
      events: this.events.filter((e) => e.seq > since),
      lastSeq: this.lastSeq,
      activeOperations,
    };
  }
}
