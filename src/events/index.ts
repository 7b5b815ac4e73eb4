// okt lifecycle CloudEvents: the types and data schema, building events from the outbox, delivering them, consuming them.
export { LIFECYCLE_EVENT_TYPES, lifecycleEventDataSchema, lifecycleEventTypeSchema } from './types.ts';
export type { LifecycleEventData, LifecycleEventType } from './types.ts';
export { LifecycleEventError } from './errors.ts';
export { LIFECYCLE_EVENT_DATA_SCHEMA_URI, renderLifecycleEventDataJsonSchema } from './schema.ts';
export { SEQUENCE_DIGITS, formatSequence, lifecycleEventId, parseCeOverrides, toCloudEvent } from './cloud-event.ts';
export type { CeOverrides, EmittedResource, ToCloudEventOptions } from './cloud-event.ts';
export { DELIVERED_STATUSES, REJECTED_STATUSES, backoffDelay, classifyStatus } from './delivery.ts';
export type { Backoff, SendOutcome } from './delivery.ts';
export { statusEvents } from './status-events.ts';
export { LifecycleEventEmitter } from './emitter.ts';
export type { BlockedStream, EmitMode, LifecycleEventEmitterOptions, OfferedResource } from './emitter.ts';
export { parseLifecycleEvent } from './consumer.ts';
export type { HttpHeaders, LifecycleEvent } from './consumer.ts';
export { createLifecycleEventReceiver } from './receiver.ts';
export type { LifecycleEventReceiver, LifecycleEventReceiverOptions } from './receiver.ts';
export { contextOf, traceparentOf } from './trace-context.ts';
