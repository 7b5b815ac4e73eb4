// A minimal CloudEvents sink for lifecycle events (used by `okt events tail` and the tests): 202 when taken,
// 400 with a problem body naming the field for anything else, 500 when onEvent fails (the sender retries).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { answerClientError } from '../net/client-error.ts';
import { parseLifecycleEvent, type LifecycleEvent } from './consumer.ts';
import { LifecycleEventError } from './errors.ts';

export interface LifecycleEventReceiverOptions {
  /** 0 (default) picks a free port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  onEvent: (event: LifecycleEvent) => void | Promise<void>;
  /** Answer 202 without calling onEvent for a source + id seen among the last `dedupe` events (default 0: off). */
  dedupe?: number;
}

export interface LifecycleEventReceiver {
  /** The sink URL to give the emitter (K_SINK, --sink or spec.eventSink). */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const BODY_LIMIT = 1024 * 1024;

export async function createLifecycleEventReceiver(options: LifecycleEventReceiverOptions): Promise<LifecycleEventReceiver> {
  const seen = new RecentKeys(options.dedupe ?? 0);
  const server = createServer((req, res) => {
    handle(req, res, options.onEvent, seen).catch((error: unknown) => {
      if (res.headersSent) res.destroy();
      else problem(res, 500, 'Internal Server Error', (error as Error).message);
    });
  });
  server.on('clientError', (error, socket) => answerClientError(error, socket, 'about:blank'));
  const host = options.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}/`,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, onEvent: LifecycleEventReceiverOptions['onEvent'], seen: RecentKeys): Promise<void> {
  if (req.method !== 'POST') {
    problem(res, 405, 'Method Not Allowed', `${req.method ?? ''} is not POST`, undefined, { allow: 'POST' });
    return;
  }
  const body = await readBody(req);
  if (body === undefined) {
    problem(res, 413, 'Content Too Large', `the body exceeds ${BODY_LIMIT} bytes`);
    return;
  }
  let event: LifecycleEvent;
  try {
    event = parseLifecycleEvent(req.headers, body);
  } catch (error) {
    if (!(error instanceof LifecycleEventError)) throw error; // a bug of ours: a 500, so that the sender retries
    problem(res, 400, 'Bad Request', error.message, error.field);
    return;
  }
  const key = `${event.source}\n${event.id}`;
  if (!seen.has(key)) {
    try {
      await onEvent(event);
    } catch (error) {
      problem(res, 500, 'Internal Server Error', `the consumer failed: ${(error as Error).message}`);
      return;
    }
    seen.add(key);
  }
  res.writeHead(202).end();
}

async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > BODY_LIMIT) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

function problem(res: ServerResponse, status: number, title: string, detail: string, field?: string, headers: Record<string, string> = {}): void {
  const body = JSON.stringify({ type: 'about:blank', title, status, detail, ...(field === undefined ? {} : { field }) });
  res.writeHead(status, { ...headers, 'content-type': 'application/problem+json' }).end(body);
}

/** The last `capacity` keys, oldest forgotten first. */
class RecentKeys {
  readonly #capacity: number;
  readonly #keys = new Set<string>();

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  add(key: string): void {
    if (this.#capacity === 0) return;
    this.#keys.add(key);
    if (this.#keys.size > this.#capacity) this.#keys.delete(this.#keys.values().next().value!);
  }
}
