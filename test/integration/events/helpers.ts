// A scriptable CloudEvents sink on loopback (answers, hangs, drops connections, goes down and comes
// back on the same port) and small helpers for the emitter tests.
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { Writable } from 'node:stream';
import { pino, type Logger } from 'pino';
import { parseLifecycleEvent, type LifecycleEvent } from '../../../src/events/index.ts';

export interface SinkRequest {
  headers: IncomingHttpHeaders;
  body: string;
  /** The request parsed by the consumer helper (undefined when it is no valid lifecycle event). */
  event: LifecycleEvent | undefined;
  problem: string | undefined;
}

/** What the sink does with request number `n` (0-based): answer a status, never answer, or drop the connection. */
export type Behavior = (request: SinkRequest, n: number) => number | 'hang' | 'destroy' | Promise<number>;

export class TestSink {
  readonly requests: SinkRequest[] = [];
  /** Events the sink answered 2xx to, in the order it answered. */
  readonly accepted: LifecycleEvent[] = [];
  behave: Behavior = () => 202;
  inFlight = 0;
  maxInFlight = 0;
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();
  readonly #hanging = new Set<ServerResponse>();
  #port: number;

  private constructor(port: number) {
    this.#port = port;
  }

  static async start(): Promise<TestSink> {
    const sink = new TestSink(0);
    await sink.up();
    return sink;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}/`;
  }

  /** Listens (again) on the same port. */
  async up(): Promise<void> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => void this.#answer(req.headers, Buffer.concat(chunks).toString('utf8'), res));
    });
    server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(this.#port, '127.0.0.1', resolve));
    this.#port = (server.address() as AddressInfo).port;
    this.#server = server;
  }

  /** Stops listening and drops every connection: the sink is down. */
  async down(): Promise<void> {
    const server = this.#server;
    if (server === undefined) return;
    this.#server = undefined;
    for (const socket of this.#sockets) socket.destroy();
    this.#hanging.clear();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  acceptedSequences(uid: string): number[] {
    return this.accepted.filter((e) => e.partitionkey === uid).map((e) => Number(e.sequence));
  }

  async #answer(headers: IncomingHttpHeaders, body: string, res: ServerResponse): Promise<void> {
    let event: LifecycleEvent | undefined;
    let problem: string | undefined;
    try {
      event = parseLifecycleEvent(headers, body);
    } catch (error) {
      problem = (error as Error).message;
    }
    const request: SinkRequest = { headers, body, event, problem };
    const n = this.requests.push(request) - 1;
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    const action = problem === undefined ? await this.behave(request, n) : 400;
    if (action === 'hang') {
      this.#hanging.add(res);
      res.on('close', () => (this.inFlight -= 1));
      return;
    }
    this.inFlight -= 1;
    if (action === 'destroy') {
      res.socket?.destroy();
      return;
    }
    if (action >= 200 && action < 300 && event !== undefined) this.accepted.push(event);
    res.writeHead(action, { 'content-type': 'text/plain' }).end(action >= 300 ? (problem ?? `status ${action}`) : undefined);
  }
}

export async function waitFor(what: string, condition: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A pino logger whose lines the test can read. */
export function capturingLogger(): { logger: Logger; lines: Array<{ level: number; msg: string; [key: string]: unknown }> } {
  const lines: Array<{ level: number; msg: string }> = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) if (line.trim() !== '') lines.push(JSON.parse(line) as { level: number; msg: string });
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

/** Fast retries for tests. */
export const FAST = { timeoutMs: 2_000, backoff: { initialMs: 10, maxMs: 100 } } as const;
