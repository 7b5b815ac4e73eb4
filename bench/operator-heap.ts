// Run by e2e.bench.ts in a fresh process with --expose-gc: runs an operator on an empty namespace first
// and stops it (the code it runs is loaded, what a stopped operator leaves stays), collects garbage and
// reads the heap; then starts an operator on the namespace measured, waits until every CR there is
// cached, reconciled and at rest (compacted), collects and reads the heap again. The difference is what that operator holds,
// in one process with the same code loaded (two fresh processes differ by megabytes of their own).
// Usage: node --expose-gc bench/operator-heap.ts <kubeconfig> <namespace> <crs> <sidecar-url> <sidecar-token> <empty-namespace> <status-format>
import { KubeConfig } from '@kubernetes/client-node';
import { databaseGraph } from '../graphs/database.ts';
import { createLogger } from '../src/controller/index.ts';
import { startOperator } from '../src/controller/lifecycle/index.ts';
import { waitFor } from '../src/util/wait-for.ts';
import { parseStatusFormat } from '../src/kube/status-format.ts';

const [kubeconfig, namespace, crs, url, token, emptyNamespace, format] = process.argv.slice(2);
const exposedGc = (globalThis as { gc?: () => void }).gc;
if (!kubeconfig || !namespace || !crs || !url || !token || !emptyNamespace || !format || !exposedGc) {
  throw new Error('usage: node --expose-gc bench/operator-heap.ts <kubeconfig> <namespace> <crs> <sidecar-url> <sidecar-token> <empty-namespace> <full|lean>');
}
const gc: () => void = exposedGc;
const statusFormat = parseStatusFormat(format, 'the status format argument');
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
/** The heap with an operator on `namespace` running, its `crs` CRs cached and reconciled; the operator is stopped on return. */
async function heapWithOperator(namespace: string, crs: number): Promise<{ heapUsed: number; writes: number }> {
  const operator = await startOperator({
    kubeConfig: kc,
    graph: databaseGraph,
    resource: { group: 'okt.dev', version: 'v1alpha1', plural: 'databases', kind: 'Database' },
    namespace,
    statusFormat,
    sidecar: { url, token },
    health: false,
    logger: createLogger({ level: 'silent' }),
  });
  const { informer, controller } = operator.lifecycle;
  const reconciles = () => operator.manager.metrics.reconcileTotal.get().then((m) => m.values.reduce((sum, v) => sum + v.value, 0));
  // At rest: every CR cached, reconciled once, and kept deflated (unchanged for the cache's compactAfterMs).
  await waitFor('every CR cached, reconciled once and compacted', async () => {
    const idle = informer.store.size === crs && controller.queue.length === 0 && controller.queue.processing === 0;
    return idle && informer.uncompacted === 0 && (await reconciles()) >= crs ? true : undefined;
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

await heapWithOperator(emptyNamespace, 0);
const heapBefore = await collectedHeap();
const { heapUsed, writes } = await heapWithOperator(namespace, Number(crs));
console.log(JSON.stringify({ heapUsed, heapBefore, writes }));
