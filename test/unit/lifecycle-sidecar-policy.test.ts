// Which URLs the operator-wide sidecar token may go to, and what a CR naming another one gets.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { classifySecretFailure, notAllowedRefusal, SECRET_RETRY_MS, SidecarSecretError } from '../../src/controller/lifecycle/error-policy.ts';
import { parseSidecarUrlPattern, SidecarUrlPatternError, SidecarUrlPolicy } from '../../src/controller/lifecycle/sidecar-policy.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import { generateCrd } from '../../src/kube/crd.ts';
import { lifecycleSpecSchema, SIDECAR_URL_PATTERN } from '../../src/kube/lifecycle-resource.ts';
import { KubeApiError } from '../../src/kube/transport/errors.ts';
import { fcRuns } from '../fixtures/fast-check.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';

const allowed = (policy: SidecarUrlPolicy, url: string) => {
  const verdict = policy.judge(url);
  return verdict.kind === 'url' && verdict.operatorTokenAllowed;
};

describe('SidecarUrlPolicy', () => {
  const policy = new SidecarUrlPolicy({
    defaultUrl: 'http://okt-sidecar.ops:8479',
    allow: ['http://*.apps.svc.cluster.local:8479', 'https://sidecars.example.com/okt', 'http://10.0.0.7:*'],
  });

  test.each([
    ['http://okt-sidecar.ops:8479', true],
    ['http://okt-sidecar.ops:8479/', true],
    ['http://OKT-SIDECAR.ops:8479/sub/path', true],
    ['http://db-0.db.apps.svc.cluster.local:8479', true],
    ['http://x.apps.svc.cluster.local:8479', true],
    ['https://sidecars.example.com/okt/db-1', true],
    ['http://10.0.0.7:1', true],
    ['http://10.0.0.7', true],
  ])('the operator token may go to %s', (url, expected) => expect(allowed(policy, url)).toBe(expected));

  test.each([
    ['http://okt-sidecar.ops:8480', 'another port'],
    ['https://okt-sidecar.ops:8479', 'another scheme'],
    ['http://okt-sidecar.ops.evil.example:8479', 'a host that only starts like it'],
    ['http://apps.svc.cluster.local:8479', 'the wildcard suffix itself'],
    ['http://evilapps.svc.cluster.local:8479', 'a suffix without the dot'],
    ['http://x.apps.svc.cluster.local:8480', 'a wildcard host on another port'],
    ['https://sidecars.example.com/okta', 'a path that only starts like the prefix'],
    ['https://sidecars.example.com/', 'a path above the prefix'],
    ['https://sidecars.example.com/okt/../admin', 'a path that climbs out of the prefix'],
    ['http://okt-sidecar.ops:8479@evil.example:8479/', 'user info hiding the real host'],
    ['http://user:pw@okt-sidecar.ops:8479/', 'user info on the allowed host'],
    ['http://okt-sidecar.ops:8479/?x=1', 'a query'],
    ['http://okt-sidecar.ops:8479/#f', 'a fragment'],
    ['http://10.0.0.8:8479', 'another IP address'],
    ['http://0x0a000007.evil:1', 'a numeric-looking name'],
  ])('the operator token never goes to %s (%s)', (url) => expect(allowed(policy, url)).toBe(false));

  test('the client gets the normalized URL, so the raw text cannot differ from what was judged', () => {
    expect(policy.judge('HTTP://OKT-Sidecar.ops:8479/a/../')).toEqual({ kind: 'url', url: 'http://okt-sidecar.ops:8479', operatorTokenAllowed: true });
    expect(policy.judge('not a url')).toMatchObject({ kind: 'invalid' });
    expect(policy.judge('file:///etc/passwd')).toMatchObject({ kind: 'invalid' });
    // user info is refused outright, even with the CR's own Secret: it hides the real host
    expect(policy.judge('http://okt-sidecar.ops:8479@evil.example/')).toMatchObject({ kind: 'invalid', problem: expect.stringContaining('evil.example') });
  });

  test('without --sidecar-url-allow, only --sidecar-url itself; without either, nothing', () => {
    expect(allowed(new SidecarUrlPolicy({ defaultUrl: 'http://a:1' }), 'http://a:1')).toBe(true);
    expect(allowed(new SidecarUrlPolicy({ defaultUrl: 'http://a:1' }), 'http://b:1')).toBe(false);
    expect(allowed(new SidecarUrlPolicy({}), 'http://a:1')).toBe(false);
  });

  test.each(['okt-sidecar:8479', 'ftp://x', 'http://*', 'http://a*b.example', 'http://*.10.0.0.1', 'http://x/?q', 'http://u@x', 'http://x:99999', 'http://x/a*'])('refuses the pattern %s, saying the syntax', (pattern) => {
    expect(() => parseSidecarUrlPattern(pattern)).toThrow(SidecarUrlPatternError);
  });

  test('property: a URL on another host than every allowed one is never allowed, whatever its path or port', () => {
    fc.assert(
      fc.property(fc.webUrl({ withQueryParameters: true, withFragments: true }), (url) => {
        const host = new URL(url).hostname;
        const inAllowed = host === 'okt-sidecar.ops' || host.endsWith('.apps.svc.cluster.local') || host === 'sidecars.example.com' || host === '10.0.0.7';
        if (!inAllowed) expect(allowed(policy, url)).toBe(false);
      }),
    );
  });
});

