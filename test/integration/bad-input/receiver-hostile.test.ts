// Hostile input for the CloudEvents receiver and parseLifecycleEvent: fast-check mutates real lifecycle
// events and throws random requests (HTTP and raw sockets) at a real receiver. Every refusal is a 4xx
// problem naming the attribute or data field, the receiver never falls over, and valid events still get in.
import { METHODS } from 'node:http';
import { HTTP } from 'cloudevents';
import fc from 'fast-check';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  LIFECYCLE_EVENT_TYPES, LifecycleEventError, createLifecycleEventReceiver, parseLifecycleEvent, toCloudEvent,
  type LifecycleEvent, type LifecycleEventReceiver,
} from '../../../src/events/index.ts';
import { resourceFor, simulatedOutbox } from '../../unit/events-fixtures.ts';
import { InputCounts, arbBody, arbHeaders, arbMethod, arbPath, assertRawFramingRefused, expectProblemAnswer, rawExchange } from './hostile-http.ts';
import { fcRuns } from '../../fixtures/fast-check.ts';

const counts = new InputCounts('CloudEvents receiver');
const received: LifecycleEvent[] = [];
let receiver: LifecycleEventReceiver;
let serial = 0;

beforeAll(async () => {
  receiver = await createLifecycleEventReceiver({ onEvent: (event) => void received.push(event) });
});
afterAll(async () => {
  counts.print();
  await receiver?.close();
});

type Headers = Record<string, string>;
interface Wire { mode: 'binary' | 'structured'; headers: Headers; body: string }

const outbox = simulatedOutbox();
/** A real lifecycle event (a step's outbox entry), fresh id each time, on the wire in either mode. */
const arbWire = fc.record({ index: fc.nat({ max: outbox.length - 1 }), mode: fc.constantFrom('binary' as const, 'structured' as const) }).map(({ index, mode }) => {
  const event = toCloudEvent(resourceFor(`db${(serial += 1)}`), outbox[index]!);
  const message = mode === 'binary' ? HTTP.binary(event) : HTTP.structured(event);
  return { mode, headers: { ...(message.headers as Headers) }, body: String(message.body) } satisfies Wire;
});

/** A value of the wrong kind for any attribute or data field. */
const arbWrong = fc.oneof(
  fc.constantFrom(null, -1, 1.5, true, [], {}, '', '\u0000', 'x'.repeat(70_000), [null], { graph: 1 }),
  fc.jsonValue({ maxDepth: 2 }),
);

const REQUIRED_ATTRIBUTES = ['id', 'source', 'type', 'subject', 'time', 'sequence', 'partitionkey'] as const;
const DATA_FIELDS = ['graph', 'transition', 'from', 'to', 'desired', 'events', 'path', 'generation'] as const;

/** One thing broken in a valid event, and the field the refusal must name. */
type Mutation =
  | { kind: 'drop'; attribute: (typeof REQUIRED_ATTRIBUTES)[number] }
  | { kind: 'badType'; value: string }
  | { kind: 'badSequence'; value: string }
  | { kind: 'badTime'; value: string }
  | { kind: 'badSpecversion'; value: string }
  | { kind: 'dataField'; field: (typeof DATA_FIELDS)[number]; value: unknown };

const arbMutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.constantFrom(...REQUIRED_ATTRIBUTES).map((attribute) => ({ kind: 'drop' as const, attribute })),
  fc.string({ minLength: 1, maxLength: 60 }).filter((s) => !(Object.values(LIFECYCLE_EVENT_TYPES) as string[]).includes(s) && visibleAscii(s)).map((value) => ({ kind: 'badType' as const, value })),
  fc.oneof(fc.stringMatching(/^[\x21-\x7e]{1,30}$/), fc.nat().map(String), fc.constant('-0000000000000000001')).filter((s) => !/^\d{20}$/.test(s)).map((value) => ({ kind: 'badSequence' as const, value })),
  fc.oneof(fc.stringMatching(/^[\x21-\x7e]{1,30}$/), fc.constantFrom('yesterday', '2026-13-01T00:00:00Z', '2026-01-01', '0', 'Thu, 01 Jan 2026 00:00:00 GMT')).map((value) => ({ kind: 'badTime' as const, value })),
  fc.stringMatching(/^[\x21-\x7e]{1,10}$/).filter((s) => s !== '1.0').map((value) => ({ kind: 'badSpecversion' as const, value })),
  fc.record({ field: fc.constantFrom(...DATA_FIELDS), value: arbWrong }).filter(({ field, value }) => wrongFor(field, value)).map((m) => ({ kind: 'dataField' as const, ...m })),
);

function visibleAscii(s: string): boolean {
  return /^[\x21-\x7e]+$/.test(s);
}

