// What an `okt run` process allocates per transition, and what of it outlives V8's young generation:
// the process as the e2e bench's like-for-like walk runs it (warmed up the same way), on a control plane
// started here and a no-op sidecar in this process, under V8's sampling heap profiler (over the
// inspector, --inspect on a free loopback port) during two walks of COUNT CRs Running -> End: the first
// keeps every allocation sampled, the second only those no scavenge collected (promoted to the old
// generation, where a mark-compact collects them: what makes a scavenge and a mark-compact cost).
// Bytes per transition in all, then by the nearest okt function on the allocating stack (a callback of
// undici or of a stream has none: "(no okt frame)") and by allocating function. Not a benchmark (no
// ratio): a tool to find what to make cheaper, as bench/operator-profile.ts is for CPU.
//   node bench/operator-allocations.ts [COUNT (default 1000)]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { databaseGraph } from '../graphs/database.ts';
import { startControlPlane } from '../src/cluster/index.ts';
import { createLogger, Informer } from '../src/controller/index.ts';
import { generateCrd } from '../src/kube/crd.ts';
import { KubeTransport, type KubeObject } from '../src/kube/transport/index.ts';
import { waitFor } from '../src/util/wait-for.ts';
import { startNoopSidecar } from '../sidecar/noop.ts';
import { cpuSeconds, createOktNamespace, createWarmedUp, CRDS, installFinalizerPolicy, moveAll, MULTI_HOP, oktRunArgs, RawApi, ReadinessTracker, RESOURCE, sidecarRequests, STATUS_FORMAT, WARM_UP } from './e2e.bench.ts';

const COUNT = Number(process.argv[2] ?? 1000);
const NAMESPACE = 'allocations';
const ROOT = fileURLToPath(new URL('..', import.meta.url));

interface CallFrame { functionName: string; url: string; lineNumber: number }
interface SamplingNode { callFrame: CallFrame; selfSize: number; children: SamplingNode[] }

/** A minimal client of the inspector protocol over the process's WebSocket. */
class Inspector {
  readonly #socket: WebSocket;
  readonly #pending = new Map<number, { resolve: (result: unknown) => void; reject: (error: Error) => void }>();
  #id = 0;
  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: unknown; error?: { message: string } };
      const pending = message.id === undefined ? undefined : this.#pending.get(message.id);
      if (pending === undefined) return;
      this.#pending.delete(message.id!);
      if (message.error !== undefined) pending.reject(new Error(`inspector: ${message.error.message}`));
      else pending.resolve(message.result);
    });
  }

  static async open(url: string): Promise<Inspector> {
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', reject, { once: true });
    });
    return new Inspector(socket);
  }

  post<T>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const id = ++this.#id;
    this.#socket.send(JSON.stringify({ id, method, params }));
    return new Promise<T>((resolve, reject) => this.#pending.set(id, { resolve: resolve as (result: unknown) => void, reject }));
  }

  close(): void {
    this.#socket.close();
  }
}

const frameName = (f: CallFrame) => `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*?\/(src|node_modules)\//, '$1/') || '(native)'}:${f.lineNumber + 1}`;

/** Bytes per transition in all, by the nearest okt frame and by allocating function. */
function report(title: string, head: SamplingNode, transitions: number): void {
  const nearest = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  const visit = (node: SamplingNode, okt: string) => {
    const own = node.callFrame.url.includes('/src/') && !node.callFrame.url.includes('/node_modules/') ? frameName(node.callFrame) : okt;
    if (node.selfSize > 0) {
      total += node.selfSize;
      nearest.set(own, (nearest.get(own) ?? 0) + node.selfSize);
      functions.set(frameName(node.callFrame), (functions.get(frameName(node.callFrame)) ?? 0) + node.selfSize);
    }
    for (const child of node.children) visit(child, own);
  };
  visit(head, '(no okt frame)');
  const kb = (bytes: number) => (bytes / transitions / 1024).toFixed(2).padStart(7);
  console.log(`\n${title}: ${kb(total).trim()} KB per transition`);
  console.log('  by the nearest okt function (KB per transition):');
  for (const [name, bytes] of [...nearest].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${kb(bytes)}  ${name}`);
  console.log('  by allocating function (KB per transition):');
  for (const [name, bytes] of [...functions].sort((a, b) => b[1] - a[1]).slice(0, 25)) console.log(`  ${kb(bytes)}  ${name}`);
}

const plane = await startControlPlane({ progress: () => {} });
const sidecar = await startNoopSidecar({ graph: databaseGraph, actions: 'module', maxActiveOperations: 256, retainOperations: 1_000_000 });
const kc = new KubeConfig();
kc.loadFromFile(plane.kubeconfigPath);
const transport = await KubeTransport.fromKubeConfig(kc);
const raw = await RawApi.open(kc, 64);
const dir = mkdtempSync(path.join(tmpdir(), 'okt-bench-allocations-'));
const informer = new Informer<KubeObject>({ transport, resource: RESOURCE, namespace: NAMESPACE, logger: createLogger({ level: 'silent' }) });
let operator: ReturnType<typeof spawn> | undefined;
try {
  await transport.create(CRDS, undefined, generateCrd(databaseGraph, { ...RESOURCE, statusFormat: STATUS_FORMAT }) as KubeObject);
  await waitFor('the CRD served', async () => transport.list(RESOURCE, { limit: 1 }).then(() => true, () => undefined), { timeoutMs: 60_000 });
  await installFinalizerPolicy(raw, [RESOURCE]);
  await createOktNamespace(raw, NAMESPACE);
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, sidecar.token);
  const tracker = new ReadinessTracker(informer);
  informer.start();
  operator = spawn(process.execPath, ['--inspect=127.0.0.1:0', ...oktRunArgs(ROOT, NAMESPACE, { url: sidecar.url, tokenFile }, ['--health-port', '-1'])], {
    env: { ...process.env, KUBECONFIG: plane.kubeconfigPath }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  const child = operator;
  const inspectorUrl = await new Promise<string>((resolve, reject) => {
    let said = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      const url = /ws:\/\/\S+/.exec(said)?.[0];
      if (url !== undefined) resolve(url);
    });
    child.once('exit', (code) => reject(new Error(`okt run exited (${code}): ${said}`)));
  });
  await informer.waitForSync();
  const cpu = () => cpuSeconds([child.pid ?? NaN])[0] ?? NaN;
  // The warm-up's and both walks' CRs, created at once: every walk then finds its CRs cached alike.
  const { names, timeoutMs } = await createWarmedUp(raw, tracker, NAMESPACE, 2 * COUNT, WARM_UP, cpu, () => sidecarRequests(sidecar));
  const inspector = await Inspector.open(inspectorUrl);
  const transitions = COUNT * MULTI_HOP.transitions;
  for (const [walk, survivorsOnly] of [[names.slice(0, COUNT), false], [names.slice(COUNT), true]] as const) {
    await inspector.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMinorGC: !survivorsOnly, includeObjectsCollectedByMajorGC: true });
    await moveAll(raw, tracker, RESOURCE, NAMESPACE, walk, 'End', timeoutMs);
    const { profile } = await inspector.post<{ profile: { head: SamplingNode } }>('HeapProfiler.stopSampling');
    report(survivorsOnly ? `${COUNT} CRs Running -> End, what no scavenge collected` : `${COUNT} CRs Running -> End, every allocation`, profile.head, transitions);
  }
  inspector.close();
} finally {
  operator?.kill('SIGKILL');
  await informer.stop();
  rmSync(dir, { recursive: true, force: true });
  await raw.close();
  await transport.close();
  await sidecar.close();
  await plane.stop();
}
