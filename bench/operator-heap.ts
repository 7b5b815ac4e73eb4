// Run by e2e.bench.ts in a fresh process with --expose-gc: starts an operator on one namespace, waits
// until every CR there is cached and reconciled, collects garbage and reads the heap; stops the
// operator, collects again and reads the heap once more. The difference is what the operator held, in
// one process with the same code loaded (two fresh processes differ by megabytes of their own).
// Usage: node --expose-gc bench/operator-heap.ts <kubeconfig> <namespace> <crs> <sidecar-url> <sidecar-token>
import { KubeConfig } from '@kubernetes/client-node';
import { databaseGraph } from '../graphs/database.ts';
import { createLogger } from '../src/controller/index.ts';
import { startOperator } from '../src/controller/lifecycle/index.ts';
import { waitFor } from '../src/util/wait-for.ts';

const [kubeconfig, namespace, crs, url, token] = process.argv.slice(2);
const exposedGc = (globalThis as { gc?: () => void }).gc;
if (!kubeconfig || !namespace || !crs || !url || !token || !exposedGc) {
  throw new Error('usage: node --expose-gc bench/operator-heap.ts <kubeconfig> <namespace> <crs> <sidecar-url> <sidecar-token>');
}
const gc: () => void = exposedGc;
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
/** The heap with the operator running, every CR cached and reconciled; the operator is stopped on return. */
async function heapHeldByOperator(): Promise<{ heapUsed: number; writes: number }> {
  const operator = await startOperator({
    kubeConfig: kc,
    graph: databaseGraph,
    resource: { group: 'okt.dev', version: 'v1alpha1', plural: 'databases', kind: 'Database' },
    namespace,
    sidecar: { url, token },
    health: false,
    logger: createLogger({ level: 'silent' }),
  });
  const { informer, controller } = operator.lifecycle;
  const reconciles = () => operator.manager.metrics.reconcileTotal.get().then((m) => m.values.reduce((sum, v) => sum + v.value, 0));
  await waitFor('every CR cached and reconciled once', async () => {
    const idle = informer.store.size === Number(crs) && controller.queue.length === 0 && controller.queue.processing === 0;
    return idle && (await reconciles()) >= Number(crs) ? true : undefined;
  }, { timeoutMs: 600_000, intervalMs: 200 });
  const heapUsed = await collectedHeap();
  const writes = operator.transport.counters.writes;
  await operator.stop();
  return { heapUsed, writes };
}

async function collectedHeap(): Promise<number> {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed;
}

const held = await heapHeldByOperator();
// Nothing refers to the stopped operator any more: what it held is garbage now.
const heapAfterStop = await collectedHeap();
console.log(JSON.stringify({ heapUsed: held.heapUsed, heapAfterStop, writes: held.writes }));