/** Whether `value` is really invalid for that data field (a random string is a fine node name). */
function wrongFor(field: (typeof DATA_FIELDS)[number], value: unknown): boolean {
  switch (field) {
    case 'transition':
    case 'generation':
      return !(Number.isInteger(value) && (value as number) >= 0);
    case 'events':
      return !(Array.isArray(value) && value.every((e) => typeof e === 'string' && e !== ''));
    case 'path':
      return typeof value !== 'string';
    default:
      return typeof value !== 'string' || value === '';
  }
}

function expectedField(mutation: Mutation): string {
  switch (mutation.kind) {
    case 'drop':
      return mutation.attribute;
    case 'badType':
      return 'type';
    case 'badSequence':
      return 'sequence';
    case 'badTime':
      return 'time';
    case 'badSpecversion':
      return 'specversion';
    case 'dataField':
      return `data.${mutation.field}`;
  }
}

function mutate(wire: Wire, mutation: Mutation): Wire {
  if (wire.mode === 'structured') {
    const event = JSON.parse(wire.body) as Record<string, unknown> & { data: Record<string, unknown> };
    switch (mutation.kind) {
      case 'drop':
        delete event[mutation.attribute];
        break;
      case 'dataField':
        event.data = { ...event.data, [mutation.field]: mutation.value };
        break;
      default:
        event[attributeOf(mutation)] = mutation.value;
    }
    return { ...wire, body: JSON.stringify(event) };
  }
  const headers = { ...wire.headers };
  switch (mutation.kind) {
    case 'drop':
      delete headers[`ce-${mutation.attribute}`];
      return { ...wire, headers };
    case 'dataField':
      return { ...wire, body: JSON.stringify({ ...(JSON.parse(wire.body) as object), [mutation.field]: mutation.value }) };
    default:
      headers[`ce-${attributeOf(mutation)}`] = mutation.value;
      return { ...wire, headers };
  }
}

function attributeOf(mutation: Exclude<Mutation, { kind: 'drop' | 'dataField' }>): string {
  return { badType: 'type', badSequence: 'sequence', badTime: 'time', badSpecversion: 'specversion' }[mutation.kind];
}

function expectRefusal(error: unknown, label: string): LifecycleEventError {
  expect(error, label).toBeInstanceOf(LifecycleEventError);
  const refusal = error as LifecycleEventError;
  expect(refusal.field, label).not.toBe('');
  expect(refusal.message.startsWith(`${refusal.field}: `), label).toBe(true);
  return refusal;
}

/** The field named is the one broken, or inside it (`data.events.0` for a bad item of `data.events`). */
function expectNames(field: string, broken: string, label: string): void {
  expect(field === broken || field.startsWith(`${broken}.`), `${label}: names ${field}, not ${broken}`).toBe(true);
}

function parseOrRefusal(headers: Headers, body: string | Uint8Array | undefined): LifecycleEvent | LifecycleEventError {
  try {
    return parseLifecycleEvent(headers, body);
  } catch (error) {
    return expectRefusal(error, JSON.stringify(headers));
  }
}

/** An accepted event is whole: what the sender sent, and it serializes (a consumer logs or stores it). */
function expectWhole(event: LifecycleEvent, sent: Wire): void {
  expect(() => JSON.stringify(event)).not.toThrow();
  const attributes = sent.mode === 'structured' ? (JSON.parse(sent.body) as Record<string, unknown>) : Object.fromEntries(Object.entries(sent.headers).map(([k, v]) => [k.replace(/^ce-/, ''), v]));
  expect(event.id).toBe(attributes.id);
  expect(event.time).toBe(attributes.time);
}

async function post(headers: Headers, body: string | Uint8Array | undefined, method = 'POST', path = '/') {
  // A connection per request (reset), so that a failure belongs to the request that caused it.
  const response = await request(`${receiver.url.replace(/\/$/, '')}${path}`, { method, headers, body: body ?? null, reset: true });
  return { status: response.statusCode, headers: response.headers, body: await response.body.text() };
}

/** A valid event still gets in, and reaches onEvent. */
async function expectStillAccepting(): Promise<void> {
  const wire = fc.sample(arbWire, 1)[0]!;
  const before = received.length;
  const answer = await post(wire.headers, wire.body);
  expect(answer.status).toBe(202);
  expect(received.length).toBe(before + 1);
  expectWhole(received.at(-1)!, wire);
}

