import { setTimeout as sleep } from 'node:timers/promises';
import { isConflict, isNotFound, LEASES, type KubeObject, type KubeTransport } from '../kube/transport/index.ts';
import { createLogger, type Logger } from './logger.ts';

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}
export interface Lease extends KubeObject {
  spec?: LeaseSpec;
}

/** Written with each acquire and renewal of the Lease, read from the Lease this process acquired. */
export interface LeaseRecord {
  /** The annotations to write over `current` (the Lease's, as last read or written). */
  annotations(current: Readonly<Record<string, string>>): Record<string, string>;
  /** Leadership begins; `annotations` are what the previous holder left. */
  acquired(annotations: Readonly<Record<string, string>>): void;
}

/** client-go's defaults. */
export const DEFAULT_LEADER_ELECTION = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 2_000 } as const;
const JITTER = 1.2;

export interface LeaderElectionOptions {
  transport: KubeTransport;
  /** Where the coordination.k8s.io/v1 Lease lives. */
  namespace: string;
  name: string;
  /** Unique per replica (e.g. pod name + random suffix). */
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  onStartedLeading?: () => void;
  /** What the leader writes into the Lease's annotations with each acquire and renewal, and reads back when it acquires. */
  record?: LeaseRecord;
  /** Called once leadership is lost or released; the process should stop reconciling. */
  onStoppedLeading?: () => void;
  onNewLeader?: (identity: string) => void;
  logger?: Logger;
}

/** RFC 3339 with microseconds, the format of metav1.MicroTime. */
export function microTime(date: Date): string {
  return date.toISOString().replace(/Z$/, '000Z');
}

/**
 * Leader election on a Lease, as client-go does it: acquire when the lease is free or expired
 * (expiry judged by this replica's clock from when it last saw the record change), renew every
 * retry period, step down when no renewal succeeded within the renew deadline. Writes carry the
 * Lease's resourceVersion, so two candidates never both win.
 */
export class LeaderElector {
  readonly identity: string;
  readonly #opts: LeaderElectionOptions;
  readonly #leaseMs: number;
  readonly #renewMs: number;
  readonly #retryMs: number;
  readonly #log: Logger;
  #lease: Lease | undefined;
  #observedRecord = '';
  #observedAt = 0;
  #leader = false;
  #knownLeader = '';
  #abort = new AbortController();
  #running: Promise<void> | undefined;
  #steppedDown = false;

  constructor(options: LeaderElectionOptions) {
    const leaseMs = options.leaseDurationMs ?? DEFAULT_LEADER_ELECTION.leaseDurationMs;
    const renewMs = options.renewDeadlineMs ?? DEFAULT_LEADER_ELECTION.renewDeadlineMs;
    const retryMs = options.retryPeriodMs ?? DEFAULT_LEADER_ELECTION.retryPeriodMs;
    if (!options.identity) throw new Error('leader election: identity must not be empty');
    if (!(leaseMs > renewMs)) throw new Error(`leader election: leaseDurationMs (${leaseMs}) must be greater than renewDeadlineMs (${renewMs})`);
    if (!(renewMs > JITTER * retryMs)) throw new Error(`leader election: renewDeadlineMs (${renewMs}) must be greater than ${JITTER} x retryPeriodMs (${retryMs})`);
    if (!(retryMs > 0)) throw new Error(`leader election: retryPeriodMs must be positive, got ${retryMs}`);
    if (leaseMs % 1000 !== 0) throw new Error(`leader election: leaseDurationMs must be whole seconds (the Lease stores seconds), got ${leaseMs}`);
    this.#opts = options;
    this.identity = options.identity;
    this.#leaseMs = leaseMs;
    this.#renewMs = renewMs;
    this.#retryMs = retryMs;
    this.#log = (options.logger ?? createLogger()).child({ lease: `${options.namespace}/${options.name}`, identity: options.identity });
  }

  get isLeader(): boolean {
    // A renewal abandoned at the renew deadline may still succeed later: it must not make this replica lead again.
    return this.#leader && !this.#steppedDown;
  }
  /** The holder this replica last saw ('' when none). */
  get leader(): string {
    return this.#knownLeader;
  }

  /** Campaigns until leading, leads until leadership is lost or `stop()`; then resolves. */
  run(): Promise<void> {
    this.#running ??= this.#campaign();
    return this.#running;
  }

  /** Stops campaigning and, when leading, releases the Lease so another replica takes over at once. */
  async stop(): Promise<void> {
    this.#abort.abort();
    await this.#running;
  }

