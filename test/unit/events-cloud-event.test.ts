import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { CloudEvent, HTTP } from 'cloudevents';
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import {
  LIFECYCLE_EVENT_DATA_SCHEMA_URI, LIFECYCLE_EVENT_TYPES, LifecycleEventError, formatSequence, parseCeOverrides,
  renderLifecycleEventDataJsonSchema, toCloudEvent,
} from '../../src/events/index.ts';
import { resourceFor, simulatedOutbox } from './events-fixtures.ts';

const SCHEMA_FILE = new URL('../../src/events/schema/lifecycle-event-data.v1.json', import.meta.url);
const TRACEPARENT = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

function validateData(): (data: unknown) => boolean {
  const ajv = new Ajv2020({ strict: true });
  return ajv.compile(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as object);
}

describe('the shipped JSON Schema', () => {
  test('is the zod schema rendered now (regenerate: node src/events/write-schema.ts)', () => {
    expect(readFileSync(SCHEMA_FILE, 'utf8')).toBe(renderLifecycleEventDataJsonSchema());
  });

  test('its $id is the dataschema of every event', () => {
    expect(JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')).$id).toBe(LIFECYCLE_EVENT_DATA_SCHEMA_URI);
  });

  test('rejects data missing a required field, with a wrong type, or a negative transition', () => {
    const valid = validateData();
    const data = simulatedOutbox()[0]!.data;
    expect(valid(data)).toBe(true);
    const { from: _from, ...noFrom } = data;
    expect(valid(noFrom)).toBe(false);
    expect(valid({ ...data, events: 'Running' })).toBe(false);
    expect(valid({ ...data, transition: -1 })).toBe(false);
  });
});

describe('toCloudEvent', () => {
  const resource = resourceFor('db1', '6f1c2a7e-0000-4000-8000-000000000001');
  const outbox = simulatedOutbox();

  test('the step commits every lifecycle event type but objects.applied, which the apply writes (so the checks below cover them all)', () => {
    const { objectsApplied, ...stepTypes } = LIFECYCLE_EVENT_TYPES;
    expect(new Set(outbox.map((e) => e.type))).toEqual(new Set(Object.values(stepTypes)));
    expect(objectsApplied).toBe('dev.okt.lifecycle.objects.applied.v1');
  });

  test('maps an outbox entry to the documented attributes', () => {
    const entry = outbox[0]!;
    const event = toCloudEvent(resource, entry, { traceparent: TRACEPARENT });
    expect(event.toJSON()).toEqual({
      specversion: '1.0',
      id: `${resource.uid}.1`,
      source: '/apis/okt.dev/v1alpha1/namespaces/default/databases/db1',
      type: 'dev.okt.lifecycle.transition.v1',
      subject: 'Running',
      time: entry.time,
      datacontenttype: 'application/json',
      dataschema: LIFECYCLE_EVENT_DATA_SCHEMA_URI,
      data: entry.data,
      sequence: '00000000000000000001',
      partitionkey: resource.uid,
      traceparent: TRACEPARENT,
    });
  });

  test('every event of the step passes the SDK validation, both HTTP modes, and the JSON Schema', () => {
    const valid = validateData();
    for (const entry of outbox) {
      const event = toCloudEvent(resource, entry);
      expect(event.validate()).toBe(true);
      expect(valid(event.data), JSON.stringify(event.data)).toBe(true);
      for (const message of [HTTP.binary(event), HTTP.structured(event)]) {
        const back = HTTP.toEvent(message) as CloudEvent<unknown>;
        expect(back.validate()).toBe(true);
        expect(back.toJSON()).toEqual(event.toJSON());
      }
    }
  });

  test('the same entry always gives the same id (a redelivery is recognisable)', () => {
    const entry = outbox[3]!;
    expect(toCloudEvent(resource, entry).id).toBe(toCloudEvent(resource, { ...entry }).id);
    expect(toCloudEvent(resource, entry).id).not.toBe(toCloudEvent(resource, outbox[4]!).id);
  });

  test('overrides add extensions after okt\'s own (partitionkey may be overridden, type may not)', () => {
    const overrides = parseCeOverrides('{"extensions":{"cluster":"eu1","partitionkey":"all","priority":2}}')!;
    const event = toCloudEvent(resource, outbox[0]!, { overrides });
    expect(event.cluster).toBe('eu1');
    expect(event.priority).toBe(2);
    expect(event.partitionkey).toBe('all');
    expect(event.type).toBe(LIFECYCLE_EVENT_TYPES.transition);
  });

  test('refuses an entry that is no lifecycle event, naming the field', () => {
    expect(() => toCloudEvent(resource, { ...outbox[0]!, type: 'com.example.other' })).toThrow(/outbox\[sequence=1\]\.type/);
    const { from: _from, ...noFrom } = outbox[0]!.data;
    expect(() => toCloudEvent(resource, { ...outbox[0]!, data: noFrom })).toThrow(/outbox\[sequence=1\]\.data\.from/);
    expect(() => toCloudEvent(resource, { ...outbox[0]!, time: 'yesterday' })).toThrow(LifecycleEventError);
    expect(() => toCloudEvent(resource, outbox[0]!, { traceparent: 'abc' })).toThrow(/^traceparent:/);
    expect(() => toCloudEvent({ ...resource, apiPath: 'databases/db1' }, outbox[0]!)).toThrow(/^source:/);
  });
});

describe('parseCeOverrides', () => {
  test('nothing set means no overrides', () => {
    expect(parseCeOverrides(undefined)).toBeUndefined();
    expect(parseCeOverrides('  ')).toBeUndefined();
  });

  test('names the field at fault', () => {
    expect(() => parseCeOverrides('{"extensions":{"type":"x"}}')).toThrow(/^K_CE_OVERRIDES\.extensions: may not set .*type/);
    expect(() => parseCeOverrides('{"extensions":{"sequence":"1"}}')).toThrow(/may not set/);
    expect(() => parseCeOverrides('{"extensions":{"Bad-Name":"x"}}')).toThrow(/^K_CE_OVERRIDES\.extensions\.Bad-Name: .*lowercase/);
    expect(() => parseCeOverrides('{"extensions":{"a":{}}}')).toThrow(/^K_CE_OVERRIDES\.extensions\.a:/);
    expect(() => parseCeOverrides('{"extension":{}}')).toThrow(/^K_CE_OVERRIDES/);
    expect(() => parseCeOverrides('{nope')).toThrow(/^K_CE_OVERRIDES: not JSON/);
  });
});

test('the sequence extension orders as strings the way sequences order as numbers', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (a, b) => {
      const [sa, sb] = [formatSequence(a), formatSequence(b)];
      expect(sa).toHaveLength(20);
      expect(Math.sign(sa.localeCompare(sb, 'en'))).toBe(Math.sign(a - b));
      expect(sa < sb).toBe(a < b);
    }),
  );
});

test('the package exports the schema file as okt/schema/lifecycle-event-data.v1.json', () => {
  const resolved = createRequire(import.meta.url).resolve('okt/schema/lifecycle-event-data.v1.json');
  expect(readFileSync(resolved, 'utf8')).toBe(readFileSync(SCHEMA_FILE, 'utf8'));
});
