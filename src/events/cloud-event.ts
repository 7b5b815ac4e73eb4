// One outbox entry of a lifecycle CR as a CloudEvent 1.0: the attributes are an API (see docs/events.md).
import { CloudEvent, ValidationError } from 'cloudevents';
import { z } from 'zod';
import type { OutboxEntry } from '../kube/lifecycle-resource.ts';
import { LifecycleEventError, fromZodError } from './errors.ts';
import { LIFECYCLE_EVENT_DATA_SCHEMA_URI } from './schema.ts';
import { lifecycleEventDataSchema, lifecycleEventTypeSchema, type LifecycleEventData } from './types.ts';

/** The CR an event comes from. `apiPath` is its API path, the event's `source`. */
export interface EmittedResource {
  apiVersion?: string;
  kind?: string;
  namespace: string;
  name: string;
  uid: string;
  /** e.g. `/apis/okt.dev/v1alpha1/namespaces/default/databases/db1` */
  apiPath: string;
}

/** Knative's K_CE_OVERRIDES: extensions set on every event after okt's own. */
export interface CeOverrides {
  extensions: Record<string, string | number | boolean>;
}

export interface ToCloudEventOptions {
  overrides?: CeOverrides;
  /** W3C trace context of the reconcile that committed the event. */
  traceparent?: string;
}

/** The digits of the `sequence` extension: zero-padded so that string order is number order (uint64 fits). */
export const SEQUENCE_DIGITS = 20;

/** Attributes an override may not set: the core attributes (Knative: `type` cannot change) and okt's ordering key. */
const RESERVED_OVERRIDES: ReadonlySet<string> = new Set([
  'id', 'source', 'specversion', 'type', 'datacontenttype', 'dataschema', 'subject', 'time', 'data', 'data_base64', 'sequence',
]);

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

const overridesSchema = z.strictObject({
  extensions: z
    .record(z.string().regex(/^[a-z0-9]+$/, 'an extension name is lowercase a-z and 0-9 only'), z.union([z.string(), z.number(), z.boolean()]))
    .refine((extensions) => Object.keys(extensions).every((name) => !RESERVED_OVERRIDES.has(name)), {
      message: `may not set ${[...RESERVED_OVERRIDES].join(', ')}`,
    }),
});

/** The `sequence` extension value: `formatSequence(7)` = `00000000000000000007`. */
export function formatSequence(sequence: number): string {
  return String(sequence).padStart(SEQUENCE_DIGITS, '0');
}

/** The deterministic event id: a redelivery of the same outbox entry carries the same id. */
export function lifecycleEventId(uid: string, sequence: number): string {
  return `${uid}.${sequence}`;
}

/** Parses K_CE_OVERRIDES (`{"extensions":{...}}`); undefined or empty text means none. */
export function parseCeOverrides(text: string | undefined, origin = 'K_CE_OVERRIDES'): CeOverrides | undefined {
  if (text === undefined || text.trim() === '') return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new LifecycleEventError(origin, `not JSON: ${(error as Error).message}`);
  }
  const parsed = overridesSchema.safeParse(raw);
  if (!parsed.success) throw fromZodError(origin, parsed.error);
  return parsed.data;
}

/** Builds and validates (SDK and zod) the CloudEvent of one outbox entry of `resource`. */
export function toCloudEvent(resource: EmittedResource, entry: OutboxEntry, options: ToCloudEventOptions = {}): CloudEvent<LifecycleEventData> {
  const at = `outbox[sequence=${entry.sequence}]`;
  const type = lifecycleEventTypeSchema.safeParse(entry.type);
  if (!type.success) throw new LifecycleEventError(`${at}.type`, `${JSON.stringify(entry.type)} is no lifecycle event type`);
  const data = lifecycleEventDataSchema.safeParse(entry.data);
  if (!data.success) throw fromZodError(`${at}.data`, data.error);
  if (!resource.apiPath.startsWith('/')) throw new LifecycleEventError('source', `the API path ${JSON.stringify(resource.apiPath)} must start with /`);
  if (options.traceparent !== undefined && !TRACEPARENT.test(options.traceparent)) {
    throw new LifecycleEventError('traceparent', `${JSON.stringify(options.traceparent)} is no W3C traceparent`);
  }
  const attributes: Record<string, unknown> = {
    specversion: '1.0',
    id: lifecycleEventId(resource.uid, entry.sequence),
    source: resource.apiPath,
    type: type.data,
    subject: entry.subject,
    time: entry.time,
    datacontenttype: 'application/json',
    dataschema: LIFECYCLE_EVENT_DATA_SCHEMA_URI,
    data: data.data,
    sequence: formatSequence(entry.sequence),
    partitionkey: resource.uid,
    ...(options.traceparent === undefined ? {} : { traceparent: options.traceparent }),
    ...options.overrides?.extensions,
  };
  try {
    return new CloudEvent<LifecycleEventData>(attributes);
  } catch (error) {
    throw sdkError(error);
  }
}

/** The SDK's ValidationError as a LifecycleEventError naming the attribute. */
export function sdkError(error: unknown): LifecycleEventError {
  if (error instanceof ValidationError) {
    const first = (error.errors ?? [])[0] as { instancePath?: string; message?: string; params?: { missingProperty?: string } } | string | undefined;
    if (typeof first === 'object') {
      const field = first.instancePath ? first.instancePath.slice(1) : first.params?.missingProperty;
      if (field) return new LifecycleEventError(field, first.message ?? error.message);
    }
    return new LifecycleEventError('event', typeof first === 'string' ? first : error.message);
  }
  return new LifecycleEventError('event', (error as Error).message);
}
