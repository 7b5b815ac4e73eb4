import type { KubeConfig } from '@kubernetes/client-node';
import type { Graph } from '../../graph/index.ts';
import { KubeTransport, resourcePath } from '../../kube/transport/index.ts';
import { Manager, type ManagerLeaderElection } from '../manager.ts';
import { createLogger, type Logger } from '../logger.ts';
import { LifecycleEventEmitter, type EmitMode, type EmittedResource } from '../../events/index.ts';
import { LifecycleController, type LifecycleResourceRef } from './reconciler.ts';
import type { SidecarDefaults } from './sidecar-clients.ts';
import type { Shard } from './shard.ts';
import { DeliveryMark } from './delivery-mark.ts';
import { startTracing, type TracingOptions } from '../tracing.ts';
import type { StatusFormat } from '../../kube/status-format.ts';

/** One kind of custom resource the operator serves, and the graph that drives it. */
export interface OperatorKind {
  graph: Graph;
  resource: LifecycleResourceRef;
  /** The shape its status is written in: that of its CRD version (`okt crd --status-format`). Default: full. */
  statusFormat?: StatusFormat;
}

/** What every kind of one operator shares: the cluster, the sidecar defaults, the sink, the runtime. */
export interface OperatorSettings {
  kubeConfig: KubeConfig;
  namespace?: string;
  labelSelector?: string;
  shard?: Shard;
  /** Parallel reconciles of each kind. */
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
  /** One Lease for the whole process: the leader runs the controllers of every kind. */
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
  /** Time limit of one ordinary request to the API server (headers, then body). Default 30 s. */
  requestTimeoutMs?: number;
  /**
   * OpenTelemetry traces over OTLP/HTTP: on when an endpoint is given here or in the environment
   * (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, OTEL_EXPORTER_OTLP_ENDPOINT); false: off whatever it says.
   */
  tracing?: TracingOptions | false;
}

/** One kind (`graph` and `resource`), or several (`kinds`), never both. */
export type OperatorOptions = OperatorSettings & (
  | (OperatorKind & { kinds?: never })
  | { kinds: readonly OperatorKind[]; graph?: never; resource?: never }
);

export interface RunningOperator {
  readonly manager: Manager;
  /** The controller of the first kind (of the only one, given as `graph` and `resource`). */
  readonly lifecycle: LifecycleController;
  /** The controller of each kind, in the order of `kinds`. */
  readonly lifecycles: readonly LifecycleController[];
  readonly transport: KubeTransport;
  readonly events: LifecycleEventEmitter;
  /** Drains the workers, releases the Lease, closes every connection. */
  stop(): Promise<void>;
}

/**
 * Starts an operator for the custom resources of one graph, or of several kinds each with its graph,
 * in this process: one Manager, API connection pool, event emitter, health server and metrics
 * registry, and one lifecycle controller per kind.
 */
