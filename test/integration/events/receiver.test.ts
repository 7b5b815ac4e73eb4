import { connect } from 'node:net';
import { HTTP } from 'cloudevents';
import { request } from 'undici';
import { afterEach, expect, test } from 'vitest';
import {
  LifecycleEventEmitter, createLifecycleEventReceiver, toCloudEvent, type LifecycleEvent, type LifecycleEventReceiver,
} from '../../../src/events/index.ts';
import { resourceFor, simulatedOutbox, transitionEntries } from '../../unit/events-fixtures.ts';
import { FAST, capturingLogger, waitFor } from './helpers.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function receiver(onEvent: (event: LifecycleEvent) => void | Promise<void>, dedupe?: number): Promise<LifecycleEventReceiver> {
  const r = await createLifecycleEventReceiver({ onEvent, ...(dedupe === undefined ? {} : { dedupe }) });
  cleanups.push(() => r.close());
  return r;
}

async function post(url: string, headers: Record<string, string>, body: string): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const response = await request(url, { method: 'POST', headers, body });
  return { status: response.statusCode, body: await response.body.text(), headers: response.headers };
}

test('takes what the emitter sends, in both modes, and hands over typed events', async () => {
  const got: LifecycleEvent[] = [];
  const r = await receiver((event) => void got.push(event));
  const outbox = simulatedOutbox();
  for (const mode of ['binary', 'structured'] as const) {
    const e = new LifecycleEventEmitter({ ...FAST, sink: r.url, mode, logger: capturingLogger().logger });
    const db = { ...resourceFor(`db-${mode}`), key: `default/db-${mode}` };
    e.offer(db, outbox);
    await waitFor('delivered', () => e.delivered(db.uid) === outbox.length);
    await e.close();
  }
  expect(got.map((ev) => ev.data.to)).toEqual([...outbox, ...outbox].map((entry) => entry.data.to));
  expect(got.map((ev) => ev.type)).toEqual([...outbox, ...outbox].map((entry) => entry.type));
});

test('answers 202, and with dedupe calls onEvent once per source + id', async () => {
  const got: LifecycleEvent[] = [];
  const r = await receiver((event) => void got.push(event), 100);
  const event = toCloudEvent(resourceFor('db1'), transitionEntries(1)[0]!);
  const { headers, body } = HTTP.binary(event);
  for (let i = 0; i < 3; i += 1) expect((await post(r.url, headers as Record<string, string>, String(body))).status).toBe(202);
  expect(got.map((ev) => ev.id)).toEqual(['uid-db1.1']);
});

test('answers 400 with a problem naming the field, 405 to anything but POST', async () => {
  const r = await receiver(() => {});
  const event = toCloudEvent(resourceFor('db1'), transitionEntries(1)[0]!);
  const { headers, body } = HTTP.binary(event);
  const bad = await post(r.url, { ...(headers as Record<string, string>), 'ce-type': 'com.example.nope' }, String(body));
  expect(bad.status).toBe(400);
  expect(bad.headers['content-type']).toBe('application/problem+json');
  expect(JSON.parse(bad.body)).toMatchObject({ status: 400, field: 'type' });
  const junk = await post(r.url, { 'content-type': 'application/json' }, '{"hello":"world"}');
  expect(JSON.parse(junk.body)).toMatchObject({ status: 400, field: 'specversion' });
  const get = await request(r.url);
  expect(get.statusCode).toBe(405);
  expect(get.headers.allow).toBe('POST');
  await get.body.dump();
});

test('a consumer that fails gets the event again (500, the emitter retries)', async () => {
  let failures = 0;
  const got: number[] = [];
  const r = await receiver((event) => {
    if (failures < 2) {
      failures += 1;
      throw new Error('database busy');
    }
    got.push(Number(event.sequence));
  });
  const e = new LifecycleEventEmitter({ ...FAST, sink: r.url, logger: capturingLogger().logger });
  cleanups.push(() => e.close());
  const db = { ...resourceFor('db1'), key: 'default/db1' };
  e.offer(db, transitionEntries(3));
  await waitFor('delivered', () => e.delivered(db.uid) === 3);
  expect(got).toEqual([1, 2, 3]);
  expect(failures).toBe(2);
});

test('a request Node\'s HTTP parser refuses (an unknown method here) gets a 400 problem too, then the connection closes', async () => {
  const r = await receiver(() => {});
  const socket = connect(r.port, '127.0.0.1');
  socket.end('FROB / HTTP/1.1\r\nHost: x\r\n\r\n');
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  const [head = '', body = ''] = Buffer.concat(chunks).toString('utf8').split('\r\n\r\n');
  expect(head).toMatch(/^HTTP\/1\.1 400 /);
  expect(head).toMatch(/content-type: application\/problem\+json/i);
  expect(JSON.parse(body)).toMatchObject({ status: 400, field: 'request' });
});
