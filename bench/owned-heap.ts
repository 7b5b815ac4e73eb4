// Run by objects.bench.ts in a fresh process with --expose-gc: the heap okt's owned informers hold per
// owned object, measured as operator-heap.ts measures a CR's: the owned informers of the stack graph
// (OwnedObjects, as the operator builds them: one informer per kind, selected by okt's graph label,
// okt's transform) started on an empty namespace and stopped (their code loaded), the heap after GC;
// then started on the namespace measured, every object cached and at rest (compacted), the heap after
// GC again. Prints the difference and the objects cached.
// Usage: node --expose-gc bench/owned-heap.ts <kubeconfig> <namespace> <empty-namespace>
import { KubeConfig } from '@kubernetes/client-node';
import { OwnedObjects } from '../src/controller/lifecycle/objects/owned.ts';
import { createLogger } from '../src/controller/index.ts';
import { KubeTransport } from '../src/kube/transport/index.ts';
import { waitFor } from '../src/util/wait-for.ts';
import { STACKS, stackGraph } from './objects-graph.ts';

const [kubeconfig, namespace, emptyNamespace] = process.argv.slice(2);
const exposedGc = (globalThis as { gc?: () => void }).gc;
if (!kubeconfig || !namespace || !emptyNamespace || !exposedGc) {
  throw new Error('usage: node --expose-gc bench/owned-heap.ts <kubeconfig> <namespace> <empty-namespace>');
}
const gc: () => void = exposedGc;
const kc = new KubeConfig();
kc.loadFromFile(kubeconfig);
const transport = await KubeTransport.fromKubeConfig(kc);

/** The owned informers on `namespace`, synced and compacted: the objects they hold, and a stop. */
async function ownedInformers(namespace: string): Promise<{ cached: number; stop: () => Promise<void> }> {
  const owned = new OwnedObjects({
    graph: stackGraph, transport, namespace, owner: { apiVersion: `${STACKS.group}/${STACKS.version}`, kind: STACKS.kind },
    enqueue: () => {}, logger: createLogger({ level: 'silent' }),
  });
  for (const informer of owned.informers) informer.start();
  await Promise.all(owned.informers.map((informer) => informer.waitForSync()));
  await waitFor('every owned object compacted', async () => (owned.informers.every((i) => i.uncompacted === 0) ? true : undefined), { timeoutMs: 600_000, intervalMs: 200 });
  const cached = owned.informers.reduce((sum, informer) => sum + informer.store.size, 0);
  return { cached, stop: async () => { await Promise.all(owned.informers.map((informer) => informer.stop())); owned.close(); } };
}

async function collectedHeap(): Promise<number> {
  for (let i = 0; i < 4; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed;
}

await (await ownedInformers(emptyNamespace)).stop();
const heapBefore = await collectedHeap();
const full = await ownedInformers(namespace);
const heapUsed = await collectedHeap();
await full.stop();
await transport.close();
console.log(JSON.stringify({ heapUsed, heapBefore, cached: full.cached }));
