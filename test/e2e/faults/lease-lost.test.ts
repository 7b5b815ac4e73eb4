// A replica whose Lease is taken from it (an API server outage longer than the renew deadline, a
// partition) must exit, to come back as a fresh candidate: alive, it would stop campaigning and run
// nothing, and with every replica in that state no operator would run at all.
import { CoordinationV1Api } from '@kubernetes/client-node';
import { beforeAll, expect, test } from 'vitest';
import { createNamespace, e2eKubeConfig, mergePatch, waitFor } from '../helpers/index.ts';
import { installDatabaseCrd } from '../helpers/lifecycle.ts';
import { killHard, spawnOperator } from '../helpers/operator-process.ts';

const kc = e2eKubeConfig();
let namespace: string;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-lease-lost');
});

test('okt run --leader-elect exits with 1 once it has lost its Lease', async () => {
  const leases = kc.makeApiClient(CoordinationV1Api);
  const operator = spawnOperator({
    namespace, sidecarUrl: 'http://127.0.0.1:9', token: 'unused-token-0123456789abcdef',
    extra: ['--leader-elect', '--leader-election-namespace', namespace, '--leader-election-id', 'okt-lost', '--leader-election-identity', 'victim',
      '--lease-duration', '3', '--renew-deadline', '2', '--retry-period', '0.5'],
  });
  const exited = new Promise<number | null>((resolve) => operator.once('exit', (code) => resolve(code)));
  try {
    await waitFor('the replica to lead', async () => {
      const lease = await leases.readNamespacedLease({ name: 'okt-lost', namespace }).catch(() => undefined);
      return lease?.spec?.holderIdentity === 'victim' ? true : undefined;
    });
    // Another holder with a fresh, long lease: the victim's next renewal meets a 409 and it cannot renew again.
    const now = new Date().toISOString().replace('Z', '000Z');
    await leases.patchNamespacedLease({ name: 'okt-lost', namespace, body: { spec: { holderIdentity: 'thief', leaseDurationSeconds: 3600, renewTime: now, acquireTime: now } } }, mergePatch);
    const code = await Promise.race([exited, new Promise<string>((resolve) => setTimeout(() => resolve('still running 20 s later'), 20_000))]);
    expect(code, operator.output().slice(-3000)).toBe(1);
    expect(operator.output()).toContain('leadership lost');
  } finally {
    await killHard(operator);
  }
});
