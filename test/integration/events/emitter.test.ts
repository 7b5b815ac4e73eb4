import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { CloudEvent, HTTP } from 'cloudevents';
import { afterEach, describe, expect, test } from 'vitest';
import { LifecycleEventEmitter, type LifecycleEventEmitterOptions, type OfferedResource } from '../../../src/events/index.ts';
import { resourceFor, simulatedOutbox, transitionEntries } from '../../unit/events-fixtures.ts';
import { FAST, TestSink, capturingLogger, sleep, waitFor } from './helpers.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function sink(): Promise<TestSink> {
  const s = await TestSink.start();
  cleanups.push(() => s.down());
  return s;
}

function emitter(options: LifecycleEventEmitterOptions): { emitter: LifecycleEventEmitter; delivered: string[]; blocked: string[]; lines: ReturnType<typeof capturingLogger>['lines'] } {
  const { logger, lines } = capturingLogger();
  const delivered: string[] = [];
  const blocked: string[] = [];
  const e = new LifecycleEventEmitter({ ...FAST, logger, onDelivered: (key) => delivered.push(key), onBlocked: (key) => blocked.push(key), ...options });
  cleanups.push(() => e.close());
  return { emitter: e, delivered, blocked, lines };
}

function offered(name: string, sinkUrl?: string): OfferedResource {
  return { ...resourceFor(name), key: `default/${name}`, ...(sinkUrl === undefined ? {} : { sink: sinkUrl }) };
}

