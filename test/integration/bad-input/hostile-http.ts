// Hostile HTTP for the bad-input suites: raw-socket requests (framing undici refuses to send), the
// generators both servers are fed, the check every answer must pass, and the per-category counts.
import { connect } from 'node:net';
import fc from 'fast-check';
import { expect } from 'vitest';
import { fcRuns } from '../../fixtures/fast-check.ts';

/** How many inputs each category tried; printed in afterAll so the lead can report them. */
export class InputCounts {
  readonly #counts = new Map<string, number>();
  readonly #suite: string;

  constructor(suite: string) {
    this.#suite = suite;
  }

  add(category: string, n = 1): void {
    this.#counts.set(category, (this.#counts.get(category) ?? 0) + n);
  }

  get(category: string): number {
    return this.#counts.get(category) ?? 0;
  }

  print(): void {
    const total = [...this.#counts.values()].reduce((a, b) => a + b, 0);
    const lines = [...this.#counts].map(([category, n]) => `  ${category}: ${n}`);
    console.log(`bad-input counts (${this.#suite}), ${total} inputs:\n${lines.join('\n')}`);
  }
}

export interface RawAnswer {
  /** undefined: the server sent nothing before it closed or the time ran out. */
  status?: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * Writes `chunks` to a fresh TCP connection (pausing `pauseMs` between them), then reads until the
 * server closes or `timeoutMs` passes, and parses the first answer. Bounded in time, always.
 */
export function rawExchange(port: number, chunks: readonly (string | Uint8Array)[], options: { timeoutMs?: number; pauseMs?: number; endAfterWrite?: boolean } = {}): Promise<RawAnswer> {
  const timeoutMs = options.timeoutMs ?? 2_000;
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(parseRawAnswer(Buffer.concat(received)));
    };
    const timer = setTimeout(finish, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      if (complete(Buffer.concat(received))) finish();
    });
    socket.on('close', finish);
    socket.on('error', finish);
    socket.once('connect', async () => {
      for (const [i, chunk] of chunks.entries()) {
        if (socket.destroyed) return;
        if (i > 0 && options.pauseMs) await new Promise((r) => setTimeout(r, options.pauseMs));
        if (!socket.destroyed) socket.write(chunk);
      }
      if (options.endAfterWrite && !socket.destroyed) socket.end();
    });
  });
}

/** A whole answer has arrived (headers plus content-length bytes, or the last chunk). */
function complete(buffer: Buffer): boolean {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return false;
  const head = buffer.subarray(0, end).toString('latin1');
  const length = /\r\ncontent-length:\s*(\d+)/i.exec(head);
  if (length) return buffer.length - end - 4 >= Number(length[1]);
  if (/\r\ntransfer-encoding:\s*chunked/i.test(head)) return buffer.includes('\r\n0\r\n\r\n', end);
  return false;
}

export function parseRawAnswer(buffer: Buffer): RawAnswer {
  const end = buffer.indexOf('\r\n\r\n');
  if (buffer.length === 0 || end < 0) return { headers: {}, body: '' };
  const [statusLine = '', ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = buffer.subarray(end + 4);
  if (headers['content-length'] !== undefined) body = body.subarray(0, Number(headers['content-length']));
  else if (headers['transfer-encoding'] === 'chunked') body = dechunk(body);
  return { ...(status ? { status: Number(status[1]) } : {}), headers, body: body.toString('utf8') };
}

function dechunk(buffer: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const line = buffer.indexOf('\r\n', at);
    if (line < 0) break;
    const size = Number.parseInt(buffer.subarray(at, line).toString('latin1'), 16);
    if (!(size > 0)) break;
    parts.push(buffer.subarray(line + 2, line + 2 + size));
    at = line + 2 + size + 2;
  }
  return Buffer.concat(parts);
}

/** Text that would betray a stack trace or an internal path. */
const STACK = /\bat .*\.(ts|js):\d+|node:internal|\n\s+at \S/;

/**
 * The answer to a hostile request: a 4xx/5xx whose body is an RFC 9457 problem (JSON, status
 * matching the answer's) and carries no stack trace. Returns the problem.
 */
export function expectProblemAnswer(answer: { status?: number; headers: Record<string, unknown>; body: string }, label: string): Record<string, unknown> {
  const where = `${label}: answered ${answer.status} ${JSON.stringify(answer.body.slice(0, 300))}`;
  expect(answer.status, where).toBeGreaterThanOrEqual(400);
  expect(answer.status, where).toBeLessThan(600);
  expect(String(answer.headers['content-type']), where).toMatch(/^application\/problem\+json/);
  expect(answer.body, where).not.toMatch(STACK);
  const problem = JSON.parse(answer.body) as Record<string, unknown>;
  expect(problem, where).toMatchObject({ status: answer.status, title: expect.any(String), detail: expect.any(String) });
  return problem;
}

// --- generators ---------------------------------------------------------------------------------

/** Methods undici can send (not CONNECT) other than HEAD, whose answers carry no body to check. */
export const arbMethod = fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE', 'PROPFIND', 'FROB');

