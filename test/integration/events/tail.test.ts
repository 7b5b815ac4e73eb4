// `okt events tail` as a real child process: the sink URL first, then one line per event.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterEach, expect, test } from 'vitest';
import { LifecycleEventEmitter, parseLifecycleEvent } from '../../../src/events/index.ts';
import { resourceFor, simulatedOutbox } from '../../unit/events-fixtures.ts';
import { FAST, capturingLogger, waitFor } from './helpers.ts';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const child of children.splice(0)) child.kill('SIGTERM');
});

function tail(...args: string[]): { lines: string[]; child: ChildProcessWithoutNullStreams } {
  const child = spawn(process.execPath, ['bin/okt.js', 'events', 'tail', ...args], { cwd: REPO });
  children.push(child);
  const lines: string[] = [];
  createInterface({ input: child.stdout }).on('line', (line) => lines.push(line));
  return { lines, child };
}

async function emitTo(url: string): Promise<number> {
  const outbox = simulatedOutbox();
  const e = new LifecycleEventEmitter({ ...FAST, sink: url, logger: capturingLogger().logger });
  const db = { ...resourceFor('db1'), key: 'default/db1' };
  e.offer(db, outbox);
  await waitFor('delivered', () => e.delivered(db.uid) === outbox.length);
  await e.close();
  return outbox.length;
}

test('human lines: time, CR, short type, from -> to, sequence', async () => {
  const { lines } = tail();
  await waitFor('the sink line', () => lines.length > 0);
  const url = /^sink (http:\/\/127\.0\.0\.1:\d+\/)/.exec(lines[0]!)?.[1];
  expect(url).toBeDefined();
  const count = await emitTo(url!);
  await waitFor('every event printed', () => lines.length === 1 + count);
  const outbox = simulatedOutbox();
  expect(lines[1]).toBe(`${outbox[0]!.time}  default/db1  transition  Start -> Running  #1`);
  expect(lines[2]).toBe(`${outbox[1]!.time}  default/db1  action.started  Start -> Running  #2  Pending`);
  expect(lines.find((line) => line.includes(' stalled '))).toMatch(/ stalled {2}Servicing -> Servicing {2}#8 {2}ActionFailed$/);
});

test('--json: the first line names the sink, then one structured CloudEvent per line', async () => {
  const { lines } = tail('--json', '--port', '0');
  await waitFor('the sink line', () => lines.length > 0);
  const { sink } = JSON.parse(lines[0]!) as { sink: string };
  const count = await emitTo(sink);
  await waitFor('every event printed', () => lines.length === 1 + count);
  const events = lines.slice(1).map((line) => parseLifecycleEvent({ 'content-type': 'application/cloudevents+json' }, line));
  expect(events.map((e) => Number(e.sequence))).toEqual(simulatedOutbox().map((entry) => entry.sequence));
});
