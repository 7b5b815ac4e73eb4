// okt-node-peer: the e2e bench's peers (../walk) written in Node, on the same stack as okt (undici over
// HTTP/2 through okt's lean API transport, undici over HTTP/1.1 to the sidecar) and doing only what
// they do: a cache of the namespace's CRs (list, then watch), a work queue with N workers, and a
// reconcile that takes one step of the walk (the node's action on the sidecar first, if it has one)
// and PUTs the status (phase + observedGeneration + conditions [Ready]); the watch event of its own
// write brings the CR back. Its CPU per transition against the Go peers' is what the runtime costs,
// whatever okt does on top (docs/benchmarks.md). Flags, routes, sidecar calls and the stdin protocol
// are the Go peers' (bench/peer/walk/walk.go).
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { Pool } from 'undici';
import { isConflict, KubeTransport, objectKey, splitKey, type KubeObject } from '../../../src/kube/transport/index.ts';

interface Routes { graph: string; entry: string; next: Record<string, Record<string, string>>; actions: string[] }
interface Condition { type: string; status: string; reason: string; message: string; observedGeneration: number; lastTransitionTime: string }
type Cr = KubeObject & { spec: { desiredState: string }; status?: { phase?: string; observedGeneration?: number; conditions?: Condition[] } };
interface Step { rest?: boolean; phase: string; action: boolean; ready: string; reason: string; message: string }

const { values: flags } = parseArgs({
  options: {
    kubeconfig: { type: 'string' }, group: { type: 'string', default: 'okt.dev' }, version: { type: 'string', default: 'v1alpha1' },
    resource: { type: 'string', default: 'databases' }, namespace: { type: 'string', default: 'default' }, workers: { type: 'string', default: '64' },
    routes: { type: 'string' }, 'sidecar-url': { type: 'string', default: '' }, 'sidecar-token-file': { type: 'string', default: '' },
  },
});
const routes = JSON.parse(readFileSync(flags.routes!, 'utf8')) as Routes;
const resource = { group: flags.group!, version: flags.version!, plural: flags.resource! };
const counters = { reconciles: 0, updates: 0, conflicts: 0, errors: 0, sidecarCalls: 0, skippedStale: 0, objectWrites: 0 };

/** As walk.Routes.Decide. */
function decide(current: string | undefined, desired: string, settled: boolean): Step {
  const phase = current || routes.entry;
  if (phase === desired) return settled ? { rest: true, phase, action: false, ready: '', reason: '', message: '' } : { phase, action: false, ready: 'True', reason: 'Arrived', message: `at ${phase}` };
  const next = routes.next[desired]?.[phase];
  if (next === undefined) return { phase, action: false, ready: 'False', reason: 'Unreachable', message: `${desired} cannot be reached from ${phase}` };
  if (next === desired) return { phase: next, action: routes.actions.includes(next), ready: 'True', reason: 'Arrived', message: `at ${next}` };
  return { phase: next, action: routes.actions.includes(next), ready: 'False', reason: 'Progressing', message: `at ${next}, on the way to ${desired}` };
}

const sidecarUrl = flags['sidecar-url']!;
const sidecar = sidecarUrl === '' ? undefined : new Pool(sidecarUrl, { connections: Number(flags.workers) });
const token = flags['sidecar-token-file'] === '' ? '' : readFileSync(flags['sidecar-token-file']!, 'utf8').trim();

