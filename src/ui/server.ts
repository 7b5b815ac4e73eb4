// The HTTP side of `okt ui`: the page, its script and style, a snapshot, and a Server-Sent Events
// stream of every change. Everything the page loads comes from here (its Content-Security-Policy
// allows nothing else).
import type { ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Fastify, { type FastifyReply } from 'fastify';
import { APP_CSS, APP_JS, PAGE_HTML } from './page.ts';
import type { UiMessage, UiState } from './state.ts';

export interface UiServerOptions {
  /** 0 picks a free port. */
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** Between comments that keep an idle stream open through proxies. Default 15 s. */
  keepAliveMs?: number;
}

export interface UiServer {
  /** http://HOST:PORT/ */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export async function startUiServer(state: UiState, options: UiServerOptions): Promise<UiServer> {
  const host = options.host ?? '127.0.0.1';
  const keepAliveMs = options.keepAliveMs ?? 15_000;
  const streams = new Set<ServerResponse>();
  const app = Fastify({ logger: false });

  app.addHook('onRequest', async (request, reply) => {
    // On loopback, a page of another site whose name resolves here (DNS rebinding) must not read the CRs.
    if (LOOPBACK.has(host)) {
      const name = hostName(request.headers.host ?? '');
      if (!LOOPBACK.has(name)) return reply.code(403).type('text/plain').send('okt ui: this address serves only localhost\n');
    }
    reply.headers(SECURITY_HEADERS);
  });

  const asset = (body: string, type: string) => async (_request: unknown, reply: FastifyReply) => reply.type(type).send(body);
  app.get('/', asset(PAGE_HTML, 'text/html; charset=utf-8'));
  app.get('/app.js', asset(APP_JS, 'text/javascript; charset=utf-8'));
  app.get('/app.css', asset(APP_CSS, 'text/css; charset=utf-8'));
  app.get('/favicon.ico', async (_request, reply) => reply.code(204).send());
  app.get('/healthz', async (_request, reply) => reply.type('text/plain').send('ok\n'));
  app.get('/api/snapshot', async () => state.snapshot());

  app.get('/api/stream', (request, reply) => {
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'content-type': 'text/event-stream; charset=utf-8',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    streams.add(res);
    const send = (type: string, data: unknown) => res.write(`event: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
    // The snapshot and the changes after it, in order: subscribe in the same turn as the snapshot.
    const unsubscribe = state.subscribe((message: UiMessage) => send(message.type, message));
    res.write('retry: 2000\n\n');
    send('snapshot', state.snapshot());
    const ping = setInterval(() => res.write(': ping\n\n'), keepAliveMs);
    const done = () => {
      clearInterval(ping);
      unsubscribe();
      streams.delete(res);
    };
    request.raw.on('close', done);
    res.on('close', done);
  });

  await app.listen({ port: options.port, host });
  const { port } = app.server.address() as AddressInfo;
  const shown = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}/`,
    port,
    async close() {
      for (const res of streams) res.end();
      await app.close();
    },
  };
}

/** `localhost:8080` -> `localhost`; `[::1]:8080` -> `[::1]`. */
function hostName(header: string): string {
  if (header.startsWith('[')) return header.slice(0, header.indexOf(']') + 1);
  const colon = header.lastIndexOf(':');
  return colon < 0 ? header : header.slice(0, colon);
}
