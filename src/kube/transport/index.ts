export { KubeTransport, ApiCounters, DEFAULT_FIELD_MANAGER, DEFAULT_REQUEST_TIMEOUT_MS } from './transport.ts';
export type { ApiVerb, KubeTransportOptions, ListOptions, WatchOptions, WriteOptions, DeleteOptions } from './transport.ts';
export { connectionFromKubeConfig } from './connection.ts';
export type { ConnectionSettings } from './connection.ts';
export { KubeApiError, WatchIdleError, isKubeApiError, isConflict, isNotFound, isGone, isWatchIdle, parseStatus, permissionProblem, invalidStoredObjectProblem } from './errors.ts';
export type { ApiStatus } from './errors.ts';
export { LEASES, NAMESPACES, kindResource, objectKey, splitKey, resourcePath } from './resource.ts';
export type { ResourceRef, KubeObject, ObjectMeta, ObjectList, WatchEvent, WatchEventType } from './resource.ts';
