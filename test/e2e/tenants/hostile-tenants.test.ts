// Hostile tenants against one `okt run` (a real child process) and the real API server. Every CR author
// is a tenant: here they point spec.sidecar.url at a recorder on loopback (which records every request's
// Authorization header and answers garbage, 10 MB bodies, wrong content types, 401s), name Secrets that
// exist only in other namespaces or ordinary Secrets of their own (a database password, not made to be
// a sidecar token), and create and delete CRs in bursts across namespaces. Invariants: the recorder
// never sees the operator-wide token, nor any token but its own namespace's sidecar-token Secret, nor
// any database password; a URL outside the allow-list without a Secret gets nothing at all; a victim
// CR in another namespace keeps its status; the operator stays up (same process, /healthz answers);
// each hostile CR gets a condition naming the cause. fast-check chooses the hostile CRs; counts per category are printed at the end.
import { CoreV1Api } from '@kubernetes/client-node';
import fc from 'fast-check';
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { InputCounts } from '../../integration/bad-input/hostile-http.ts';
import { SIDECAR_TOKEN_SECRET_TYPE } from '../../../src/kube/lifecycle-resource.ts';
import { freePort } from '../../../src/net/free-ports.ts';
import { createNamespace, e2eKubeConfig, expectHttpError, httpStatusOf, kubectl, mergePatch, waitFor } from '../helpers/index.ts';
import { conditionOf, databases, installDatabaseCrd, startNoopSidecar, waitForDatabase, waitForGone, type DatabaseObject } from '../helpers/lifecycle.ts';
import { killHard, spawnOperator } from '../helpers/operator-process.ts';
import { fcRuns } from '../../fixtures/fast-check.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
const core = kc.makeApiClient(CoreV1Api);
const counts = new InputCounts('hostile tenants against one operator');
// Only this file's CRs: other e2e files run their own operators on the same API server.
const SUITE_LABEL = { 'okt.dev/e2e-suite': 'hostile-tenants' };
const OPERATOR_TOKEN = `operator-wide-${randomBytes(16).toString('hex')}`;
const TEN_MB = 10 * 1024 * 1024;

let victimNs: string;
let tenants: string[];
/** Tokens of the Secret `tenant-token` per namespace, and of `elsewhere-only` (in tenants[0] only). */
const tenantTokens = new Map<string, string>();
/** The Opaque Secret `db-password` per namespace (its password under the key `token` too): never to be sent. */
const dbPasswords = new Map<string, string>();
let elsewhereToken: string;
let ownSidecar: Awaited<ReturnType<typeof startNoopSidecar>>;
let allowedSidecar: Awaited<ReturnType<typeof startNoopSidecar>>;
let recorder: Recorder;
let operator: ReturnType<typeof spawnOperator>;
let healthPort: number;
let victimBefore: DatabaseObject;
let serial = 0;

// --- the recorder --------------------------------------------------------------------------------

/** How the recorder answers a sidecar URL `/t/<namespace>/<mode>/<case>`, and what the CR must then say. */
const MODES = {
  garbage: { cause: /not JSON|does not match the protocol|content-type/ },
  'huge-declared': { cause: /exceeds the limit/ },
  'huge-chunked': { cause: /exceeds the limit/ },
  html: { cause: /content-type text\/html/ },
  'wrong-shape': { cause: /does not match the protocol/ },
  unauthorized: { cause: /401/ },
} as const;
type Mode = keyof typeof MODES;

interface Recorded {
  path: string;
  namespace: string;
  case: string;
  authorization: string | undefined;
}

interface Recorder {
  url: string;
  requests: Recorded[];
  close(): Promise<void>;
}

async function startRecorder(garbage: Buffer): Promise<Recorder> {
  const requests: Recorded[] = [];
  const huge = Buffer.alloc(TEN_MB, 0x20);
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const [, , namespace = '', mode = '', id = ''] = (req.url ?? '').split('/');
    requests.push({ path: req.url ?? '', namespace, case: id, authorization: req.headers.authorization });
    req.resume();
    res.on('error', () => {});
    switch (mode as Mode) {
      case 'huge-declared':
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': TEN_MB });
        res.end(huge);
        return;
      case 'huge-chunked':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(huge);
        return;
      case 'html':
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body>not a sidecar</body></html>');
        return;
      case 'wrong-shape':
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ epoch: 5, events: 'none', lastSeq: -1 }));
        return;
      case 'unauthorized':
        res.writeHead(401, { 'content-type': 'application/problem+json' });
        res.end(JSON.stringify({ type: 'urn:okt:sidecar:unauthorized', title: 'Unauthorized', status: 401, detail: 'bad token' }));
        return;
      default:
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(garbage);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

