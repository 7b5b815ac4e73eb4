export { step, operationId, unreadable, READY, RECONCILING, STALLED, REASONS } from './step.ts';
export type { StepInput, StepEffects, SidecarView, ResourceView, InvalidStatus, LifecycleModel } from './step.ts';
export { LifecycleController } from './reconciler.ts';
export type { LifecycleControllerOptions, LifecycleEvents, LifecycleResourceRef, EventResource } from './reconciler.ts';
export { startOperator } from './operator.ts';
export type { OperatorKind, OperatorOptions, OperatorSettings, RunningOperator } from './operator.ts';
export { parseShard, shardOf, shardKeyOf, SHARD_KEY_LABEL } from './shard.ts';
export type { Shard } from './shard.ts';
export { DeliveryMark, EVENTS_DELIVERED_BEFORE } from './delivery-mark.ts';
