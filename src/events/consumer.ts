// For consumers: an HTTP request (headers + body) as a validated, typed lifecycle event, or an error naming the field.
import { HTTP, ValidationError, type CloudEvent } from 'cloudevents';
import { z } from 'zod';
import { sdkError } from './cloud-event.ts';
import { LifecycleEventError, fromZodError } from './errors.ts';
import { lifecycleEventDataSchema, lifecycleEventTypeSchema, type LifecycleEventData, type LifecycleEventType } from './types.ts';

/** A CloudEvent checked to be an okt lifecycle event: its type known, its data valid, its okt extensions present. */
export type LifecycleEvent = CloudEvent<LifecycleEventData> & {
  readonly type: LifecycleEventType;
  readonly subject: string;
  readonly time: string;
  readonly data: LifecycleEventData;
  /** Per-CR sequence, 20 zero-padded digits: string order is delivery order. `Number(event.sequence)` for the number. */
  readonly sequence: string;
  /** The CR's uid. */
  readonly partitionkey: string;
  readonly traceparent?: string;
};

export type HttpHeaders = Record<string, string | string[] | undefined>;

const SEQUENCE = /^\d{20}$/;
const RFC3339 = z.iso.datetime({ offset: true });

/** Turns one HTTP request (binary or structured mode) into a lifecycle event; throws LifecycleEventError naming the attribute or data field. */
export function parseLifecycleEvent(headers: HttpHeaders, body: string | Uint8Array | undefined): LifecycleEvent {
  const lowered: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) lowered[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
  }
  const text = body === undefined ? '' : typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
  const event = toEvent(lowered, text);
  if (event.specversion !== '1.0') throw new LifecycleEventError('specversion', `${JSON.stringify(event.specversion)} is not 1.0`);
  if (!lifecycleEventTypeSchema.safeParse(event.type).success) {
    throw new LifecycleEventError('type', `${JSON.stringify(event.type)} is no okt lifecycle event type (dev.okt.lifecycle.*.v1)`);
  }
  // The SDK makes up a missing id (a random UUID) and time (now), and never checks time: look at what was sent.
  const id = sentAttribute(lowered, text, 'id');
  if (typeof id !== 'string' || id === '') throw new LifecycleEventError('id', 'missing; every okt lifecycle event has it');
  const time = sentAttribute(lowered, text, 'time');
  if (typeof time !== 'string' || !RFC3339.safeParse(time).success) {
    throw new LifecycleEventError('time', time === undefined ? 'missing; every okt lifecycle event has it' : `${JSON.stringify(time)} is not an RFC 3339 timestamp`);
  }
  requireString(event, 'subject');
  requireString(event, 'partitionkey');
  if (typeof event.sequence !== 'string' || !SEQUENCE.test(event.sequence)) {
    throw new LifecycleEventError('sequence', `${JSON.stringify(event.sequence)} is not 20 zero-padded digits`);
  }
  const data = lifecycleEventDataSchema.safeParse(event.data);
  if (!data.success) throw fromZodError('data', data.error);
  return event as LifecycleEvent;
}

function toEvent(headers: Record<string, string>, body: string): CloudEvent<unknown> {
  let parsed: CloudEvent<unknown> | CloudEvent<unknown>[];
  try {
    parsed = HTTP.toEvent({ headers, body }) as CloudEvent<unknown> | CloudEvent<unknown>[];
  } catch (error) {
    const message = (error as Error).message;
    if (/no cloud event detected/i.test(message)) {
      if (headers['ce-specversion'] !== undefined) throw new LifecycleEventError('id', 'missing: binary mode needs the ce-id header');
      throw new LifecycleEventError('specversion', 'no CloudEvent: neither a ce-specversion header (binary mode) nor content-type application/cloudevents+json (structured mode)');
    }
    if (error instanceof ValidationError) throw sdkError(error);
    throw new LifecycleEventError(headers['ce-specversion'] === undefined ? 'body' : 'data', `not JSON: ${message}`);
  }
  if (Array.isArray(parsed)) throw new LifecycleEventError('content-type', 'a batch of events; send one event per request');
  try {
    parsed.validate(); // toEvent itself is lenient
  } catch (error) {
    throw sdkError(error);
  }
  return parsed;
}

/** An attribute as the request carried it: the ce- header (binary mode) or the JSON member (structured mode). */
function sentAttribute(headers: Record<string, string>, body: string, attribute: string): unknown {
  if (!(headers['content-type'] ?? '').startsWith('application/cloudevents')) return headers[`ce-${attribute}`];
  return (JSON.parse(body) as Record<string, unknown>)[attribute]; // parsed once already by the SDK
}

function requireString(event: CloudEvent<unknown>, attribute: string): void {
  const value = event[attribute];
  if (typeof value !== 'string' || value === '') throw new LifecycleEventError(attribute, 'missing; every okt lifecycle event has it');
}