/** Runs `build` with these environment variables (undefined: unset), restoring them after. */
function withEnv<T>(vars: Record<string, string | undefined>, build: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((name) => [name, process.env[name]]));
  const apply = (values: Record<string, string | undefined>) => {
    for (const [name, value] of Object.entries(values)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  };
  apply(vars);
  try {
    return build();
  } finally {
    apply(saved);
  }
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe('LifecycleEventEmitter', () => {
  test('binary mode: every event of a real lifecycle arrives in order, valid for the SDK and the JSON Schema', async () => {
    const s = await sink();
    const { emitter: e, delivered } = emitter({ sink: s.url });
    const db = offered('db1');
    const outbox = simulatedOutbox();
    e.offer({ ...db, traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }, outbox);
    await waitFor('all delivered', () => e.delivered(db.uid) === outbox.length);
    const validData = new Ajv2020().compile(JSON.parse(readFileSync(new URL('../../../src/events/schema/lifecycle-event-data.v1.json', import.meta.url), 'utf8')) as object);
    expect(s.requests.map((r) => r.problem)).toEqual(outbox.map(() => undefined));
    for (const request of s.requests) {
      expect(request.headers['content-type']).toBe('application/json');
      expect(request.headers['ce-specversion']).toBe('1.0');
      const event = HTTP.toEvent({ headers: request.headers, body: request.body }) as CloudEvent<unknown>;
      expect(event.validate()).toBe(true);
      expect(validData(event.data)).toBe(true);
      expect(event.traceparent).toBe('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    }
    expect(s.acceptedSequences(db.uid)).toEqual(outbox.map((entry) => entry.sequence));
    expect(s.accepted.map((ev) => ev.type)).toEqual(outbox.map((entry) => entry.type));
    expect(delivered).toHaveLength(outbox.length);
    expect(new Set(delivered)).toEqual(new Set(['default/db1']));
  });

  test('structured mode: application/cloudevents+json bodies carrying the same events', async () => {
    const s = await sink();
    const { emitter: e } = emitter({ sink: s.url, mode: 'structured' });
    const db = offered('db1');
    e.offer(db, transitionEntries(5));
    await waitFor('all delivered', () => e.delivered(db.uid) === 5);
    for (const request of s.requests) {
      expect(request.headers['content-type']).toMatch(/^application\/cloudevents\+json/);
      expect(request.headers['ce-id']).toBeUndefined();
      expect((JSON.parse(request.body) as { specversion: string }).specversion).toBe('1.0');
    }
    expect(s.acceptedSequences(db.uid)).toEqual(range(1, 5));
  });

  test('a sink down for a while, then back: every event arrives, in order, with the ids it had', async () => {
    const s = await sink();
    await s.down();
    const { emitter: e, lines } = emitter({ sink: s.url });
    const db = offered('db1');
    e.offer(db, transitionEntries(4));
    await waitFor('a few failed tries', () => lines.filter((l) => l.msg.includes('not delivered')).length >= 3);
    e.offer(db, transitionEntries(8)); // the next reconcile offers the whole outbox again, grown
    expect(e.delivered(db.uid)).toBe(0);
    await s.up();
    await waitFor('all delivered', () => e.delivered(db.uid) === 8);
    expect(s.acceptedSequences(db.uid)).toEqual(range(1, 8));
    expect(s.accepted.map((ev) => ev.id)).toEqual(range(1, 8).map((n) => `${db.uid}.${n}`));
  });

  test('a sink answering 500, then 202: the same event again, then the rest', async () => {
    const s = await sink();
    s.behave = (_request, n) => (n < 3 ? 500 : 202);
    const { emitter: e, lines } = emitter({ sink: s.url });
    const db = offered('db1');
    e.offer(db, transitionEntries(3));
    await waitFor('all delivered', () => e.delivered(db.uid) === 3);
    expect(s.requests.map((r) => r.event?.id)).toEqual([1, 1, 1, 1, 2, 3].map((n) => `${db.uid}.${n}`));
    expect(s.acceptedSequences(db.uid)).toEqual([1, 2, 3]);
    expect(lines.filter((l) => l.msg.includes('not delivered')).map((l) => l.reason)).toEqual(['HTTP 500: status 500', 'HTTP 500: status 500', 'HTTP 500: status 500']);
    expect(e.blocked(db.uid)).toBeUndefined();
  });

  test('a sink that hangs: the try times out and the event is sent again', async () => {
    const s = await sink();
    s.behave = (_request, n) => (n === 0 ? 'hang' : 202);
    const { emitter: e, lines } = emitter({ sink: s.url, timeoutMs: 200 });
    const db = offered('db1');
    e.offer(db, transitionEntries(2));
    await waitFor('all delivered', () => e.delivered(db.uid) === 2);
    expect(s.requests.map((r) => r.event?.id)).toEqual([1, 1, 2].map((n) => `${db.uid}.${n}`));
    expect(String(lines.find((l) => l.msg.includes('not delivered'))?.reason)).toMatch(/timeout/i);
  });

  test('a sink that closes the connection: the event is sent again', async () => {
    const s = await sink();
    s.behave = (_request, n) => (n < 2 ? 'destroy' : 204);
    const { emitter: e } = emitter({ sink: s.url });
    const db = offered('db1');
    e.offer(db, transitionEntries(2));
    await waitFor('all delivered', () => e.delivered(db.uid) === 2);
    expect(s.requests.map((r) => r.event?.id)).toEqual([1, 1, 1, 2].map((n) => `${db.uid}.${n}`));
  });

  test('many CRs at once: each CR strictly in order, CRs in parallel, never more than `concurrency` in flight', async () => {
    const s = await sink();
    let seed = 42;
    const random = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    s.behave = async () => {
      await sleep(Math.floor(random() * 5));
      return random() < 0.2 ? 503 : 202;
    };
    const { emitter: e } = emitter({ sink: s.url, concurrency: 8 });
    const dbs = range(1, 24).map((i) => offered(`db${i}`));
    for (const batch of [[1, 10], [11, 20], [21, 30]] as const) {
      for (const db of dbs) e.offer(db, transitionEntries(batch[1] - batch[0] + 1, batch[0]));
    }
    await waitFor('all delivered', () => dbs.every((db) => e.delivered(db.uid) === 30), 60_000);
    for (const db of dbs) expect(s.acceptedSequences(db.uid)).toEqual(range(1, 30));
    expect(s.maxInFlight).toBeGreaterThan(1);
    expect(s.maxInFlight).toBeLessThanOrEqual(8);
  });

  test('offering the same entries again sends nothing twice, also once the CR has nothing left to send (its stream kept as one number)', async () => {
    const s = await sink();
    const { emitter: e } = emitter({ sink: s.url });
    const db = offered('db1');
    const entries = transitionEntries(8);
    e.offer(db, entries.slice(0, 4));
    e.offer(db, entries.slice(0, 6));
    e.offer(db, entries.slice(2, 6));
    await waitFor('all delivered', () => e.delivered(db.uid) === 6);
    e.offer(db, entries.slice(0, 6));
    await sleep(50);
    expect(e.delivered(db.uid)).toBe(6);
    e.offer(db, entries);
    await waitFor('the next ones delivered', () => e.delivered(db.uid) === 8);
    expect(s.requests.map((r) => Number(r.event?.sequence))).toEqual(range(1, 8));
    e.forget(db.uid);
    expect(e.delivered(db.uid)).toBe(0);
  });

  test('an event the sink refuses (400) blocks its CR, loudly, until the sink takes it; other CRs flow', async () => {
    const s = await sink();
    let refuse = true;
    s.behave = (request) => (refuse && request.event?.partitionkey === 'uid-db1' && request.event.sequence.endsWith('2') ? 400 : 202);
    const { emitter: e, blocked, lines } = emitter({ sink: s.url });
    const [db1, db2] = [offered('db1'), offered('db2')];
    e.offer(db1, transitionEntries(4));
    e.offer(db2, transitionEntries(4));
    await waitFor('db1 blocked', () => e.blocked(db1.uid) !== undefined);
    await waitFor('db2 delivered', () => e.delivered(db2.uid) === 4);
    expect(e.blocked(db1.uid)).toEqual({ sequence: 2, reason: 'HTTP 400: status 400' });
    expect(e.delivered(db1.uid)).toBe(1);
    expect(blocked).toEqual(['default/db1']);
    const error = lines.find((l) => l.level === 50);
    expect(error).toMatchObject({ key: 'default/db1', sequence: 2, reason: 'HTTP 400: status 400' });
    await waitFor('retried while blocked', () => s.requests.filter((r) => r.event?.id === `${db1.uid}.2`).length >= 2);
    expect(s.acceptedSequences(db1.uid)).toEqual([1]);
    refuse = false;
    await waitFor('db1 delivered', () => e.delivered(db1.uid) === 4);
    expect(e.blocked(db1.uid)).toBeUndefined();
    expect(s.acceptedSequences(db1.uid)).toEqual([1, 2, 3, 4]);
  });

  test('a new sink for a blocked CR (spec.eventSink changed) gets the refused event at once', async () => {
    const refusing = await sink();
    refusing.behave = () => 400;
    const taking = await sink();
    const { emitter: e } = emitter({ sink: refusing.url, backoff: { initialMs: 10, maxMs: 60_000 } });
    const db = offered('db1');
    e.offer(db, transitionEntries(3));
    await waitFor('blocked', () => e.blocked(db.uid) !== undefined);
    e.offer({ ...db, sink: taking.url }, transitionEntries(3));
    await waitFor('delivered to the new sink', () => e.delivered(db.uid) === 3);
    expect(taking.acceptedSequences(db.uid)).toEqual([1, 2, 3]);
    expect(refusing.requests).toHaveLength(1);
  });

  test('K_SINK and K_CE_OVERRIDES from the environment: the extensions arrive, the type stays', async () => {
    const s = await sink();
    const e = withEnv({ K_SINK: s.url, K_CE_OVERRIDES: '{"extensions":{"cluster":"eu1","tenant":"blue"}}' }, () => emitter({}).emitter);
    const db = offered('db1');
    e.offer(db, transitionEntries(2));
    await waitFor('delivered', () => e.delivered(db.uid) === 2);
    for (const request of s.requests) {
      expect(request.headers['ce-cluster']).toBe('eu1');
      expect(request.headers['ce-tenant']).toBe('blue');
      expect(request.headers['ce-type']).toBe('dev.okt.lifecycle.transition.v1');
    }
    expect(s.accepted.map((ev) => ev.cluster)).toEqual(['eu1', 'eu1']);
  });

  test('bad K_CE_OVERRIDES fails at construction, naming the field', () => {
    withEnv({ K_CE_OVERRIDES: '{"extensions":{"type":"evil"}}' }, () => {
      expect(() => new LifecycleEventEmitter({})).toThrow(/^K_CE_OVERRIDES\.extensions: may not set/);
    });
    expect(() => new LifecycleEventEmitter({ sink: 'not a url' })).toThrow(/^sink \(or K_SINK\)/);
    expect(() => new LifecycleEventEmitter({ backoff: { initialMs: 0, maxMs: 1 } })).toThrow(/^backoff\.initialMs/);
  });

  test('no sink at all: offered events count as delivered at once', async () => {
    const { emitter: e, delivered } = withEnv({ K_SINK: undefined }, () => emitter({}));
    const db = offered('db1');
    e.offer(db, transitionEntries(5));
    expect(e.delivered(db.uid)).toBe(5);
    await waitFor('told', () => delivered.length === 1);
    expect(delivered).toEqual(['default/db1']);
  });

  test('offerWithoutSink: with no sink, the events up to a sequence count as delivered unread, and the CR is told; with one, nothing is done', async () => {
    const { emitter: e, delivered } = withEnv({ K_SINK: undefined }, () => emitter({}));
    const db = offered('db1');
    expect(e.offerWithoutSink(db, 5)).toBe(true);
    expect(e.delivered(db.uid)).toBe(5);
    await waitFor('told', () => delivered.length === 1);
    expect(e.offerWithoutSink(db, 5)).toBe(true);
    await sleep(20);
    expect(delivered).toEqual(['default/db1']); // nothing newer: not told again
    const own = { ...offered('db2'), sink: 'http://127.0.0.1:9/' };
    expect(e.offerWithoutSink(own, 3)).toBe(false);
    expect(e.delivered(own.uid)).toBe(0);
  });

  test('forget: the CR\'s retries stop and its memory goes', async () => {
    const s = await sink();
    s.behave = () => 500;
    const { emitter: e } = emitter({ sink: s.url });
    const db = offered('db1');
    e.offer(db, transitionEntries(2));
    await waitFor('a few tries', () => s.requests.length >= 2);
    e.forget(db.uid);
    await sleep(30);
    const tries = s.requests.length;
    await sleep(300); // several backoff periods (maxMs 100)
    expect(s.requests.length).toBe(tries);
    expect(e.delivered(db.uid)).toBe(0);
  });

  test('close waits for the send in flight and stops retries', async () => {
    const s = await sink();
    let release: (status: number) => void = () => {};
    s.behave = (_request, n) => (n === 0 ? new Promise<number>((resolve) => (release = resolve)) : 500);
    const e = new LifecycleEventEmitter({ ...FAST, sink: s.url, logger: capturingLogger().logger });
    const db = offered('db1');
    e.offer(db, transitionEntries(3));
    await waitFor('in flight', () => s.requests.length === 1);
    let closed = false;
    const closing = e.close().then(() => (closed = true));
    await sleep(20);
    expect(closed).toBe(false);
    release(202);
    await closing;
    expect(e.delivered(db.uid)).toBe(1);
    await sleep(200);
    expect(s.requests).toHaveLength(1);
  });
});
