export { version } from './version.ts';

// The lifecycle-graph core: define and validate (graph), decide and trace (machine), plan (plan).
export * from './graph/index.ts';
export * from './machine/index.ts';
export * from './plan/index.ts';
export { databaseGraph } from '../graphs/database.ts';
export { reconciliationGraph } from '../graphs/reconciliation.ts';

// Lifecycle CloudEvents: the types and data schema, the emitter, and the consumer helper and receiver.
export * from './events/index.ts';

// The operator: the lifecycle CR and its CRD, the pure reconcile step, the controller and its runtime.
export {
  generateCrd,
  generateRbac,
  generateManifests,
  generateFinalizerPolicy,
  lifecycleSpecSchema,
  lifecycleStatusSchema,
  conditionSchema,
  findCondition,
  LIFECYCLE_FINALIZER,
  KubeTransport,
  KubeApiError,
  STATUS_FORMATS,
  STATUS_FORMAT_ANNOTATION,
  statusFormatOf,
  publishedGraph,
  sidecarSnippet,
  withOktSidecar,
} from './kube/index.ts';
export type { FinalizerPolicyOptions, SidecarOptions, SidecarSnippet, StatusFormat, CrdNames, Condition, LifecycleSpec, LifecycleStatus, OperationStatus, OutboxEntry } from './kube/index.ts';
export * from './controller/lifecycle/index.ts';
export { Manager, Controller, Informer, WorkQueue, LeaderElector, createLogger, createControllerMetrics } from './controller/index.ts';

// The sidecar's typed client and protocol.
export { SidecarClient, SidecarError, SidecarUnavailableError, SidecarProblemError, SidecarProtocolError } from './sidecar-client/index.ts';
export type { Operation, Observation, StartOperationRequest } from './sidecar-client/index.ts';
