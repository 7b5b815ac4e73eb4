// The operator-wide token file (okt run --sidecar-token-file) is read again after a 401 and after the
// max age, as a CR's Secret is; a file that is momentarily unreadable or empty keeps the last token.
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { createLogger } from '../../src/controller/logger.ts';
import { SECRET_TOKEN_MAX_AGE_MS, SidecarClients, type SidecarDefaults } from '../../src/controller/lifecycle/sidecar-clients.ts';
import type { KubeTransport } from '../../src/kube/transport/index.ts';
import { SidecarProblemError } from '../../src/sidecar-client/index.ts';

/** A sidecar stand-in: records each bearer token, answers 401 to any but `accepted`, and 404 (no such operation) to it. */
let server: Server;
let url: string;
let accepted = '';
const seen: string[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const token = (request.headers.authorization ?? '').replace(/^Bearer /, '');
    seen.push(token);
    const status = token === accepted ? 404 : 401;
    const problem = { type: `urn:okt:sidecar:${status === 401 ? 'unauthorized' : 'unknown-operation'}`, title: 'no', status, detail: status === 401 ? 'the bearer token is wrong' : 'no such operation' };
    response.writeHead(status, { 'content-type': 'application/problem+json' }).end(JSON.stringify(problem));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));

let dir: string;
let clients: SidecarClients | undefined;
afterEach(async () => {
  await clients?.close();
  clients = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});

function setup(defaults: (file: string) => SidecarDefaults, first = 'token-one-0123456789') {
  dir = mkdtempSync(path.join(tmpdir(), 'okt-token-file-'));
  const file = path.join(dir, 'token');
  writeFileSync(file, `${first}\n`);
  let now = 1_000_000;
  const warnings: string[] = [];
  const logger = createLogger({ destination: { write: (line: string) => void warnings.push(line) } });
  clients = new SidecarClients({} as KubeTransport, defaults(file), { now: () => now, logger });
  const live = clients;
  return {
    file,
    warnings,
    advance: (ms: number) => (now += ms),
    /** Resolves the CR's sidecar as the reconciler does, calls it once, and says which token it sent; a failure is handed back as the reconciler does. */
    async call(): Promise<string> {
      const resolved = await live.forSpec({ desiredState: 'Running' } as never, 'ns');
      if (resolved.kind !== 'client') throw new Error(`no client: ${resolved.kind}`);
      const before = seen.length;
      try {
        await resolved.client.getOperation('uid-1');
      } catch (error) {
        if (!(error instanceof SidecarProblemError)) throw error;
        live.forgetRefusedToken(resolved, error);
      }
      return seen[before]!;
    },
  };
}

describe('the operator-wide token file', () => {
  test('is read again at once after a 401, and after the max age without one', async () => {
    accepted = 'token-one-0123456789';
    const s = setup((tokenFile) => ({ url, tokenFile }));
    expect(await s.call()).toBe('token-one-0123456789');
    // Rotated, sidecar and file together: the cached token is sent once, refused, then the file is read again.
    writeFileSync(s.file, 'token-two-0123456789\n');
    accepted = 'token-two-0123456789';
    expect(await s.call()).toBe('token-one-0123456789');
    expect(await s.call()).toBe('token-two-0123456789');
    // Rotated again, no 401: the cache holds until the max age, then the file is read again.
    writeFileSync(s.file, 'token-three-0123456789');
    s.advance(SECRET_TOKEN_MAX_AGE_MS - 1);
    expect(await s.call()).toBe('token-two-0123456789');
    s.advance(1);
    accepted = 'token-three-0123456789';
    expect(await s.call()).toBe('token-three-0123456789');
    expect(s.warnings).toEqual([]);
  });

  test('empty or missing (the kubelet swapping its symlink): the last token is kept, with a warning naming the file', async () => {
    accepted = 'token-one-0123456789';
    const s = setup((tokenFile) => ({ url, tokenFile }));
    expect(await s.call()).toBe('token-one-0123456789');
    writeFileSync(s.file, ' \n');
    s.advance(SECRET_TOKEN_MAX_AGE_MS);
    expect(await s.call()).toBe('token-one-0123456789');
    expect(s.warnings).toHaveLength(1);
    expect(JSON.parse(s.warnings[0]!)).toMatchObject({ level: 'warn', file: s.file, msg: expect.stringContaining(`${s.file} is empty`) });
    // The failed read counts as a read: not tried again (nor warned about) at every look.
    expect(await s.call()).toBe('token-one-0123456789');
    expect(s.warnings).toHaveLength(1);
    unlinkSync(s.file);
    accepted = 'token-two-0123456789';
    expect(await s.call()).toBe('token-one-0123456789'); // refused: read again next time
    expect(await s.call()).toBe('token-one-0123456789'); // the file is missing: still the last token
    expect(s.warnings).toHaveLength(2);
    expect(JSON.parse(s.warnings[1]!).msg).toContain(`cannot read the sidecar token file ${s.file}`);
    writeFileSync(s.file, 'token-two-0123456789'); // refused once more above: read again now
    expect(await s.call()).toBe('token-two-0123456789');
  });

  test('unreadable or empty at start: the operator does not start', () => {
    dir = mkdtempSync(path.join(tmpdir(), 'okt-token-file-'));
    const missing = path.join(dir, 'missing');
    expect(() => new SidecarClients({} as KubeTransport, { url, tokenFile: missing })).toThrow(`cannot read the sidecar token file ${missing}`);
    const empty = path.join(dir, 'empty');
    writeFileSync(empty, '\n');
    expect(() => new SidecarClients({} as KubeTransport, { url, tokenFile: empty })).toThrow(`the sidecar token file ${empty} is empty`);
    expect(() => new SidecarClients({} as KubeTransport, { url, token: 't', tokenFile: empty })).toThrow('not both');
  });

  test('a fixed token (startOperator({ sidecar: { token } })) stays as it is after a 401', async () => {
    accepted = 'fixed-token-0123456789';
    const s = setup(() => ({ url, token: 'fixed-token-0123456789' }));
    expect(await s.call()).toBe('fixed-token-0123456789');
    accepted = 'other';
    expect(await s.call()).toBe('fixed-token-0123456789');
    s.advance(SECRET_TOKEN_MAX_AGE_MS);
    expect(await s.call()).toBe('fixed-token-0123456789');
  });
});
