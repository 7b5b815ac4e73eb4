// Only a Secret made to be a sidecar token (type okt.dev/sidecar-token) is ever sent for a CR's
// spec.sidecar.tokenSecretRef: an ordinary Secret of the CR's namespace (a database password) is
// refused before its data is looked at, and the CR says what to do.
import fc from 'fast-check';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { classifySecretFailure, SECRET_RETRY_MS, SidecarSecretError, SidecarSecretTypeError } from '../../src/controller/lifecycle/error-policy.ts';
import { SidecarClients, sidecarTokenOf, type SecretObject } from '../../src/controller/lifecycle/sidecar-clients.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import { SIDECAR_TOKEN_SECRET_TYPE, type LifecycleSpec } from '../../src/kube/lifecycle-resource.ts';
import type { KubeTransport } from '../../src/kube/transport/index.ts';
import { SidecarProblemError } from '../../src/sidecar-client/index.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';

const ref = { namespace: 'tenant-a', name: 'db', key: 'token' };
const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
const secret = (type: string | undefined, data: Record<string, string>): SecretObject => ({
  metadata: { name: ref.name, namespace: ref.namespace },
  ...(type === undefined ? {} : { type }),
  data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, base64(v)])),
});

describe('sidecarTokenOf: the check of a Secret a CR names', () => {
  test('a Secret of type okt.dev/sidecar-token gives its token; without the key or empty, it says so', () => {
    expect(sidecarTokenOf(secret(SIDECAR_TOKEN_SECRET_TYPE, { token: ' tok-123 \n' }), ref)).toBe('tok-123');
    expect(() => sidecarTokenOf(secret(SIDECAR_TOKEN_SECRET_TYPE, { password: 'x' }), ref)).toThrow(new SidecarSecretError('Secret tenant-a/db has no key "token"'));
    expect(() => sidecarTokenOf(secret(SIDECAR_TOKEN_SECRET_TYPE, { token: ' ' }), ref)).toThrow(SidecarSecretError);
  });

  test.each([['Opaque'], [undefined], ['kubernetes.io/basic-auth'], ['okt.dev/sidecar-token-v2'], ['OKT.DEV/SIDECAR-TOKEN']])('a Secret of type %s is refused, naming its type', (type) => {
    expect(() => sidecarTokenOf(secret(type, { token: 'db-password' }), ref)).toThrow(new SidecarSecretTypeError('tenant-a', 'db', type ?? 'Opaque'));
  });

  test('property: a Secret of any other type is refused whatever it holds, and the refusal says nothing of its data', () => {
    fc.assert(
      fc.property(
        fc.option(fc.string({ minLength: 1 }), { nil: undefined }).filter((t) => t !== SIDECAR_TOKEN_SECRET_TYPE),
        fc.dictionary(fc.string({ minLength: 1 }), fc.string({ minLength: 8 })),
        (type, data) => {
          let thrown: unknown;
          try {
            sidecarTokenOf(secret(type, data), { ...ref, key: Object.keys(data)[0] ?? 'token' });
          } catch (error) {
            thrown = error;
          }
          expect(thrown).toBeInstanceOf(SidecarSecretTypeError);
          const refusal = classifySecretFailure(thrown, ref);
          for (const value of Object.values(data)) {
            expect((thrown as Error).message).not.toContain(value);
            if (refusal.kind === 'refused') expect(refusal.refusal.message).not.toContain(value);
          }
        },
      ),
    );
  });

  test('the refusal on the CR names its reason, the field and the fix, and is looked at again', () => {
    const refusal = classifySecretFailure(new SidecarSecretTypeError('tenant-a', 'db', 'Opaque'), ref);
    expect(refusal).toMatchObject({ kind: 'refused', refusal: { reason: 'SidecarSecretWrongType', retryAfterMs: SECRET_RETRY_MS } });
    const message = refusal.kind === 'refused' ? refusal.refusal.message : '';
    expect(message).toMatch(/^spec\.sidecar\.tokenSecretRef: Secret tenant-a\/db is of type "Opaque", not "okt\.dev\/sidecar-token"/);
    expect(message).toContain('make a Secret of type okt.dev/sidecar-token');
    expect(message).toContain('kubectl -n tenant-a create secret generic NAME --type=okt.dev/sidecar-token --from-literal=token=TOKEN');
  });
});

test('a CR an earlier okt ran with an Opaque Secret stalls on it with its status kept, and goes on once it names a sidecar-token Secret', () => {
  const sim = new LifecycleSim(databaseGraph, 'Running');
  sim.settle();
  const before = structuredClone(sim.status!);
  const refused = classifySecretFailure(new SidecarSecretTypeError('tenant-a', 'db', 'Opaque'), ref);
  if (refused.kind !== 'refused') throw new Error('expected a refusal');
  sim.sidecarRefusal = refused.refusal;
  expect(sim.reconcile().requeueAfterMs).toBe(SECRET_RETRY_MS);
  expect(findCondition(sim.status!.conditions ?? [], 'Stalled')).toMatchObject({ status: 'True', reason: 'SidecarSecretWrongType' });
  expect(sim.status).toMatchObject({ state: before.state, transition: before.transition, operation: before.operation, path: before.path });
  sim.sidecarRefusal = undefined;
  sim.settle();
  expect(sim.status).toMatchObject({ state: 'Running', transition: before.transition });
  expect(findCondition(sim.status!.conditions ?? [], 'Ready')?.status).toBe('True');
});

