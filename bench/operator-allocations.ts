// What an `okt run` process allocates per transition, and what of it outlives V8's young generation:
// the process as the e2e bench's like-for-like walk runs it (warmed up the same way), on the stage of
// bench/okt-run-stage.ts (a control plane started here, a no-op sidecar in this process), under V8's
// sampling heap profiler (over the inspector, --inspect on a free loopback port) during two walks of
// COUNT CRs Running -> End: the first
// keeps every allocation sampled, the second only those no scavenge collected (promoted to the old
// generation, where a mark-compact collects them: what makes a scavenge and a mark-compact cost).
// Bytes per transition in all, then by the nearest okt function on the allocating stack (a callback of
// undici or of a stream has none: "(no okt frame)") and by allocating function. Not a benchmark (no
// ratio): a tool to find what to make cheaper, as bench/operator-profile.ts is for CPU.
//   node bench/operator-allocations.ts [COUNT (default 1000)]
import type { ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { moveAll, MULTI_HOP, RESOURCE } from './e2e.bench.ts';
import { startOktRunStage, startWarmOktRun } from './okt-run-stage.ts';

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

const stage = await startOktRunStage();
try {
  // The warm-up's and both walks' CRs, created at once: every walk then finds its CRs cached alike.
  const run = await startWarmOktRun(stage, ROOT, NAMESPACE, 2 * COUNT, { nodeFlags: ['--inspect=127.0.0.1:0'], stderr: 'pipe' });
  try {
    const inspector = await Inspector.open(await inspectorUrl(run.process));
    const transitions = COUNT * MULTI_HOP.transitions;
    for (const [walk, survivorsOnly] of [[run.names.slice(0, COUNT), false], [run.names.slice(COUNT), true]] as const) {
      await inspector.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMinorGC: !survivorsOnly, includeObjectsCollectedByMajorGC: true });
      await moveAll(stage.raw, run.tracker, RESOURCE, NAMESPACE, walk, 'End', run.timeoutMs);
      const { profile } = await inspector.post<{ profile: { head: SamplingNode } }>('HeapProfiler.stopSampling');
      report(survivorsOnly ? `${COUNT} CRs Running -> End, what no scavenge collected` : `${COUNT} CRs Running -> End, every allocation`, profile.head, transitions);
    }
    inspector.close();
  } finally {
    await run.stop();
  }
} finally {
  await stage.close();
}

/** The inspector's WebSocket URL, which the process says on stderr as it starts (--inspect). */
function inspectorUrl(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let said = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      const url = /ws:\/\/\S+/.exec(said)?.[0];
      if (url !== undefined) resolve(url);
    });
    child.once('exit', (code) => reject(new Error(`okt run exited (${code}): ${said}`)));
  });
}