/** A URL path: traversal, encodings, huge, query strings, and plain junk. */
export const arbPath = fc.oneof(
  fc.webPath(),
  fc.webSegment().map((s) => `/${s}`),
  fc.constantFrom('/', '//', '/..', '/../../etc/passwd', '/%00', '/%zz', '/%ff%fe', '/?a=%', '/*', '/v1', '/v1/', '/v1/operations', '/v1/operations/', '/v1/operations/%2e%2e', '/v1/operations/x/y/z', '/v1/observation?since=-1', '/v1/observation?graph[]=a', '/v1/operations/a?wait=1e999'),
  fc.string({ maxLength: 40 }).map((s) => `/${encodeURIComponent(s)}`),
  fc.nat({ max: 8_000 }).map((n) => `/${'a'.repeat(n)}`),
);

const HEADER_NAMES = ['content-type', 'content-encoding', 'accept', 'authorization', 'x-forwarded-for', 'cookie', 'range', 'te', 'accept-encoding', 'ce-specversion', 'ce-type', 'ce-id'];
/** Header names and values undici accepts (tokens, visible ASCII). */
export const arbHeaders = fc.dictionary(
  fc.oneof(fc.constantFrom(...HEADER_NAMES), fc.stringMatching(/^[a-z][a-z0-9-]{0,30}$/)),
  fc.oneof(
    fc.constantFrom('', 'application/json', 'application/json; charset=latin1', 'application/problem+json', 'text/plain', 'multipart/form-data; boundary=x', 'gzip', 'br', '100-continue', 'bytes=0-1', '*/*', 'Bearer', 'Basic Zm9vOmJhcg=='),
    fc.stringMatching(/^[\x21-\x7e]{0,200}$/),
  ),
  { maxKeys: 6 },
// undici frames the request itself: these it refuses or sets.
).filter((h) => !['content-length', 'transfer-encoding', 'host', 'connection', 'upgrade', 'keep-alive', 'expect'].some((name) => name in h));

/** JSON nested `depth` deep: arrays or objects. */
export function deepJson(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array' ? `${'['.repeat(depth)}${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** Bodies: binary, invalid UTF-8, huge, deeply nested JSON, random JSON and text, empty. */
export const arbBody = fc.oneof(
  fc.constant(undefined),
  fc.uint8Array({ maxLength: 512 }).map((b) => Buffer.from(b)),
  fc.constantFrom(Buffer.from([0xff, 0xfe, 0xfd]), Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0x22, 0x3a, 0x31, 0x7d]), Buffer.from('{"node":"\ud800"}')),
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? 'null'),
  fc.string({ maxLength: 200 }),
  fc.record({ depth: fc.integer({ min: 1_000, max: 50_000 }), kind: fc.constantFrom('array' as const, 'object' as const) }).map(({ depth, kind }) => deepJson(depth, kind)),
  fc.integer({ min: 64 * 1024, max: 2 * 1024 * 1024 }).map((n) => 'x'.repeat(n)),
);

/** Requests at the HTTP framing level, which only a raw socket can send. */
export const arbRawRequest = fc.oneof(
  fc.uint8Array({ minLength: 1, maxLength: 300 }).map((b) => [Buffer.from(b)]),
  fc.string({ maxLength: 100 }).map((s) => [`${s}\r\n\r\n`]),
  fc.tuple(fc.stringMatching(/^[A-Z]{1,10}$/), fc.string({ maxLength: 60 })).map(([method, target]) => [`${method} ${target} HTTP/1.1\r\nHost: x\r\n\r\n`]),
  fc.string({ maxLength: 60 }).map((junk) => [`GET / HTTP/1.1\r\nHost: x\r\n${junk}\r\n\r\n`]),
  fc.constantFrom(
    ['GET / HTTP/1.1\r\nHost: x\r\nBad Header: x\r\n\r\n'],
    ['GET / HTTP/1.1\r\nHost: x\r\nX: a\x00b\r\n\r\n'],
    ['GET / HTTP/9.9\r\nHost: x\r\n\r\n'],
    ['GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n'],
    ['POST / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n'],
    ['POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab'],
    [`GET / HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(40_000)}\r\n\r\n`],
    [`GET / HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 3_000 }, (_, i) => `X-${i}: ${i}\r\n`).join('')}\r\n`],
    [`GET /${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`],
  ),
);

/** Broken framing on raw sockets to `port`: each answer, when one comes, is a 4xx problem (a closed connection is fine too). */
export async function assertRawFramingRefused(port: number, counts: InputCounts, numRuns = 120): Promise<void> {
  await fc.assert(
    fc.asyncProperty(arbRawRequest, async (chunks) => {
      counts.add('raw: broken framing');
      const answer = await rawExchange(port, chunks, { timeoutMs: 1_000 });
      if (answer.status !== undefined) expectProblemAnswer(answer, JSON.stringify(chunks.map(String)).slice(0, 200));
    }),
    { numRuns: fcRuns(numRuns) },
  );
}
