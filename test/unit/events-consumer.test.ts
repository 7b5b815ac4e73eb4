import { HTTP } from 'cloudevents';
import { describe, expect, test } from 'vitest';
import { LIFECYCLE_EVENT_TYPES, LifecycleEventError, parseLifecycleEvent, toCloudEvent } from '../../src/events/index.ts';
import { resourceFor, simulatedOutbox } from './events-fixtures.ts';

const resource = resourceFor('db1');
const outbox = simulatedOutbox();
const event = toCloudEvent(resource, outbox[1]!);

function fieldOf(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(LifecycleEventError);
    return (error as LifecycleEventError).field;
  }
  throw new Error('expected a LifecycleEventError');
}

describe('parseLifecycleEvent', () => {
  test('accepts every emitted event, binary and structured, with headers in any case and a Buffer body', () => {
    for (const entry of outbox) {
      const sent = toCloudEvent(resource, entry);
      for (const { headers, body } of [HTTP.binary(sent), HTTP.structured(sent)]) {
        const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
        const got = parseLifecycleEvent(upper, Buffer.from(String(body)));
        expect(got.toJSON()).toEqual(sent.toJSON());
        expect(Number(got.sequence)).toBe(entry.sequence);
      }
    }
  });

  test('gives typed access to the data', () => {
    const { headers, body } = HTTP.binary(event);
    const got = parseLifecycleEvent(headers, String(body));
    expect(got.type).toBe(LIFECYCLE_EVENT_TYPES.actionStarted);
    expect(got.data.operation?.phase).toBe('Pending');
    expect(got.partitionkey).toBe(resource.uid);
  });

  test('names the attribute or field of anything else', () => {
    const { headers, body } = HTTP.binary(event);
    const data = JSON.parse(String(body)) as Record<string, unknown>;
    expect(fieldOf(() => parseLifecycleEvent({ 'content-type': 'text/plain' }, 'hello'))).toBe('specversion');
    expect(fieldOf(() => parseLifecycleEvent({ ...headers, 'ce-type': 'com.example.other.v1' }, String(body)))).toBe('type');
    const { 'ce-sequence': _s, ...noSequence } = headers;
    expect(fieldOf(() => parseLifecycleEvent(noSequence, String(body)))).toBe('sequence');
    expect(fieldOf(() => parseLifecycleEvent({ ...headers, 'ce-sequence': '7' }, String(body)))).toBe('sequence');
    const { 'ce-subject': _sub, ...noSubject } = headers;
    expect(fieldOf(() => parseLifecycleEvent(noSubject, String(body)))).toBe('subject');
    const { 'ce-partitionkey': _p, ...noKey } = headers;
    expect(fieldOf(() => parseLifecycleEvent(noKey, String(body)))).toBe('partitionkey');
    expect(fieldOf(() => parseLifecycleEvent(headers, JSON.stringify({ ...data, to: 42 })))).toBe('data.to');
    expect(fieldOf(() => parseLifecycleEvent(headers, JSON.stringify({ ...data, operation: { id: 'x' } })))).toBe('data.operation.node');
    expect(fieldOf(() => parseLifecycleEvent(headers, '{not json'))).toBe('data');
    expect(fieldOf(() => parseLifecycleEvent({ 'content-type': 'application/cloudevents+json' }, '{not json'))).toBe('body');
    expect(fieldOf(() => parseLifecycleEvent({ ...headers, 'ce-dataschema': 'not a uri' }, String(body)))).toBe('dataschema');
    expect(fieldOf(() => parseLifecycleEvent({ 'content-type': 'application/cloudevents-batch+json' }, JSON.stringify([event.toJSON()])))).toBe('content-type');
  });

  test('refuses a missing or malformed id or time instead of letting the SDK make one up', () => {
    const binary = HTTP.binary(event);
    const headers = binary.headers as Record<string, string>;
    const body = String(binary.body);
    const { 'ce-id': _id, ...noId } = headers;
    expect(fieldOf(() => parseLifecycleEvent(noId, body))).toBe('id');
    const { 'ce-time': _time, ...noTime } = headers;
    expect(fieldOf(() => parseLifecycleEvent(noTime, body))).toBe('time');
    // the SDK keeps such a time, and the event then throws RangeError on JSON.stringify
    expect(fieldOf(() => parseLifecycleEvent({ ...headers, 'ce-time': 'yesterday' }, body))).toBe('time');
    const structured = JSON.parse(String(HTTP.structured(event).body)) as Record<string, unknown>;
    const type = { 'content-type': 'application/cloudevents+json' };
    const { id: _sid, ...structuredNoId } = structured;
    expect(fieldOf(() => parseLifecycleEvent(type, JSON.stringify(structuredNoId)))).toBe('id');
    const { time: _stime, ...structuredNoTime } = structured;
    expect(fieldOf(() => parseLifecycleEvent(type, JSON.stringify(structuredNoTime)))).toBe('time');
    const offset = parseLifecycleEvent({ ...headers, 'ce-time': '2026-01-01T01:00:00+01:00' }, body);
    expect(Date.parse(offset.time)).toBe(Date.parse('2026-01-01T00:00:00Z'));
  });

  test('keeps data fields it does not know (a newer v1 event stays readable)', () => {
    const { headers, body } = HTTP.binary(event);
    const got = parseLifecycleEvent(headers, JSON.stringify({ ...(JSON.parse(String(body)) as object), later: 'field' }));
    expect(got.data.later).toBe('field');
  });
});