describe('parseLifecycleEvent', () => {
  test('a valid event with one thing broken is refused, naming the attribute or data field it broke', () => {
    fc.assert(
      fc.property(arbWire, arbMutation, (wire, mutation) => {
        counts.add('parse: mutated valid events');
        const label = `${wire.mode} ${JSON.stringify(mutation).slice(0, 200)}`;
        const broken = mutate(wire, mutation);
        let error: unknown;
        try {
          parseLifecycleEvent(broken.headers, broken.body);
        } catch (e) {
          error = e;
        }
        expectNames(expectRefusal(error, label).field, expectedField(mutation), label);
      }),
      { numRuns: fcRuns(600) },
    );
  });

  test('random headers and bodies: a whole event or a refusal naming a field, never another error', () => {
    const arbCeHeaders = fc.dictionary(
      fc.oneof(fc.constantFrom('content-type', ...REQUIRED_ATTRIBUTES.map((a) => `ce-${a}`), 'ce-specversion', 'ce-dataschema', 'ce-datacontenttype', 'ce-', 'ce-Data', 'ce-data_base64'), fc.string({ maxLength: 12 })),
      fc.oneof(fc.constantFrom('1.0', '0.3', 'application/json', 'application/cloudevents+json', 'application/cloudevents-batch+json', 'text/plain', LIFECYCLE_EVENT_TYPES.transition, '00000000000000000001', '2026-01-01T00:00:00Z', '/x'), fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 10 })),
    );
    fc.assert(
      fc.property(fc.oneof(arbCeHeaders, arbWire.map((w) => w.headers)), fc.oneof(arbBody, arbWire.map((w) => w.body)), (headers, body) => {
        counts.add('parse: random headers and bodies');
        const result = parseOrRefusal(headers, body);
        if (!(result instanceof LifecycleEventError)) expect(() => JSON.stringify(result)).not.toThrow();
      }),
      { numRuns: fcRuns(800) },
    );
  });

  test('an untouched event parses whole: its id and time are the sender\'s', () => {
    fc.assert(
      fc.property(arbWire, (wire) => {
        counts.add('parse: valid events');
        expectWhole(parseLifecycleEvent(wire.headers, wire.body), wire);
      }),
      { numRuns: fcRuns(100) },
    );
  });
});

describe('the receiver under hostile HTTP', () => {
  test('mutated events get a 400 problem naming the field; the valid ones mixed in get 202 and reach onEvent', async () => {
    await fc.assert(
      fc.asyncProperty(arbWire, fc.option(arbMutation, { freq: 4 }), async (wire, mutation) => {
        counts.add('http: mutated and valid events');
        const sent = mutation === null ? wire : mutate(wire, mutation);
        const before = received.length;
        const answer = await post(sent.headers, sent.body);
        if (mutation === null) {
          expect(answer.status).toBe(202);
          expect(received.length).toBe(before + 1);
          expectWhole(received.at(-1)!, wire);
          return;
        }
        const problem = expectProblemAnswer(answer, JSON.stringify(mutation).slice(0, 200));
        expect(answer.status).toBe(400);
        expectNames(String(problem.field), expectedField(mutation), JSON.stringify(mutation).slice(0, 200));
        expect(received.length).toBe(before);
      }),
      { numRuns: fcRuns(150) },
    );
    await expectStillAccepting();
  });

  test('random methods, paths, headers and bodies: 405, 413 or a 400 problem naming a field, or 202 for a real event', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(arbMethod, fc.constant('POST')), arbPath, fc.oneof(arbHeaders, arbWire.map((w) => w.headers)), arbBody, async (method, path, headers, body) => {
        counts.add('http: random requests');
        const label = `${method} ${path.slice(0, 80)} ${JSON.stringify(headers).slice(0, 200)}`;
        const answer = await post(headers, body, method, path);
        if (answer.status === 202) {
          expect(method).toBe('POST');
          expect(parseOrRefusal(headers, body)).not.toBeInstanceOf(LifecycleEventError);
          return;
        }
        const problem = expectProblemAnswer(answer, label);
        // A method Node's parser does not know never reaches the handler: the parser's 400 names the request.
        if (!METHODS.includes(method)) expect([answer.status, problem.field], label).toEqual([400, 'request']);
        else if (method !== 'POST') expect(answer.status, label).toBe(405);
        else if (answer.status === 400) expect(problem.field, label).toEqual(expect.any(String));
        else expect(answer.status, label).toBe(413);
      }),
      { numRuns: fcRuns(200) },
    );
    await expectStillAccepting();
  });

  test('broken framing on a raw socket: a 4xx problem or a closed connection, never a crash', async () => {
    await assertRawFramingRefused(receiver.port, counts);
    await expectStillAccepting();
  });

  test('slowloris: half-sent requests held open do not stop valid events, and are let go', async () => {
    const wire = fc.sample(arbWire, 1)[0]!;
    const head = `POST / HTTP/1.1\r\nHost: x\r\n${Object.entries(wire.headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}Content-Length: ${wire.body.length + 100}\r\n\r\n`;
    const slow = Array.from({ length: 20 }, (_, i) => {
      counts.add('raw: slowloris connections');
      // byte by byte through the headers, or the headers and then a body that never ends
      const chunks = i % 2 === 0 ? [...head.slice(0, 60)] : [head, wire.body];
      return rawExchange(receiver.port, chunks, { timeoutMs: 1_500, pauseMs: 20 });
    });
    await expectStillAccepting();
    for (const answer of await Promise.all(slow)) {
      if (answer.status !== undefined) expectProblemAnswer(answer, 'slowloris');
    }
    await expectStillAccepting();
  });
});