// --- setup ---------------------------------------------------------------------------------------


/** A Secret made to be a sidecar token (type okt.dev/sidecar-token), or of another type (`Opaque`). */
async function createSecret(namespace: string, name: string, data: Record<string, string>, type: string = SIDECAR_TOKEN_SECRET_TYPE): Promise<void> {
  await core.createNamespacedSecret({ namespace, body: { metadata: { name }, type, stringData: data } });
}

beforeAll(async () => {
  await installDatabaseCrd(kc);
  victimNs = await createNamespace(kc, 'okt-victim');
  tenants = await Promise.all([0, 1, 2].map(() => createNamespace(kc, 'okt-tenant')));
  for (const ns of tenants) {
    const token = `tenant-${ns}-${randomBytes(8).toString('hex')}`;
    tenantTokens.set(ns, token);
    await createSecret(ns, 'tenant-token', { token });
    await createSecret(ns, 'wrong-key', { password: `not-the-token-${ns}` });
    const password = `db-password-${ns}-${randomBytes(8).toString('hex')}`;
    dbPasswords.set(ns, password);
    await createSecret(ns, 'db-password', { token: password, password }, 'Opaque');
  }
  elsewhereToken = `elsewhere-${randomBytes(8).toString('hex')}`;
  await createSecret(tenants[0]!, 'elsewhere-only', { token: elsewhereToken });
  // The victim's namespace holds a Secret too: no hostile CR may make the operator send it.
  await createSecret(victimNs, 'tenant-token', { token: `victim-${randomBytes(8).toString('hex')}` });
  ownSidecar = await startNoopSidecar({ token: OPERATOR_TOKEN, maxActiveOperations: 64 });
  allowedSidecar = await startNoopSidecar({ token: OPERATOR_TOKEN, maxActiveOperations: 64 });
  recorder = await startRecorder(Buffer.from(fc.sample(fc.uint8Array({ minLength: 1, maxLength: 4096 }), 1)[0]!));
  healthPort = await freePort();
  operator = spawnOperator({
    sidecarUrl: ownSidecar.url,
    token: OPERATOR_TOKEN,
    extra: ['--sidecar-url-allow', allowedSidecar.url, '--label-selector', 'okt.dev/e2e-suite=hostile-tenants', '--health-port', String(healthPort), '--health-host', '127.0.0.1', '--workers', '8'],
  });
  await waitFor('the operator answers /healthz', async () => ((await fetch(`http://127.0.0.1:${healthPort}/healthz`).catch(() => undefined))?.ok ? true : undefined), 30_000);
  await api.create(victimNs, 'victim', { desiredState: 'Running', onLeaf: 'Keep' }, SUITE_LABEL);
  victimBefore = await waitForDatabase(kc, victimNs, 'victim', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
});

afterAll(async () => {
  counts.print();
  if (operator) await killHard(operator);
  await recorder?.close();
  await ownSidecar?.close();
  await allowedSidecar?.close();
});

function requestsOf(namespace: string, id: string): Recorded[] {
  return recorder.requests.filter((r) => r.namespace === namespace && r.case === id);
}

// --- hostile CRs ---------------------------------------------------------------------------------

type SecretChoice = 'none' | 'own' | 'elsewhere-only' | 'wrong-key' | 'ordinary';

interface HostileCase {
  tenant: number;
  mode: Mode;
  /** How the recorder's URL is written: plain, or dressed up to look like the operator's own sidecar. */
  disguise: 'plain' | 'userinfo' | 'upper-case' | 'dot-segments';
  secret: SecretChoice;
  desiredState: 'Running' | 'Servicing';
}

const arbCase: fc.Arbitrary<HostileCase> = fc.record({
  tenant: fc.integer({ min: 0, max: 2 }),
  mode: fc.constantFrom(...(Object.keys(MODES) as Mode[])),
  disguise: fc.constantFrom('plain', 'userinfo', 'upper-case', 'dot-segments'),
  secret: fc.constantFrom<SecretChoice>('none', 'own', 'elsewhere-only', 'wrong-key', 'ordinary'),
  desiredState: fc.constantFrom('Running', 'Servicing'),
});

function hostileUrl(c: HostileCase, namespace: string, id: string): string {
  const path = `/t/${namespace}/${c.mode}/${id}`;
  const recorderHostPort = recorder.url.slice('http://'.length);
  switch (c.disguise) {
    // The operator's own sidecar as user info: the host is the recorder's.
    case 'userinfo': return `http://${ownSidecar.url.slice('http://'.length)}@${recorderHostPort}${path}`;
    case 'upper-case': return `HTTP://${recorderHostPort}${path}`;
    case 'dot-segments': return `${recorder.url}/x/..${path}`;
    default: return `${recorder.url}${path}`;
  }
}

function specOf(c: HostileCase, url: string): Record<string, unknown> {
  const sidecar: Record<string, unknown> = { url };
  if (c.secret === 'own') sidecar.tokenSecretRef = { name: 'tenant-token', key: 'token' };
  if (c.secret === 'elsewhere-only') sidecar.tokenSecretRef = { name: 'elsewhere-only', key: 'token' };
  if (c.secret === 'wrong-key') sidecar.tokenSecretRef = { name: 'wrong-key', key: 'token' };
  if (c.secret === 'ordinary') sidecar.tokenSecretRef = { name: 'db-password', key: 'token' };
  return { desiredState: c.desiredState, onLeaf: 'Keep', sidecar };
}

/** What the operator must make of one hostile CR; returns the category it fell in. */
async function expectHandled(c: HostileCase, namespace: string, name: string, id: string): Promise<string> {
  const label = `${namespace}/${name} ${JSON.stringify(c)}`;
  if (c.secret === 'none') {
    const db = await waitForDatabase(kc, namespace, name, 'Stalled SidecarNotAllowed', (o) => conditionOf(o, 'Stalled')?.reason === 'SidecarNotAllowed');
    expect(conditionOf(db, 'Stalled')?.message, label).toContain('spec.sidecar.tokenSecretRef');
    expect(conditionOf(db, 'Ready')?.status, label).toBe('False');
    expect(db.status?.state, label).toBe('Start');
    expect(db.metadata.finalizers ?? [], `${label}: no finalizer while refused`).toEqual([]);
    expect(requestsOf(namespace, id), `${label}: nothing sent to a URL outside the allow-list`).toEqual([]);
    return 'foreign URL without a Secret: SidecarNotAllowed, nothing sent';
  }
  if (c.secret === 'elsewhere-only' && namespace !== tenants[0]) {
    const db = await waitForDatabase(kc, namespace, name, 'Stalled SidecarSecretUnreadable', (o) => conditionOf(o, 'Stalled')?.reason === 'SidecarSecretUnreadable');
    expect(conditionOf(db, 'Stalled')?.message, label).toContain(`${namespace}/elsewhere-only does not exist`);
    expect(requestsOf(namespace, id), `${label}: nothing sent`).toEqual([]);
    return 'Secret only in another namespace: SidecarSecretUnreadable, nothing sent';
  }
  if (c.secret === 'wrong-key') {
    const db = await waitForDatabase(kc, namespace, name, 'Stalled SidecarSecretUnreadable', (o) => conditionOf(o, 'Stalled')?.reason === 'SidecarSecretUnreadable');
    expect(conditionOf(db, 'Stalled')?.message, label).toContain('has no key "token"');
    expect(requestsOf(namespace, id), `${label}: nothing sent`).toEqual([]);
    return 'Secret without the key: SidecarSecretUnreadable, nothing sent';
  }
  if (c.secret === 'ordinary') {
    const db = await waitForDatabase(kc, namespace, name, 'Stalled SidecarSecretWrongType', (o) => conditionOf(o, 'Stalled')?.reason === 'SidecarSecretWrongType');
    expect(conditionOf(db, 'Stalled')?.message, label).toContain(`spec.sidecar.tokenSecretRef: Secret ${namespace}/db-password is of type "Opaque"`);
    expect(conditionOf(db, 'Stalled')?.message, label).toContain(`make a Secret of type ${SIDECAR_TOKEN_SECRET_TYPE}`);
    expect(requestsOf(namespace, id), `${label}: nothing sent`).toEqual([]);
    return 'ordinary (Opaque) Secret: SidecarSecretWrongType, nothing sent';
  }
  // Its own Secret (tenant-token, or elsewhere-only where it really lives): the recorder gets that
  // token only, and the CR says what is wrong with the answers.
  const expectedToken = c.secret === 'own' ? tenantTokens.get(namespace)! : elsewhereToken;
  // A 4xx or an answer that breaks the protocol is a refusal a person must look at: Stalled, naming the cause.
  const db = await waitForDatabase(kc, namespace, name, `SidecarRefused naming ${MODES[c.mode].cause}`, (o) => {
    const ready = conditionOf(o, 'Ready');
    return ready?.reason === 'SidecarRefused' && MODES[c.mode].cause.test(ready.message);
  });
  expect(conditionOf(db, 'Stalled')?.status, label).toBe('True');
  expect(db.status?.state, `${label}: no transition into an action without a sidecar`).toBe('Start');
  const seen = requestsOf(namespace, id);
  expect(seen.length, `${label}: the recorder was asked`).toBeGreaterThan(0);
  for (const request of seen) expect(request.authorization, label).toBe(`Bearer ${expectedToken}`);
  return `own Secret, recorder answering ${c.mode}: SidecarRefused naming the cause`;
}

describe('hostile tenants', () => {
  test('a URL on the allow-list gets the operator-wide token without a Secret and converges', async () => {
    const ns = tenants[1]!;
    await api.create(ns, 'allowed', { desiredState: 'Running', onLeaf: 'Keep', sidecar: { url: allowedSidecar.url } }, SUITE_LABEL);
    await waitForDatabase(kc, ns, 'allowed', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
    counts.add('allow-listed URL without a Secret: converged');
  });

  test('fast-check hostile CRs: each gets a condition naming the cause; the recorder sees only its own namespace\'s token', async () => {
    await fc.assert(
      // Every answer mode at least once per run, then more of any.
      fc.asyncProperty(fc.tuple(fc.tuple(...(Object.keys(MODES) as Mode[]).map((mode) => arbCase.map((c) => ({ ...c, mode })))), fc.array(arbCase, { minLength: 12, maxLength: 12 })).map(([each, more]) => [...each, ...more]), async (cases) => {
        await Promise.all(cases.map(async (c) => {
          const id = String((serial += 1));
          const namespace = tenants[c.tenant]!;
          const name = `hostile-${id}`;
          counts.add('hostile CRs created');
          const created = api.create(namespace, name, specOf(c, hostileUrl(c, namespace, id)), SUITE_LABEL);
          if (c.disguise === 'userinfo') {
            // The CRD's pattern takes no user info: refused at the door (the operator refuses it too, in a CR stored before).
            expect((await expectHttpError(created)).message).toContain('spec.sidecar.url');
            expect(requestsOf(namespace, id)).toEqual([]);
            counts.add('URL with user info: refused by the API server naming spec.sidecar.url, nothing sent');
            return;
          }
          await created;
          counts.add(await expectHandled(c, namespace, name, id));
          if (c.disguise !== 'plain') counts.add(`URL disguised (${c.disguise}): judged by its real host`);
        }));
      }),
      { numRuns: fcRuns(3), endOnFailure: true },
    );
  });

  test('a rotated Secret is read again after the sidecar answers 401: the CR moves on', async () => {
    const ns = tenants[2]!;
    const first = `rotating-one-${randomBytes(8).toString('hex')}`;
    const second = `rotating-two-${randomBytes(8).toString('hex')}`;
    await createSecret(ns, 'rotating', { token: first });
    let sidecar = await startNoopSidecar({ token: first });
    const port = Number(new URL(sidecar.url).port);
    try {
      await api.create(ns, 'rotating', { desiredState: 'Running', onLeaf: 'Keep', sidecar: { url: sidecar.url, tokenSecretRef: { name: 'rotating', key: 'token' } } }, SUITE_LABEL);
      await waitForDatabase(kc, ns, 'rotating', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
      // The rotation: the Secret gets a new token, the sidecar restarts with it on the same address.
      await core.patchNamespacedSecret({ namespace: ns, name: 'rotating', body: { stringData: { token: second } } }, mergePatch);
      await sidecar.close();
      sidecar = await startNoopSidecar({ token: second, port });
      await api.patchSpec(ns, 'rotating', { desiredState: 'Servicing' });
      // Well within the 60 s bound on a cached token's age: the 401 made the operator read it again.
      await waitForDatabase(kc, ns, 'rotating', 'Ready at Servicing with the new token', (o) => o.status?.state === 'Servicing' && conditionOf(o, 'Ready')?.status === 'True', 20_000);
      counts.add('rotated Secret: read again after a 401, converged');
    } finally {
      await sidecar.close();
    }
  });

  test('a tenant who may create CRs but not read Secrets cannot have an ordinary Secret sent; one made to be a sidecar token works', async () => {
    const ns = tenants[1]!;
    const author = `author-of-${ns}`;
    // The tenant's rights in their namespace: the CRs, and nothing on Secrets.
    await kubectl(['-n', ns, 'create', 'role', 'database-author', '--verb=get,list,watch,create,update,patch,delete', '--resource=databases.okt.dev']);
    await kubectl(['-n', ns, 'create', 'rolebinding', 'database-author', '--role=database-author', `--user=${author}`]);
    await expect(kubectl(['-n', ns, 'get', 'secret', 'db-password', '--as', author])).rejects.toThrow(/forbidden/);
    // Nor may they make a sidecar-token Secret of their own: that takes create on Secrets.
    await expect(kubectl(['-n', ns, 'create', 'secret', 'generic', 'mine', `--type=${SIDECAR_TOKEN_SECRET_TYPE}`, '--from-literal=token=x', '--as', author])).rejects.toThrow(/forbidden/);
    // And an existing Secret cannot gain the type, even by an admin: the API server refuses to change it.
    await expect(kubectl(['-n', ns, 'patch', 'secret', 'db-password', '--type=merge', '-p', JSON.stringify({ type: SIDECAR_TOKEN_SECRET_TYPE })])).rejects.toThrow(/field is immutable/);
    expect((await core.readNamespacedSecret({ namespace: ns, name: 'db-password' })).type).toBe('Opaque');

    const id = String((serial += 1));
    const manifest = (sidecar: Record<string, unknown>) => JSON.stringify({ apiVersion: 'okt.dev/v1alpha1', kind: 'Database', metadata: { name: 'borrowed', labels: SUITE_LABEL }, spec: { desiredState: 'Running', onLeaf: 'Keep', sidecar } });
    // The tenant points the database password at a URL of theirs.
    await kubectl(['-n', ns, 'apply', '--as', author, '-f', '-'], manifest({ url: `${recorder.url}/t/${ns}/garbage/${id}`, tokenSecretRef: { name: 'db-password', key: 'token' } }));
    const refused = await waitForDatabase(kc, ns, 'borrowed', 'Stalled SidecarSecretWrongType', (o) => conditionOf(o, 'Stalled')?.reason === 'SidecarSecretWrongType');
    const message = conditionOf(refused, 'Stalled')?.message ?? '';
    expect(message).toContain(`spec.sidecar.tokenSecretRef: Secret ${ns}/db-password is of type "Opaque", not "${SIDECAR_TOKEN_SECRET_TYPE}"`);
    expect(message).toContain(`make a Secret of type ${SIDECAR_TOKEN_SECRET_TYPE}`);
    expect(message).not.toContain(dbPasswords.get(ns)!);
    expect(conditionOf(refused, 'Ready')?.status).toBe('False');
    expect(refused.status?.state).toBe('Start');
    expect(requestsOf(ns, id), 'the recorder is never called').toEqual([]);
    counts.add('tenant without Secret rights, ordinary Secret: SidecarSecretWrongType, nothing sent');

    // Someone who may create Secrets makes one for the purpose (docs/operator.md's command); the tenant names it.
    const token = `made-for-it-${randomBytes(8).toString('hex')}`;
    await kubectl(['-n', ns, 'create', 'secret', 'generic', 'made-for-it', `--type=${SIDECAR_TOKEN_SECRET_TYPE}`, `--from-literal=token=${token}`]);
    const sidecar = await startNoopSidecar({ token });
    try {
      await kubectl(['-n', ns, 'apply', '--as', author, '-f', '-'], manifest({ url: sidecar.url, tokenSecretRef: { name: 'made-for-it', key: 'token' } }));
      const ready = await waitForDatabase(kc, ns, 'borrowed', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
      expect(conditionOf(ready, 'Stalled')?.status).not.toBe('True');
      counts.add('tenant without Secret rights, sidecar-token Secret: converged');
    } finally {
      await sidecar.close();
    }
    expect(requestsOf(ns, id)).toEqual([]);
  });

  test('bursts of CRs created and deleted across namespaces all go, refused ones without waiting', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ tenant: fc.integer({ min: 0, max: 2 }), kind: fc.constantFrom('not-allowed', 'secret-elsewhere', 'operator-sidecar'), deleteAfterMs: fc.integer({ min: 0, max: 300 }) }), { minLength: 10, maxLength: 20 }),
        async (burst) => {
          await Promise.all(burst.map(async (b) => {
            const id = String((serial += 1));
            // elsewhere-only lives in tenants[0]: a CR there would use it, so this kind goes to the other two
            const namespace = tenants[b.kind === 'secret-elsewhere' ? 1 + (b.tenant % 2) : b.tenant]!;
            const name = `burst-${id}`;
            const spec: Record<string, unknown> = { desiredState: 'Running', onLeaf: 'Keep' };
            if (b.kind === 'not-allowed') spec.sidecar = { url: `${recorder.url}/t/${namespace}/html/${id}` };
            if (b.kind === 'secret-elsewhere') spec.sidecar = { url: `${recorder.url}/t/${namespace}/html/${id}`, tokenSecretRef: { name: 'elsewhere-only', key: 'token' } };
            await api.create(namespace, name, spec, SUITE_LABEL);
            await new Promise((r) => setTimeout(r, b.deleteAfterMs));
            await api.remove(namespace, name).catch((error: unknown) => {
              if (httpStatusOf(error) !== 404) throw error;
            });
            expect(await waitForGone(kc, namespace, name, 60_000)).toBe(true);
            counts.add(`burst: ${b.kind} created and deleted`);
            expect(requestsOf(namespace, id), `${namespace}/${name} ${b.kind}: nothing sent`).toEqual([]);
          }));
        },
      ),
      { numRuns: fcRuns(2), endOnFailure: true },
    );
  });

  test('afterwards: the recorder never saw the operator-wide token nor another namespace\'s; the victim is untouched; the operator is up, never restarted', async () => {
    for (const request of recorder.requests) {
      expect(request.authorization, request.path).not.toBe(`Bearer ${OPERATOR_TOKEN}`);
      for (const password of dbPasswords.values()) expect(request.authorization, request.path).not.toContain(password);
      const own = [tenantTokens.get(request.namespace), request.namespace === tenants[0] ? elsewhereToken : undefined].filter((t) => t !== undefined).map((t) => `Bearer ${t}`);
      expect(own, `${request.path}: ${request.authorization}`).toContain(request.authorization);
    }
    counts.add('requests the recorder saw (each with its own namespace\'s token)', recorder.requests.length);
    const victim = await api.get(victimNs, 'victim');
    expect(victim.status?.state).toBe('Running');
    expect(victim.status?.transition).toBe(victimBefore.status?.transition);
    expect(victim.status?.path).toEqual(victimBefore.status?.path);
    expect(victim.status?.lastTransition).toEqual(victimBefore.status?.lastTransition);
    expect(victim.status?.sequence).toBe(victimBefore.status?.sequence);
    expect(conditionOf(victim, 'Ready')).toEqual(conditionOf(victimBefore, 'Ready'));
    expect(operator.exitCode, operator.output().slice(-2000)).toBeNull();
    expect(operator.signalCode).toBeNull();
    expect((await fetch(`http://127.0.0.1:${healthPort}/healthz`)).status).toBe(200);
  });
});