describe('SidecarClients with a CR naming a Secret', () => {
  /** A sidecar stand-in recording each Authorization header; answers 404 (no such operation). */
  let server: Server;
  let url: string;
  const seen: string[] = [];
  let clients: SidecarClients | undefined;
  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push(request.headers.authorization ?? '');
      response.writeHead(404, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ type: 'urn:okt:sidecar:unknown-operation', title: 'no', status: 404, detail: 'no such operation' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => new Promise<void>((resolve) => server.close(() => resolve())));
  afterEach(async () => {
    await clients?.close();
    clients = undefined;
    seen.length = 0;
  });

  /** The operator-wide token is `operator-token`; `allowed` is the operator's own sidecar URL. */
  async function resolveWith(stored: SecretObject, options: { allowed: boolean }) {
    // The transport as the operator uses it for Secrets: one get by name.
    const transport = { get: async () => stored } as unknown as KubeTransport;
    clients = new SidecarClients(transport, { token: 'operator-token', ...(options.allowed ? { url } : { url: 'http://operator-sidecar:1' }) });
    const spec: LifecycleSpec = { desiredState: 'Running', sidecar: { url, tokenSecretRef: { name: ref.name, key: ref.key } } };
    const resolved = await clients.forSpec(spec, ref.namespace);
    if (resolved.kind === 'client') await resolved.client.getOperation('uid-1').catch((error: unknown) => expect(error).toBeInstanceOf(SidecarProblemError));
    return resolved;
  }

  test('an Opaque Secret (a database password) is refused and nothing is sent; a sidecar-token Secret is sent', async () => {
    expect(await resolveWith(secret('Opaque', { token: 'db-password' }), { allowed: false })).toMatchObject({ kind: 'refused', refusal: { reason: 'SidecarSecretWrongType' } });
    expect(seen).toEqual([]);
    expect(await resolveWith(secret(SIDECAR_TOKEN_SECRET_TYPE, { token: 'tenant-token' }), { allowed: false })).toMatchObject({ kind: 'client' });
    expect(seen).toEqual(['Bearer tenant-token']);
  });

  test('a sidecar-token Secret holding the operator-wide token does not carry it past the allow-list', async () => {
    const copied = secret(SIDECAR_TOKEN_SECRET_TYPE, { token: 'operator-token' });
    const refused = await resolveWith(copied, { allowed: false });
    expect(refused).toMatchObject({ kind: 'refused', refusal: { reason: 'SidecarNotAllowed', retryAfterMs: SECRET_RETRY_MS } });
    expect(refused.kind === 'refused' && refused.refusal.message).toContain('holds the operator-wide token');
    expect(seen).toEqual([]);
    // To a URL the operator-wide token may go to anyway, it is sent.
    expect(await resolveWith(copied, { allowed: true })).toMatchObject({ kind: 'client' });
    expect(seen).toEqual(['Bearer operator-token']);
  });
});

describe('the sidecar URL of the graph\'s own Service', () => {
  const graphUrl = 'http://db.tenant-a.svc:8479';
  const noSecrets = { get: async () => { throw new Error('no Secret is read'); } } as unknown as KubeTransport;
  let clients: SidecarClients | undefined;
  afterEach(async () => clients?.close());

  test('a CR naming no URL gets the graph\'s Service, with the operator-wide token, though no pattern allows it', async () => {
    clients = new SidecarClients(noSecrets, { token: 'operator-token', url: 'http://operator-sidecar:1' });
    expect(await clients.forSpec({ desiredState: 'Running' }, 'tenant-a', graphUrl)).toMatchObject({ kind: 'client', url: 'http://db.tenant-a.svc:8479' });
  });

  test('a CR naming a URL of its own (the same host included) is judged by the allow-list, never by the graph\'s', async () => {
    clients = new SidecarClients(noSecrets, { token: 'operator-token' });
    for (const url of ['http://evil.example:8479', 'http://db.tenant-b.svc:8479']) {
      expect(await clients.forSpec({ desiredState: 'Running', sidecar: { url } }, 'tenant-a', graphUrl)).toMatchObject({ kind: 'refused', refusal: { reason: 'SidecarNotAllowed' } });
    }
  });

  test('without the graph\'s Service, --sidecar-url as before', async () => {
    clients = new SidecarClients(noSecrets, { token: 'operator-token', url: 'http://operator-sidecar:1' });
    expect(await clients.forSpec({ desiredState: 'Running' }, 'tenant-a')).toMatchObject({ kind: 'client', url: 'http://operator-sidecar:1' });
  });
});