async function sidecarCall(method: 'PUT' | 'GET', path: string, body?: string): Promise<string> {
  counters.sidecarCalls += 1;
  const headers: Record<string, string> = { authorization: `Bearer ${token}`, accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await sidecar!.request({ method, path, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.body.text();
  if (res.statusCode !== 200 && res.statusCode !== 202) throw new Error(`${method} ${path}: ${res.statusCode} ${text}`);
  return (JSON.parse(text) as { phase: string }).phase;
}

/** As walk.Sidecar.Run: start the action, long-poll until it ended. */
async function runAction(id: string, node: string): Promise<void> {
  if (sidecar === undefined) return;
  let phase = await sidecarCall('PUT', `/v1/operations/${id}`, JSON.stringify({ graph: routes.graph, node }));
  while (phase !== 'Succeeded' && phase !== 'Failed' && phase !== 'Cancelled') phase = await sidecarCall('GET', `/v1/operations/${id}?wait=20000`);
  if (phase !== 'Succeeded') throw new Error(`operation ${id} ended ${phase}`);
}

/** meta.SetStatusCondition: the time moves only with the status. */
function setCondition(conditions: Condition[], next: Omit<Condition, 'lastTransitionTime'>): Condition[] {
  const before = conditions.find((c) => c.type === next.type);
  const lastTransitionTime = before !== undefined && before.status === next.status ? before.lastTransitionTime : new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  return [...conditions.filter((c) => c.type !== next.type), { ...next, lastTransitionTime }];
}

const kc = new KubeConfig();
kc.loadFromFile(flags.kubeconfig!);
const transport = await KubeTransport.fromKubeConfig(kc, { connections: 16, fieldManager: 'okt-node-peer' });
const cache = new Map<string, Cr>();

async function reconcile(key: string): Promise<void> {
  counters.reconciles += 1;
  const cr = cache.get(key);
  if (cr === undefined) return;
  const generation = cr.metadata.generation ?? 1;
  const ready = cr.status?.conditions?.find((c) => c.type === 'Ready');
  const step = decide(cr.status?.phase, cr.spec.desiredState, cr.status?.observedGeneration === generation && ready?.status === 'True');
  if (step.rest) return;
  if (step.action) await runAction(`peer-${cr.metadata.uid}-${generation}-${step.phase}`, step.phase);
  const conditions = setCondition(cr.status?.conditions ?? [], { type: 'Ready', status: step.ready, reason: step.reason, message: step.message, observedGeneration: generation });
  const { namespace, name } = splitKey(key);
  try {
    await transport.replace(resource, namespace, name, { ...cr, status: { ...cr.status, phase: step.phase, observedGeneration: generation, conditions } }, { resourceVersion: cr.metadata.resourceVersion ?? '', subresource: 'status' });
    counters.updates += 1;
  } catch (error) {
    // As the controller-runtime peer: a 409 (the cache older than the server) is dropped, the watch brings the newer object.
    if (!isConflict(error)) throw error;
    counters.conflicts += 1;
  }
}

// A work queue as client-go's: a key queued once however often it is added, never reconciled by two workers at once.
const queue: string[] = [];
const queued = new Set<string>();
const active = new Set<string>();
const again = new Set<string>();
const idle: (() => void)[] = [];
function add(key: string): void {
  if (active.has(key)) return void again.add(key);
  if (queued.has(key)) return;
  queued.add(key);
  queue.push(key);
  idle.shift()?.();
}
async function worker(): Promise<never> {
  for (;;) {
    const key = queue.shift();
    if (key === undefined) {
      await new Promise<void>((resolve) => idle.push(resolve));
      continue;
    }
    queued.delete(key);
    active.add(key);
    try {
      await reconcile(key);
    } catch (error) {
      counters.errors += 1;
      process.stderr.write(`okt-node-peer: ${key}: ${String(error)}\n`);
    } finally {
      active.delete(key);
      if (again.delete(key)) add(key);
    }
  }
}

const listed = await transport.list<Cr>(resource, { namespace: flags.namespace! });
for (const item of listed.items) cache.set(objectKey(item), item);
for (let i = 0; i < Number(flags.workers); i++) void worker();
for (const key of cache.keys()) add(key);
void (async () => {
  let resourceVersion = listed.metadata.resourceVersion;
  for (;;) {
    try {
      for await (const event of transport.watch<Cr>(resource, { namespace: flags.namespace!, resourceVersion })) {
        resourceVersion = event.object.metadata.resourceVersion ?? resourceVersion;
        if (event.type === 'BOOKMARK') continue;
        const key = objectKey(event.object);
        if (event.type === 'DELETED') cache.delete(key);
        else cache.set(key, event.object);
        add(key);
      }
    } catch (error) {
      process.stderr.write(`okt-node-peer: watch: ${String(error)}\n`);
      process.exit(1);
    }
  }
})();

console.log('synced');
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() === 'stats') console.log(JSON.stringify(counters));
  if (line.trim() === 'mem') {
    globalThis.gc?.();
    const memory = process.memoryUsage();
    console.log(JSON.stringify({ rss: memory.rss, heapInuse: memory.heapTotal, heapAlloc: memory.heapUsed, cached: cache.size }));
  }
}
process.exit(0);