  async #campaign(): Promise<void> {
    const signal = this.#abort.signal;
    while (!signal.aborted && !this.#leader) {
      if (!(await this.#attempt())) await this.#pause(this.#retryMs * (1 + Math.random() * (JITTER - 1)));
    }
    if (signal.aborted) return;
    this.#log.info('started leading');
    this.#opts.onStartedLeading?.();
    let lastRenew = Date.now();
    while (!signal.aborted) {
      await this.#pause(this.#retryMs);
      if (signal.aborted) break;
      if (await this.#beforeDeadline(this.#attempt(), lastRenew + this.#renewMs)) {
        lastRenew = Date.now();
      } else if (!this.#leader || Date.now() - lastRenew >= this.#renewMs) {
        break;
      }
    }
    if (signal.aborted && this.#leader) await this.#release();
    this.#steppedDown = true;
    this.#leader = false;
    this.#log.info('stopped leading');
    this.#opts.onStoppedLeading?.();
  }

  /**
   * The attempt's result, or false once `deadline` passes first: a renewal hanging on a slow API
   * server must not keep this replica leading past the renew deadline (client-go bounds it the same way).
   */
  async #beforeDeadline(attempt: Promise<boolean>, deadline: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
    });
    try {
      return await Promise.race([attempt, expired]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** One try to acquire or renew; false when another holder owns an unexpired lease or a write lost a race. */
  async #attempt(): Promise<boolean> {
    const { transport, namespace, name } = this.#opts;
    const now = new Date();
    try {
      // While leading, write straight over our own last version: one request per renewal.
      let lease = this.#leader ? this.#lease : undefined;
      if (!lease) {
        try {
          lease = await transport.get<Lease>(LEASES, namespace, name);
        } catch (err) {
          if (!isNotFound(err)) throw err;
          this.#lease = await transport.create<Lease>(LEASES, namespace, {
            apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name, namespace, annotations: this.#annotations(undefined) },
            spec: this.#record(now, undefined),
          });
          this.#observe(this.#lease.spec, now);
          return this.#lead({});
        }
        this.#observe(lease.spec, now);
        const holder = lease.spec?.holderIdentity ?? '';
        const durationMs = (lease.spec?.leaseDurationSeconds ?? this.#leaseMs / 1000) * 1000;
        if (holder !== '' && holder !== this.identity && this.#observedAt + durationMs > now.getTime()) {
          this.#leader = false;
          return false;
        }
      }
      const previous = lease.metadata?.annotations ?? {};
      const metadata = { ...lease.metadata, annotations: this.#annotations(lease) };
      this.#lease = await transport.replace<Lease>(LEASES, namespace, name, { ...lease, metadata, spec: this.#record(now, lease.spec) });
      this.#observe(this.#lease.spec, now);
      return this.#lead(previous);
    } catch (err) {
      this.#lease = undefined; // read it afresh next time
      // A conflict is a lost race with another candidate: expected, not worth a warning.
      if (!isConflict(err)) this.#log.warn({ err }, 'lease acquire/renew failed');
      return false;
    }
  }

  /** Leading from now on; `previous`: the annotations of the Lease as this replica acquired it. */
  #lead(previous: Readonly<Record<string, string>>): true {
    if (!this.#leader) this.#opts.record?.acquired(previous);
    this.#leader = true;
    return true;
  }

  #annotations(lease: Lease | undefined): Record<string, string> {
    const current = lease?.metadata?.annotations ?? {};
    return { ...current, ...this.#opts.record?.annotations(current) };
  }

  #record(now: Date, previous: LeaseSpec | undefined): LeaseSpec {
    const holding = previous?.holderIdentity === this.identity;
    return {
      holderIdentity: this.identity,
      leaseDurationSeconds: this.#leaseMs / 1000,
      acquireTime: holding && previous?.acquireTime ? previous.acquireTime : microTime(now),
      renewTime: microTime(now),
      leaseTransitions: holding ? (previous?.leaseTransitions ?? 0) : (previous?.leaseTransitions ?? -1) + 1,
    };
  }

  #observe(spec: LeaseSpec | undefined, now: Date): void {
    const record = JSON.stringify(spec ?? {});
    if (record !== this.#observedRecord) {
      this.#observedRecord = record;
      this.#observedAt = now.getTime();
    }
    const holder = spec?.holderIdentity ?? '';
    if (holder !== this.#knownLeader) {
      this.#knownLeader = holder;
      if (holder) this.#opts.onNewLeader?.(holder);
    }
  }

  /** client-go's release: empty holder, 1 s duration, so the next candidate need not wait out the lease. */
  async #release(): Promise<void> {
    const lease = this.#lease;
    if (!lease) return;
    const now = microTime(new Date());
    try {
      await this.#opts.transport.replace<Lease>(LEASES, this.#opts.namespace, this.#opts.name, {
        ...lease,
        spec: { holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now, leaseTransitions: lease.spec?.leaseTransitions ?? 0 },
      });
      this.#log.info('released lease');
    } catch (err) {
      this.#log.warn({ err }, 'lease release failed; it expires on its own');
    }
  }

  #pause(ms: number): Promise<void> {
    return sleep(ms, undefined, { signal: this.#abort.signal }).catch(() => undefined);
  }
}
