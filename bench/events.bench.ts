// Lifecycle CloudEvents delivered per second to a loopback sink (keep-alive, answering 202 from a worker
// thread), against a bare undici POST loop of the same event to the same sink in the same run: the
// cost of building, validating and ordering events. Many CRs in parallel (64 at once) and one CR alone
// (strictly one event after the other: its latency bound). The spec-change-to-arrival latency needs
// the operator and is measured elsewhere.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { HTTP } from 'cloudevents';
import { pino } from 'pino';
import { Agent, request } from 'undici';
import { LifecycleEventEmitter, toCloudEvent } from '../src/events/index.ts';
import { resourceFor, transitionEntries } from '../test/unit/events-fixtures.ts';

const PARALLEL_CRS = 64;
const PARALLEL_EVENTS_PER_CR = Number(process.env.OKT_BENCH_EVENTS_PER_CR ?? 300);
const SERIAL_EVENTS = Number(process.env.OKT_BENCH_SERIAL_EVENTS ?? 3000);

const SINK = `
const { createServer } = require('node:http');
const { parentPort } = require('node:worker_threads');
const server = createServer((req, res) => { req.resume(); req.on('end', () => { res.writeHead(202); res.end(); }); });
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
`;

async function startSink(): Promise<{ url: string; stop: () => Promise<number> }> {
  const worker = new Worker(SINK, { eval: true });
  const [port] = (await once(worker, 'message')) as [number];
  return { url: `http://127.0.0.1:${port}/`, stop: () => worker.terminate() };
}

/** Events per second through the emitter: `crs` CRs with `perCr` events each, offered at once. */
async function emitterRate(url: string, crs: number, perCr: number): Promise<number> {
  let left = crs * perCr;
  let done: () => void = () => {};
  const finished = new Promise<void>((resolve) => (done = resolve));
  const emitter = new LifecycleEventEmitter({
    sink: url, concurrency: Math.min(crs, 64), logger: pino({ level: 'silent' }),
    onDelivered: () => {
      if (--left === 0) done();
    },
  });
  const entries = transitionEntries(perCr);
  const start = performance.now();
  for (let i = 0; i < crs; i++) emitter.offer({ ...resourceFor(`db${i}`), key: `bench/db${i}` }, entries);
  await finished;
  const seconds = (performance.now() - start) / 1000;
  await emitter.close();
  return (crs * perCr) / seconds;
}

/** POSTs per second of one prebuilt binary-mode event with undici, `loops` loops in parallel. */
async function bareRate(url: string, loops: number, perLoop: number): Promise<number> {
  const { headers, body } = HTTP.binary(toCloudEvent(resourceFor('db0'), transitionEntries(1)[0]!));
  const flat = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, String(v)]));
  const agent = new Agent({ connections: loops });
  const start = performance.now();
  await Promise.all(Array.from({ length: loops }, async () => {
    for (let i = 0; i < perLoop; i++) {
      const response = await request(url, { method: 'POST', headers: flat, body: String(body), dispatcher: agent });
      if (response.statusCode !== 202) throw new Error(`sink answered ${response.statusCode}`);
      await response.body.dump();
    }
  }));
  const seconds = (performance.now() - start) / 1000;
  await agent.close();
  return (loops * perLoop) / seconds;
}

export async function run(): Promise<Record<string, number>> {
  const sink = await startSink();
  try {
    await emitterRate(sink.url, PARALLEL_CRS, 20); // warm up both paths
    await bareRate(sink.url, PARALLEL_CRS, 20);
    const parallel = await emitterRate(sink.url, PARALLEL_CRS, PARALLEL_EVENTS_PER_CR);
    const bareParallel = await bareRate(sink.url, PARALLEL_CRS, PARALLEL_EVENTS_PER_CR);
    const serial = await emitterRate(sink.url, 1, SERIAL_EVENTS);
    const bareSerial = await bareRate(sink.url, 1, SERIAL_EVENTS);
    const rows = [
      { case: `${PARALLEL_CRS} CRs at once`, 'okt events/s': Math.round(parallel), 'bare POSTs/s': Math.round(bareParallel), ratio: +(parallel / bareParallel).toFixed(2) },
      { case: 'one CR (in order)', 'okt events/s': Math.round(serial), 'bare POSTs/s': Math.round(bareSerial), ratio: +(serial / bareSerial).toFixed(2) },
    ];
    console.table(rows);
    return {
      'events.per_s': Math.round(parallel),
      'events.bare_post_per_s': Math.round(bareParallel),
      'events.vs_bare_post_ratio': +(parallel / bareParallel).toFixed(3),
      'events.one_cr_per_s': Math.round(serial),
      'events.bare_post_serial_per_s': Math.round(bareSerial),
    };
  } finally {
    await sink.stop();
  }
}