describe('the CRD refuses at the door exactly the sidecar URLs the operator refuses', () => {
  const policy = new SidecarUrlPolicy({ defaultUrl: 'http://okt-sidecar.ops:8479' });
  const door = new RegExp(SIDECAR_URL_PATTERN);
  /** What the server stores and the operator parses: the CRD's pattern, then the operator's spec schema. */
  const passesTheDoor = (url: string) => door.test(url) && lifecycleSpecSchema.safeParse({ desiredState: 'Running', sidecar: { url } }).success;

  test('the CRD carries the pattern on spec.sidecar.url', () => {
    const crd = generateCrd(databaseGraph, { group: 'okt.dev', version: 'v1alpha1', kind: 'Database' }) as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: Record<string, any> } } } }[] } };
    expect(crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.sidecar.properties.url.pattern).toBe(SIDECAR_URL_PATTERN);
  });

  test.each([
    // seed -1037935223 of test/e2e/bad-input/cr-specs.test.ts: format "uri" took it, the operator did not
    ['xP7:', 'not http or https'],
    ['file:///etc/passwd', 'not http or https'],
    ['mailto:a@example.com', 'not http or https'],
    ['http://okt-sidecar.ops:8479@evil.example/', 'user info'],
    ['http://user:pw@okt-sidecar.ops:8479/', 'user info'],
    ['HTTP://u@okt-sidecar.ops:8479', 'user info'],
  ])('%s: refused by the door, and by the operator (%s) in a CR stored before the door', (url, problem) => {
    expect(door.test(url)).toBe(false);
    expect(policy.judge(url)).toMatchObject({ kind: 'invalid', problem: expect.stringContaining(problem) });
  });

  // The WHATWG parser's leniency, which an earlier okt called: the door must not freeze such a stored CR.
  test.each(['http://okt-sidecar.ops:8479', 'HTTP://OKT-SIDECAR.ops:8479/a/../', 'https://[::1]:8479/x?q#f', 'http://okt-sidecar.ops:8479\\sub', 'http://a/@b', 'http:okt-sidecar.ops:8479', 'HTTPS:///x\\\\y', 'http:\\\\okt-sidecar.ops/'])('%s passes the door and the operator reads it', (url) => {
    expect(passesTheDoor(url)).toBe(true);
    expect(policy.judge(url).kind).toBe('url');
  });

  test('property: the door takes a URL the server and zod take exactly when the operator reads it as http or https without user info (the door also refuses an empty one, "http://@host")', () => {
    const scheme = fc.constantFrom('http', 'https', 'HTTP', 'hTtPs', 'ftp', 'xP7', 'file', '');
    const separator = fc.constantFrom('://', ':', ':/', ':///', '//', ':\\\\', '');
    const host = fc.oneof(fc.domain(), fc.ipV4(), fc.ipV6().map((ip) => `[${ip}]`), fc.string({ maxLength: 12 }), fc.webAuthority({ withUserInfo: true, withPort: true, withIPv4: true, withIPv6: true }));
    const rest = fc.oneof(fc.constant(''), fc.webPath(), fc.string({ maxLength: 12 }), fc.constantFrom('/@evil', '\\@evil', '@evil', '?q', '#f', ' ', '\t/x', ':8479'));
    const url = fc.oneof(fc.tuple(scheme, separator, host, rest).map((parts) => parts.join('')), fc.webUrl({ withQueryParameters: true, withFragments: true, authoritySettings: { withUserInfo: true, withPort: true } }), fc.string({ maxLength: 40 }));
    fc.assert(
      fc.property(url, (raw) => {
        if (passesTheDoor(raw)) expect(policy.judge(raw), raw).toMatchObject({ kind: 'url' });
        // format "uri" (Go's url.Parse) refuses control characters, and a leading space or one: never stored
        const storable = !/[\x00-\x1f\x7f]|^ /.test(raw);
        if (storable && lifecycleSpecSchema.safeParse({ desiredState: 'Running', sidecar: { url: raw } }).success && policy.judge(raw).kind === 'url' && !door.test(raw)) {
          expect(raw, 'refused only for an "@" before the host').toMatch(/^[^:]+:[/\\]*[^/?#\\]*@/);
        }
      }),
      { numRuns: fcRuns(2000) },
    );
  });
});

