import type { KubeConfig } from '@kubernetes/client-node';
import type { Graph } from '../../graph/index.ts';
import { KubeTransport } from '../../kube/transport/index.ts';
import { Manager, type ManagerLeaderElection } from '../manager.ts';
import { createLogger, type Logger } from '../logger.ts';
import { LifecycleEventEmitter, type EmitMode } from '../../events/index.ts';
import { LifecycleController, type LifecycleResourceRef } from './reconciler.ts';
import type { SidecarDefaults } from './sidecar-clients.ts';
import type { Shard } from './shard.ts';

export interface OperatorOptions {
  kubeConfig: KubeConfig;
  graph: Graph;
  resource: LifecycleResourceRef;
  namespace?: string;
  labelSelector?: string;
  shard?: Shard;
  workers?: number;
  /**
   * The operator's sidecar (`url`), its token, and the URL patterns that token may also go to (`allow`).
   * The token is either fixed (`token`) or read from a file (`tokenFile`, e.g. a mounted Secret): read
   * at start (this throws if it is unreadable or empty), then again after a sidecar answers 401 to it
   * and at most 60 s later, keeping the last token while the file is momentarily unreadable or empty.
   * See SidecarDefaults.
   */
  sidecar?: SidecarDefaults;
  /** Where the CloudEvents go (default K_SINK; none: nowhere, and they count as delivered) and how. */
  events?: { sink?: string; mode?: EmitMode };
  health?: { port: number; host?: string } | false;
  leaderElection?: ManagerLeaderElection | false;
  pollIntervalMs?: number;
  resyncPeriodMs?: number;
  /** A watch of the CRs silent this long is taken for dead and opened again. Default 180 s; 0: never. */
  watchIdleTimeoutMs?: number;
  /** How long a deleted CR in a terminating namespace waits for its vanished sidecar. Default 60 s. */
  teardownGraceMs?: number;
  outboxLimit?: number;
  logger?: Logger;
  /** Keep-alive connections to the API server for ordinary requests. Default 16. */
  connections?: number;
}

export interface RunningOperator {
  readonly manager: Manager;
  readonly lifecycle: LifecycleController;
  readonly transport: KubeTransport;
  readonly events: LifecycleEventEmitter;
  /** Drains the workers, releases the Lease, closes every connection. */
  stop(): Promise<void>;
}

/** Starts an operator for one graph's custom resources in this process. */
export async function startOperator(options: OperatorOptions): Promise<RunningOperator> {
  const logger = options.logger ?? createLogger();
  const transport = await KubeTransport.fromKubeConfig(options.kubeConfig, { connections: options.connections ?? 16 });
  const managerOptions: ConstructorParameters<typeof Manager>[0] = { transport, logger, health: options.health ?? false };
  if (options.leaderElection) {
    managerOptions.leaderElection = options.leaderElection;
    // As controller-runtime does: a replica that lost its Lease stops campaigning, so alive it would run
    // nothing for ever (and with every replica so, no operator would run). It exits to come back fresh.
    managerOptions.onLeadershipLost = () => {
      logger.error('leadership lost: exiting so that this replica comes back as a fresh candidate');
      void running.stop().finally(() => process.exit(1));
    };
  }
  const manager = new Manager(managerOptions);
  let lifecycle: LifecycleController | undefined;
  const events = new LifecycleEventEmitter({
    ...options.events,
    logger,
    onDelivered: (key) => lifecycle?.eventDelivered(key),
    onBlocked: (key) => lifecycle?.controller.enqueue(key),
  });
  try {
    lifecycle = new LifecycleController({
      graph: options.graph,
      resource: options.resource,
      transport,
      metrics: manager.metrics,
      logger,
      events,
      ...pick(options, ['namespace', 'labelSelector', 'shard', 'workers', 'sidecar', 'pollIntervalMs', 'resyncPeriodMs', 'watchIdleTimeoutMs', 'teardownGraceMs', 'outboxLimit']),
    });
  } catch (error) {
    // E.g. sidecar.tokenFile unreadable: nothing started yet but the connections, which go.
    await events.close();
    await transport.close();
    throw error;
  }
  manager.addInformer(lifecycle.informer);
  manager.addController(lifecycle.controller);
  await manager.start();
  let stopped: Promise<void> | undefined;
  const controller = lifecycle;
  const running: RunningOperator = {
    manager,
    lifecycle: controller,
    transport,
    events,
    stop: () =>
      (stopped ??= (async () => {
        await manager.stop();
        await events.close();
        await controller.close();
        await transport.close();
      })()),
  };
  return running;
}

function pick<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}
