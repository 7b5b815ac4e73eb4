// Kubernetes side of okt: the lifecycle CR (schemas, conditions), its CRD, RBAC and manifests
// generated from a graph, and the lean API transport.
export { conditionSchema, findCondition, isConditionTrue, setCondition, sameConditions, CONDITION_REASON_PATTERN } from './conditions.ts';
export type { Condition, ConditionStatus, ConditionUpdate } from './conditions.ts';
export {
  LIFECYCLE_FINALIZER,
  STATUS_PATH_LIMIT,
  TERMINAL_PHASES,
  describeIssues,
  lifecycleSpecSchema,
  lifecycleStatusSchema,
  operationStatusSchema,
  outboxEntrySchema,
  emittedEventsSchema,
} from './lifecycle-resource.ts';
export type { LifecycleSpec, LifecycleStatus, OperationPhase, OperationStatus, OutboxEntry, EmittedEvents, LastTransition } from './lifecycle-resource.ts';
export { generateCrd, resolveCrdNames, desiredStateNames, publishedGraph, publishedRevisions, GRAPH_ANNOTATION, GRAPH_REVISION_ANNOTATION, GRAPH_REVISIONS_ANNOTATION } from './crd.ts';
export type { CrdNames, ResolvedCrdNames } from './crd.ts';
export { STATUS_FORMATS, STATUS_FORMAT_ANNOTATION, DEFAULT_STATUS_FORMAT, statusFormatOf } from './status-format.ts';
export type { StatusFormat } from './status-format.ts';
export { generateRbac, operatorName } from './rbac.ts';
export type { OperatorRbacOptions } from './rbac.ts';
export { generateManifests, sidecarSnippet, withOktSidecar } from './manifests.ts';
export { generateFinalizerPolicy, FINALIZER_POLICY_MIN_KUBERNETES } from './finalizer-policy.ts';
export type { FinalizerPolicyOptions } from './finalizer-policy.ts';
export type { SidecarOptions, SidecarSnippet } from './manifests.ts';
export type { OperatorManifestOptions } from './manifests.ts';
export * from './transport/index.ts';
