// What one step of the decision reads and what it asks for (step.ts): the resource, the sidecar's
// answer, the model of the graph, and the effects the reconciler carries out.
import type { Graph } from '../../graph/index.ts';
import type { Planner } from '../../plan/index.ts';
import type { Condition } from '../../kube/conditions.ts';
import type { LifecycleSpec, LifecycleStatus, OperationStatus } from '../../kube/lifecycle-resource.ts';
import type { StatusFormat } from '../../kube/status-format.ts';
import type { NodeReadiness, ObjectRef } from './objects/readiness.ts';
import type { StoredEncoding } from './status/encoding.ts';

/** The graph of a controller with its planner (both precompute their tables once), and the earlier revisions it still serves. */
export interface LifecycleModel {
  readonly graph: Graph;
  readonly planner: Planner;
  /** Revision -> the model of an earlier revision the graph declares (`previous`): where the Manual policy keeps CRs. */
  readonly earlier: ReadonlyMap<string, LifecycleModel>;
}

/** The resource as the informer cache has it, already parsed. */
export interface ResourceView {
  uid: string;
  generation: number;
  deleting: boolean;
  /** metadata.deletionTimestamp: the clock of a namespace teardown's grace period. */
  deletionTimestamp?: string;
  /** The resource's namespace is terminating (looked up only while deleting with the sidecar unreachable). */
  namespaceTerminating?: boolean;
  /** The annotation okt.dev/abandon asks to release the finalizer without driving the application down. */
  abandonRequested?: boolean;
  /** The annotation okt.dev/migrate asks to move the resource to the operator's revision (the Manual migration policy). */
  migrateRequested?: boolean;
  spec: LifecycleSpec;
  /** undefined on first sight; InvalidStatus when status does not parse. */
  status: LifecycleStatus | InvalidStatus | undefined;
}

/** A status that does not parse: which field and why, and its conditions if those still parse. */
export interface InvalidStatus {
  invalid: string;
  conditions?: Condition[];
}

/** An operation as the sidecar reports it. */
export interface SeenOperation {
  phase: OperationStatus['phase'];
  events: string[];
  message?: string;
  reason?: string;
  startedAt?: string;
  finishedAt?: string;
  /** How many times the sidecar started it (a re-run after a sidecar lost it counts). */
  attempts?: number;
}

/** Why the operator sends nothing to a CR's sidecar (a URL its token may not go to, a Secret it cannot read). */
export interface SidecarRefusal {
  reason: string;
  message: string;
  /** Look again after this long (absent: only when the CR changes). */
  retryAfterMs?: number;
}

/** What the sidecar said in this reconcile ('refused': the operator did not ask it, see SidecarRefusal). */
export type SidecarView =
  | { kind: 'unavailable'; message: string }
  | ({ kind: 'refused' } & SidecarRefusal)
  | {
      kind: 'answered';
      /** The sidecar's epoch: it changes exactly when the sidecar's memory (its journal) does. */
      epoch: string;
      /**
       * The current operation as the sidecar knows it. 'unknown': this sidecar (the epoch the operation
       * was committed with) never saw it, so it was never started. 'lost': the sidecar that held it is
       * gone, and the one answering refused to run it again (its action is not declared idempotent).
       */
      operation?: SeenOperation | 'unknown' | 'lost';
      /** Events the sidecar raised outside any action (a crash, say), newer than observedFrom in this epoch. */
      observedEvents: string[];
      /** The sidecar's sequence of its newest observed event. */
      observedSequence?: number;
      /**
       * The sequence observedEvents come after: status.observedSequence in the epoch the status records;
       * in another, where this resource's news begins there (src/controller/lifecycle/epoch-news.ts). Absent: 0.
       */
      observedFrom?: number;
    };

/** Why the sidecar refused the last start of the current operation (remembered by the reconciler). */
export interface StartRefusal {
  operation: string;
  reason: string;
  message: string;
  /** Stalled (the user or an admin must act) rather than waiting. */
  stall: boolean;
  retryAfterMs: number;
}

export interface StepInput {
  model: LifecycleModel;
  resource: ResourceView;
  sidecar: SidecarView;
  /** The highest event sequence the emitter has delivered for this resource (kept in memory). */
  delivered: number;
  now: string;
  outboxLimit: number;
  /** Why the sink refuses this resource's next event, when it does (it blocks the stream). */
  deliveryProblem?: string;
  /** The sidecar refused the last start of the current operation. */
  startRefused?: StartRefusal;
  /** How long after its deletion a resource in a terminating namespace whose sidecar does not answer is released. Default 60 s. */
  teardownGraceMs?: number;
  /** The shape status is written in (its CRD version's). Default: full. */
  statusFormat?: StatusFormat;
  /** The encoding of the status as stored (read expanded): a format that would store it otherwise rewrites it. Default: plain. */
  storedEncoding?: StoredEncoding;
  /** The readiness of the objects the graph makes at `node` (read while an action of that node waits to start); absent: not read. */
  objects?: { node: string; readiness: NodeReadiness; objects?: readonly ObjectRef[] };
}

/** What the reconciler must do, in this order: write status, cancel or start the operation, delete/unfinalize, requeue. */
export interface StepEffects {
  /** The new status, written with the resourceVersion the step was computed from; absent: no write. */
  status?: LifecycleStatus | Pick<LifecycleStatus, 'conditions'>;
  /** Start (idempotently) this operation on the sidecar of this epoch, only after the status write succeeded. */
  startOperation?: { id: string; node: string; epoch?: string; params?: Record<string, unknown> };
  /** Cancel this running operation (a deletion, or a change of spec.desiredState, at a node cancellable on it): asked at every look while it holds, sent once by the reconciler. */
  cancelOperation?: string;
  /** The application sits on a leaf with every event delivered (or deletion is abandoned): end the resource's life. */
  finish?: 'removeFinalizer' | 'delete';
  /** With finish removeFinalizer: the deletion was abandoned, so its objects' deletions are asked for, not awaited (the namespace controller, or the user who abandoned it, is past waiting). */
  abandoned?: boolean;
  /** Wait for the running operation, or for the sidecar, then look again. */
  poll?: boolean;
  /** Go on at once: the resource is still moving and nothing is running. */
  again?: boolean;
  /** Look again after this long (a retry's backoff, a refused start, a deadline). */
  requeueAfterMs?: number;
  /** Nothing moves until the emitter delivers this resource's events (a leaf's last events, a full outbox). */
  awaitingDelivery?: boolean;
}

/** Why a transition was taken other than by an event of the graph's course (a deadline): said in its CloudEvent. */
export interface TransitionCause {
  readonly reason: string;
  readonly message: string;
}
