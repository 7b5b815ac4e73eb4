import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isWatchIdle, KubeTransport, WatchIdleError, type WatchEvent } from '../../src/kube/transport/index.ts';

// A real HTTP server in the API server's place, whose watch answer each test chooses by namespace.
const open: ServerResponse[] = [];
const server = createServer((req: IncomingMessage, res: ServerResponse) => {
  open.push(res);
  const namespace = /\/namespaces\/([^/]+)\//.exec(req.url ?? '')?.[1];
  const event = (name: string) => `${JSON.stringify({ type: 'ADDED', object: { metadata: { name, resourceVersion: '7' } } })}\n`;
  if (namespace === 'silent-after-one') {
    // One event, then nothing, the response left open: a connection that died without a reset.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(event('only'));
  } else if (namespace === 'trickle') {
    // Blank lines only, every 200 ms for 1.5 s, then the end: bytes but no event.
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write(event('first'));
    const beat = setInterval(() => res.write('\n'), 200);
    setTimeout(() => {
      clearInterval(beat);
      res.end(event('last'));
    }, 1500);
  }
  // Any other namespace: no answer at all, not even headers.
});
const GADGETS = { group: 'okt.dev', version: 'v1', plural: 'gadgets' };
let transport: KubeTransport;

beforeAll(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  // A request timeout far beyond the idle timeouts below: only the idle timeout can end these watches.
  transport = new KubeTransport({ origin: `http://127.0.0.1:${port}`, pathPrefix: '', tls: {}, headers: {} }, { requestTimeoutMs: 60_000 });
});
afterAll(async () => {
  for (const res of open) res.destroy();
  await transport.close();
  await new Promise((resolve) => server.close(resolve));
});

async function drain(namespace: string, idleTimeoutMs: number): Promise<{ names: string[]; error: unknown; elapsedMs: number }> {
  const names: string[] = [];
  const started = performance.now();
  try {
    for await (const event of transport.watch(GADGETS, { namespace, idleTimeoutMs }) as AsyncGenerator<WatchEvent>) names.push(event.object.metadata.name as string);
  } catch (error) {
    return { names, error, elapsedMs: performance.now() - started };
  }
  return { names, error: undefined, elapsedMs: performance.now() - started };
}

describe('KubeTransport.watch with idleTimeoutMs', () => {
  it('fails a stream that goes silent with a WatchIdleError, after the events it did bring', async () => {
    const { names, error, elapsedMs } = await drain('silent-after-one', 1000);
    expect(names).toEqual(['only']);
    expect(isWatchIdle(error)).toBe(true);
    expect((error as WatchIdleError).idleMs).toBe(1000);
    expect(elapsedMs).toBeGreaterThanOrEqual(950);
    expect(elapsedMs).toBeLessThan(10_000);
  });

  it('fails a watch whose headers never come within the idle timeout, not the request timeout', async () => {
    const { names, error, elapsedMs } = await drain('no-answer', 1000);
    expect(names).toEqual([]);
    expect(isWatchIdle(error)).toBe(true);
    expect(elapsedMs).toBeLessThan(10_000);
  });

  it('counts any byte as a sign of life: blank lines keep a stream without events open past the idle timeout', async () => {
    const { names, error, elapsedMs } = await drain('trickle', 600);
    expect(error).toBeUndefined();
    expect(names).toEqual(['first', 'last']);
    expect(elapsedMs).toBeGreaterThanOrEqual(1400);
  });
});
