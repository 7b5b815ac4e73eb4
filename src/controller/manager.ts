import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { KubeObject, KubeTransport } from '../kube/transport/index.ts';
import type { Controller } from './controller.ts';
import type { Informer } from './informer.ts';
import { LeaderElector, type LeaseRecord } from './leader-election.ts';
import { createControllerMetrics, type ControllerMetrics } from './metrics.ts';
import { startHealthServer, type HealthServer, type ReadinessReport } from './health-server.ts';
import { createLogger, type Logger } from './logger.ts';

export interface ManagerLeaderElection {
  namespace: string;
  /** The Lease's name. */
  name: string;
  /** Default: `<hostname>_<random uuid>`. */
  identity?: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
}

export interface ManagerOptions {
  transport: KubeTransport;
  logger?: Logger;
  /** Default: fresh metrics that include the transport's request counters. */
  metrics?: ControllerMetrics;
  /** /healthz, /readyz, /metrics; false: no server. */
  health?: { port: number; host?: string } | false;
  /** Absent or false: this replica reconciles as soon as its caches are synced. */
  leaderElection?: ManagerLeaderElection | false;
  /** Kept in the Lease's annotations by the leader (with leader election only). */
  leaseRecord?: LeaseRecord;
  /**
   * Leadership lost without `stop()` (renewals failed past the renew deadline, or another replica
   * holds the Lease). The manager has already stopped its controllers: queued keys dropped, the
   * reconciles running at the loss finished. A process should exit so it comes back as a fresh candidate.
   */
  onLeadershipLost?: () => void;
}

/**
 * Runs informers and controllers of one operator process: caches start at once (a standby
 * replica keeps them warm), controllers start once the caches are synced and, with leader
 * election, once this replica leads. `stop()` drains the controllers, then releases the Lease;
 * a lost Lease stops them without draining.
 */
export class Manager {
  readonly metrics: ControllerMetrics;
  readonly logger: Logger;
  readonly #options: ManagerOptions;
  readonly #informers: Informer<KubeObject>[] = [];
  readonly #controllers: Controller[] = [];
  #elector: LeaderElector | undefined;
  #server: HealthServer | undefined;
  #controllersRunning: Promise<void> | undefined;
  #stopping = false;
  #leadershipLost = false;

  constructor(options: ManagerOptions) {
    this.#options = options;
    this.logger = options.logger ?? createLogger();
    this.metrics = options.metrics ?? createControllerMetrics({ apiCounters: options.transport.counters });
  }

  addInformer<T extends KubeObject>(informer: Informer<T>): void {
    this.#informers.push(informer as unknown as Informer<KubeObject>);
  }

  addController(controller: Controller): void {
    this.#controllers.push(controller);
  }

  get healthPort(): number | undefined {
    return this.#server?.port;
  }

  get isLeader(): boolean {
    return this.#elector ? this.#elector.isLeader : true;
  }

  get cachesSynced(): boolean {
    return this.#informers.every((informer) => informer.hasSynced);
  }

  /** Ready once every cache is synced; the body says whether this replica leads. */
  readiness(): ReadinessReport {
    const report: ReadinessReport = { ready: this.cachesSynced && !this.#stopping, cachesSynced: this.cachesSynced };
    if (this.#elector) {
      report.leaderElection = true;
      report.leader = this.#elector.isLeader;
      report.identity = this.#elector.identity;
      report.currentLeader = this.#elector.leader;
    } else {
      report.leaderElection = false;
    }
    return report;
  }

  /** Resolves once the health server listens and the informers are started (not waiting for leadership). */
  async start(): Promise<void> {
    const { health, leaderElection } = this.#options;
    if (health) {
      this.#server = await startHealthServer({ ...health, registry: this.metrics.registry, readiness: () => this.readiness() });
      this.logger.info({ port: this.#server.port }, 'serving /healthz, /readyz, /metrics');
    }
    for (const informer of this.#informers) informer.start();
    if (!leaderElection) {
      this.metrics.isLeader.set(1);
      this.#controllersRunning = this.#startControllers();
      return;
    }
    this.metrics.isLeader.set(0);
    this.#elector = new LeaderElector({
      transport: this.#options.transport,
      ...leaderElection,
      identity: leaderElection.identity ?? `${hostname()}_${randomUUID()}`,
      logger: this.logger,
      ...(this.#options.leaseRecord ? { record: this.#options.leaseRecord } : {}),
      onStartedLeading: () => {
        this.metrics.isLeader.set(1);
        this.#controllersRunning = this.#startControllers();
      },
      onStoppedLeading: () => {
        this.metrics.isLeader.set(0);
        if (this.#stopping) return;
        this.#leadershipLost = true;
        this.logger.error('leadership lost: dropping queued keys, letting running reconciles finish');
        // At once, not after an await: another replica may already lead, so no reconcile may start from now on.
        const stopped = Promise.all(this.#controllers.map((controller) => controller.stop({ drain: false })));
        void stopped.then(() => this.#options.onLeadershipLost?.());
      },
      onNewLeader: (identity) => this.logger.info({ leader: identity }, 'leader observed'),
    });
    void this.#elector.run();
  }

  /** Drains the controllers, releases the Lease, stops the informers and the health server. */
  async stop(): Promise<void> {
    this.#stopping = true;
    await this.#stopControllers();
    await this.#elector?.stop();
    await Promise.all(this.#informers.map((informer) => informer.stop()));
    await this.#server?.close();
    this.logger.info('manager stopped');
  }

  async #startControllers(): Promise<void> {
    await Promise.all(this.#informers.map((informer) => informer.waitForSync()));
    if (this.#stopping || this.#leadershipLost) return;
    this.logger.info('caches synced: starting controllers');
    for (const controller of this.#controllers) controller.start();
  }

  async #stopControllers(): Promise<void> {
    await this.#controllersRunning;
    await Promise.all(this.#controllers.map((controller) => controller.stop()));
  }
}
