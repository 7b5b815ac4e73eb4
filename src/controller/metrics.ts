import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ApiCounters, ApiVerb } from '../kube/transport/index.ts';

export type ReconcileOutcome = 'success' | 'error' | 'requeue_after';

/** The operator's Prometheus metrics; the reconciler increments `transitionsTotal` itself. */
export interface ControllerMetrics {
  readonly registry: Registry;
  readonly reconcileTotal: Counter<'controller' | 'result'>;
  readonly reconcileDuration: Histogram<'controller'>;
  readonly queueDepth: Gauge<'controller'>;
  readonly queueLatency: Histogram<'controller'>;
  readonly transitionsTotal: Counter<'graph' | 'from' | 'to'>;
  /** How long CRs stayed on a node: observed when they leave it. */
  readonly nodeSeconds: Histogram<'graph' | 'node'>;
  /** Actions that ended, by outcome: observed once per operation, when its end is recorded. */
  readonly actionDuration: Histogram<'graph' | 'node' | 'phase' | 'reason'>;
  readonly isLeader: Gauge;
  /** Server-side applies of the objects a graph makes, by kind and outcome (`applied`, `refused`). */
  readonly objectApplies: Counter<'graph' | 'kind' | 'outcome'>;
  /** Objects let go of, by kind and outcome (`deleted`, `held`: a finalizer holds it, `kept`: deletion Keep). */
  readonly objectPrunes: Counter<'graph' | 'kind' | 'outcome'>;
  /** Adds a source of the CRs stalled now (a lifecycle controller's cache), counted at each scrape. */
  addStalledSource(source: () => Iterable<{ graph: string; reason: string }>): void;
}

export interface ControllerMetricsOptions {
  /** Default: a fresh Registry (so tests and several managers in one process do not collide). */
  registry?: Registry;
  /** Node process metrics (memory, CPU, event loop lag). Default true. */
  processMetrics?: boolean;
  /** Exposed as okt_kube_api_requests_total{verb}. */
  apiCounters?: ApiCounters;
}

/** Time on a node or in an action: from a fraction of a second to a day. */
const LIFECYCLE_BUCKETS = [0.1, 0.5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600];

const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export function createControllerMetrics(options: ControllerMetricsOptions = {}): ControllerMetrics {
  const registry = options.registry ?? new Registry();
  const registers = [registry];
  if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry });
  const counters = options.apiCounters;
  if (counters) {
    new Counter({
      name: 'okt_kube_api_requests_total',
      help: 'Requests sent to the Kubernetes API server, by verb (get and list are reads; create, update, patch, delete are writes).',
      labelNames: ['verb'],
      registers,
      collect() {
        this.reset();
        for (const [verb, count] of Object.entries(counters.byVerb) as [ApiVerb, number][]) this.labels(verb).inc(count);
      },
    });
  }
  const stalledSources: (() => Iterable<{ graph: string; reason: string }>)[] = [];
  new Gauge({
    name: 'okt_resources_stalled',
    help: 'CRs whose Stalled condition is True now, by graph and reason (counted in the caches at each scrape).',
    labelNames: ['graph', 'reason'],
    registers,
    collect() {
      this.reset();
      for (const source of stalledSources) for (const { graph, reason } of source()) this.labels(graph, reason).inc();
    },
  });
  return {
    registry,
    addStalledSource: (source) => stalledSources.push(source),
    nodeSeconds: new Histogram({ name: 'okt_node_seconds', help: 'Time a CR stayed on a node, from the transition that entered it to the one that left it.', labelNames: ['graph', 'node'], buckets: LIFECYCLE_BUCKETS, registers }),
    actionDuration: new Histogram({ name: 'okt_action_duration_seconds', help: "Time a node's action ran (as its sidecar says), by outcome: phase Succeeded, Failed or Cancelled, and the sidecar's reason.", labelNames: ['graph', 'node', 'phase', 'reason'], buckets: LIFECYCLE_BUCKETS, registers }),
    reconcileTotal: new Counter({ name: 'okt_reconcile_total', help: 'Reconciles finished, by controller and result.', labelNames: ['controller', 'result'], registers }),
    reconcileDuration: new Histogram({ name: 'okt_reconcile_duration_seconds', help: 'Time spent in one reconcile.', labelNames: ['controller'], buckets: DURATION_BUCKETS, registers }),
    queueDepth: new Gauge({ name: 'okt_workqueue_depth', help: 'Keys waiting in the work queue (ready, not delayed).', labelNames: ['controller'], registers }),
    queueLatency: new Histogram({ name: 'okt_workqueue_latency_seconds', help: 'Time a key waited in the work queue before a worker took it.', labelNames: ['controller'], buckets: DURATION_BUCKETS, registers }),
    transitionsTotal: new Counter({ name: 'okt_transitions_total', help: 'Lifecycle transitions recorded, by graph and from/to node.', labelNames: ['graph', 'from', 'to'], registers }),
    objectApplies: new Counter({ name: 'okt_object_applies_total', help: 'Server-side applies of the objects graphs make, by graph, kind and outcome: applied, or refused by the API server.', labelNames: ['graph', 'kind', 'outcome'], registers }),
    objectPrunes: new Counter({ name: 'okt_object_prunes_total', help: 'Objects graphs make let go of, by graph, kind and outcome: deleted, held (deleted, a finalizer holds it; asked again while the deletion path waits for it), kept (deletion: Keep, disowned).', labelNames: ['graph', 'kind', 'outcome'], registers }),
    isLeader: new Gauge({ name: 'okt_leader', help: '1 while this replica holds the leader election lease (or runs without leader election).', registers }),
  };
}