describe('refusals said on the CR', () => {
  test('a URL outside the allow-list says what to do and is never retried by a timer', () => {
    const refusal = notAllowedRefusal('http://evil:1', undefined, ['http://ok:1']);
    expect(refusal.reason).toBe('SidecarNotAllowed');
    expect(refusal.message).toContain('http://evil:1');
    expect(refusal.message).toContain('spec.sidecar.tokenSecretRef');
    expect(refusal.message).toContain('http://ok:1');
    expect(refusal.retryAfterMs).toBeUndefined();
  });

  test('a Secret missing, without the key, or forbidden is said on the CR; a 5xx is retried', () => {
    const ref = { namespace: 'tenant-a', name: 'tok', key: 'token' };
    const missing = classifySecretFailure(new KubeApiError({ statusCode: 404, method: 'GET', path: '/api/v1/namespaces/tenant-a/secrets/tok' }), ref);
    expect(missing).toMatchObject({ kind: 'refused', refusal: { reason: 'SidecarSecretUnreadable', retryAfterMs: SECRET_RETRY_MS } });
    expect(missing.kind === 'refused' && missing.refusal.message).toContain('tenant-a/tok does not exist');
    const forbidden = classifySecretFailure(new KubeApiError({ statusCode: 403, method: 'GET', path: '/x' }), ref);
    expect(forbidden.kind === 'refused' && forbidden.refusal.message).toContain('--read-secrets');
    expect(classifySecretFailure(new SidecarSecretError('Secret tenant-a/tok has no key "token"'), ref)).toMatchObject({ kind: 'refused' });
    expect(classifySecretFailure(new KubeApiError({ statusCode: 503, method: 'GET', path: '/x' }), ref)).toEqual({ kind: 'retry' });
  });

  test('the step stalls on a refused sidecar, asks nothing of it, and resumes once it is usable', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.sidecarRefusal = notAllowedRefusal('http://evil:1', undefined, []);
    const effects = sim.reconcile();
    expect(effects.startOperation).toBeUndefined();
    expect(sim.status?.state).toBe('Start');
    const stalled = findCondition(sim.status?.conditions ?? [], 'Stalled');
    expect(stalled).toMatchObject({ status: 'True', reason: 'SidecarNotAllowed' });
    expect(findCondition(sim.status?.conditions ?? [], 'Ready')?.status).toBe('False');
    expect(sim.reconcile()).toEqual({});
    sim.sidecarRefusal = undefined;
    sim.settle();
    expect(sim.status?.state).toBe('Running');
    expect(findCondition(sim.status?.conditions ?? [], 'Ready')?.status).toBe('True');
  });

  test('a paused CR with a refused sidecar says it is paused; resumed, it says why its sidecar is refused', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.spec = { ...sim.spec, paused: true };
    sim.sidecarRefusal = notAllowedRefusal('b:G4nw.u', '"b:G4nw.u" is not http or https', []);
    sim.reconcile();
    expect(findCondition(sim.status?.conditions ?? [], 'Ready')).toMatchObject({ status: 'False', reason: 'Paused' });
    expect(findCondition(sim.status?.conditions ?? [], 'Stalled')?.status).not.toBe('True');
    sim.spec = { ...sim.spec, paused: false };
    sim.reconcile();
    expect(findCondition(sim.status?.conditions ?? [], 'Stalled')).toMatchObject({ status: 'True', reason: 'SidecarNotAllowed' });
  });

  test('a Secret that cannot be read is looked at again after its delay; a deletion says how to release the CR', () => {
    const sim = new LifecycleSim(databaseGraph, 'Running');
    sim.settle();
    sim.sidecarRefusal = { reason: 'SidecarSecretUnreadable', message: 'spec.sidecar.tokenSecretRef: gone', retryAfterMs: 30_000 };
    sim.delete();
    const effects = sim.reconcile();
    expect(effects.requeueAfterMs).toBe(30_000);
    expect(effects.finish).toBeUndefined();
    expect(findCondition(sim.status?.conditions ?? [], 'Stalled')?.message).toContain('okt.dev/abandon=true');
  });
});
