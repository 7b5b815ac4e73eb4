import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, LeaderElector, type Lease } from '../../../src/controller/index.ts';
import { KubeTransport, LEASES } from '../../../src/kube/transport/index.ts';
import { createNamespace, e2eKubeConfig, waitFor } from '../helpers/index.ts';

const quiet = createLogger({ level: 'silent' });
// Short durations keep the test quick; the algorithm is the same as with client-go's 15/10/2 s.
const timing = { leaseDurationMs: 3000, renewDeadlineMs: 2000, retryPeriodMs: 250 };
let namespace = '';
let reader: KubeTransport;
const transports: KubeTransport[] = [];

async function newTransport(): Promise<KubeTransport> {
  const transport = await KubeTransport.fromKubeConfig(e2eKubeConfig());
  transports.push(transport);
  return transport;
}

function elector(transport: KubeTransport, identity: string, name: string, log: string[]): LeaderElector {
  return new LeaderElector({
    transport, namespace, name, identity, ...timing, logger: quiet,
    onStartedLeading: () => log.push(`${identity} started`),
    onStoppedLeading: () => log.push(`${identity} stopped`),
  });
}

beforeAll(async () => {
  namespace = await createNamespace(e2eKubeConfig(), 'election');
  reader = await newTransport();
});
afterAll(async () => {
  await Promise.all(transports.map((transport) => transport.close()));
});

describe('LeaderElector on a real Lease', () => {
  it('lets exactly one of two candidates lead; on release the other takes over at once', async () => {
    const log: string[] = [];
    const a = elector(await newTransport(), 'a', 'release', log);
    const b = elector(await newTransport(), 'b', 'release', log);
    void a.run();
    void b.run();
    const first = await waitFor('a leader', async () => (a.isLeader || b.isLeader ? (a.isLeader ? a : b) : undefined), 10_000, 20);
    const second = first === a ? b : a;
    // Several renewals later, still exactly one.
    const renewals = (await readLease('release')).metadata.resourceVersion;
    await waitFor('a few renewals', async () => ((await readLease('release')).metadata.resourceVersion !== renewals ? true : undefined), 10_000, 100);
    await waitFor('the other to see who leads', async () => (second.leader === first.identity ? true : undefined), 10_000, 20);
    expect([a.isLeader, b.isLeader].filter(Boolean)).toHaveLength(1);
    expect((await readLease('release')).spec?.holderIdentity).toBe(first.identity);

    await first.stop();
    expect(first.isLeader).toBe(false);
    await waitFor('the other to lead', async () => (second.isLeader ? true : undefined), 10_000, 20);
    const lease = await readLease('release');
    expect(lease.spec?.holderIdentity).toBe(second.identity);
    expect(lease.spec?.leaseTransitions).toBe(1);
    await second.stop();
    expect(log).toEqual([`${first.identity} started`, `${first.identity} stopped`, `${second.identity} started`, `${second.identity} stopped`]);
    expect((await readLease('release')).spec?.holderIdentity).toBe('');
  });

  it('takes over a lease whose holder vanished without releasing, once it expires; the old leader steps down', async () => {
    const log: string[] = [];
    const crashingTransport = await newTransport();
    const a = elector(crashingTransport, 'a', 'crash', log);
    void a.run();
    await waitFor('a to lead', async () => (a.isLeader ? true : undefined), 10_000, 20);
    const b = elector(await newTransport(), 'b', 'crash', log);
    void b.run();
    // a loses its connection: it can no longer renew (nor release).
    await crashingTransport.close();
    await waitFor('b to lead', async () => (b.isLeader ? true : undefined), 20_000, 50);
    await waitFor('a to step down', async () => (!a.isLeader && log.includes('a stopped') ? true : undefined), 20_000, 50);
    expect((await readLease('crash')).spec?.holderIdentity).toBe('b');
    await a.stop();
    await b.stop();
  });
});

async function readLease(name: string): Promise<Lease> {
  return reader.get<Lease>(LEASES, namespace, name);
}