export async function startOperator(options: OperatorOptions): Promise<RunningOperator> {
  const kinds = operatorKinds(options);
  const logger = options.logger ?? createLogger();
  const transport = await KubeTransport.fromKubeConfig(options.kubeConfig, {
    connections: options.connections ?? 16,
    ...(options.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: options.requestTimeoutMs }),
  });
  const managerOptions: ConstructorParameters<typeof Manager>[0] = { transport, logger, health: options.health ?? false };
  // The leader keeps in its Lease a time before which every event is known delivered, so that the next
  // leader does not send again what CRs at rest still hold (the emitter is made below; read only once leading).
  const deliveryMark = options.leaderElection ? new DeliveryMark({ oldestUndeliveredTime: () => events.oldestUndeliveredTime() }) : undefined;
  if (options.leaderElection) {
    // One Lease guards the process, not each kind (as controller-runtime's Manager guards all its
    // controllers): a lost Lease ends the process below, every kind with it, so Leases per kind would
    // not let kinds move on their own. Kinds spread over processes run as operators of their own, each
    // with its own Lease name.
    managerOptions.leaderElection = options.leaderElection;
    managerOptions.leaseRecord = deliveryMark;
    // As controller-runtime does: a replica that lost its Lease stops campaigning, so alive it would run
    // nothing for ever (and with every replica so, no operator would run). It exits to come back fresh.
    managerOptions.onLeadershipLost = () => {
      logger.error('leadership lost: exiting so that this replica comes back as a fresh candidate');
      void running.stop().finally(() => process.exit(1));
    };
  }
  const manager = new Manager(managerOptions);
  const tracing = options.tracing === false ? undefined : await startTracing(options.tracing ?? {});
  const tracer = tracing === undefined ? {} : { tracer: tracing.tracer };
  const lifecycles: LifecycleController[] = [];
  // Every kind keys its CRs `namespace/name`, so one key may name CRs of two kinds: a delivery goes to
  // the controller of the kind whose API path the event's CR has.
  const controllerOf = (resource: EmittedResource): LifecycleController | undefined =>
    lifecycles[kinds.findIndex((kind) => resourcePath(kind.resource, resource.namespace, resource.name) === resource.apiPath)];
  const events = new LifecycleEventEmitter({
    ...options.events,
    logger,
    onDelivered: (key, resource) => controllerOf(resource)?.eventDelivered(key),
    onBlocked: (key, resource) => controllerOf(resource)?.controller.enqueue(key),
    ...tracer,
  });
  try {
    for (const { graph, resource, statusFormat } of kinds) {
      lifecycles.push(new LifecycleController({
        graph,
        resource,
        ...(statusFormat === undefined ? {} : { statusFormat }),
        transport,
        metrics: manager.metrics,
        logger,
        events,
        ...tracer,
        ...(deliveryMark ? { deliveryMark } : {}),
        ...pick(options, ['namespace', 'labelSelector', 'shard', 'workers', 'sidecar', 'pollIntervalMs', 'resyncPeriodMs', 'watchIdleTimeoutMs', 'teardownGraceMs', 'outboxLimit']),
      }));
    }
  } catch (error) {
    // E.g. sidecar.tokenFile unreadable: nothing started yet but the connections, which go.
    await events.close();
    await Promise.all(lifecycles.map((lifecycle) => lifecycle.close()));
    await transport.close();
    await tracing?.shutdown();
    throw error;
  }
  for (const lifecycle of lifecycles) {
    for (const informer of lifecycle.informers) manager.addInformer(informer);
    manager.addController(lifecycle.controller);
  }
  await manager.start();
  let stopped: Promise<void> | undefined;
  const running: RunningOperator = {
    manager,
    lifecycle: lifecycles[0]!,
    lifecycles,
    transport,
    events,
    stop: () =>
      (stopped ??= (async () => {
        await manager.stop();
        await events.close();
        await Promise.all(lifecycles.map((lifecycle) => lifecycle.close()));
        await transport.close();
        // The spans of the last reconciles and deliveries go out before the process ends.
        await tracing?.shutdown();
      })()),
  };
  return running;
}

/** The kinds to serve: `graph` and `resource`, or `kinds`; refused when the two forms mix, or two kinds are one resource. */
function operatorKinds(options: OperatorOptions): readonly OperatorKind[] {
  // Checked here too: JavaScript callers and casts get past the type.
  const { graph, resource, statusFormat, kinds } = options as Partial<OperatorKind> & { kinds?: readonly OperatorKind[] };
  if (kinds === undefined) {
    if (graph === undefined || resource === undefined) throw new Error(`startOperator: ${graph === undefined ? 'graph' : 'resource'} is missing: give graph and resource, or kinds`);
    return [statusFormat === undefined ? { graph, resource } : { graph, resource, statusFormat }];
  }
  if (graph !== undefined || resource !== undefined) throw new Error(`startOperator: ${graph !== undefined ? 'graph' : 'resource'} is given with kinds: give either kinds or graph and resource`);
  if (kinds.length === 0) throw new Error('startOperator: kinds is empty: give at least one { graph, resource }');
  // One group does not hold two resources of one plural or one kind (the API server refuses such a CRD).
  for (const [i, { resource: mine }] of kinds.entries()) {
    const j = kinds.findIndex(({ resource: other }) => other.group === mine.group && (other.plural === mine.plural || other.kind === mine.kind));
    if (j === i) continue;
    const same = kinds[j]!.resource.plural === mine.plural ? `plural "${mine.plural}"` : `kind "${mine.kind}"`;
    throw new Error(`startOperator: kinds[${i}].resource is the resource of kinds[${j}] again (group "${mine.group}", ${same}): each resource has one controller`);
  }
  return kinds;
}

function pick<T extends object, K extends keyof T>(source: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const key of keys) if (source[key] !== undefined) out[key] = source[key];
  return out;
}
