// Status merge patches per second to a custom resource: @kubernetes/client-node against okt's lean
// transport, at concurrency 1, 16 and 64, against the same API server in the same run, with the TCP
// connections open to it. A third client, client-node given one shared dispatcher, tests the
// explanation of its loss (a new undici Agent, hence a new TLS connection, per request).
// Cluster: OKT_BENCH_KUBECONFIG, else a control plane started (and stopped) here.
import { execFileSync } from 'node:child_process';
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions, type RequestContext } from '@kubernetes/client-node';
import type { Dispatcher } from 'undici';
import { startControlPlane, type ControlPlane } from '../src/cluster/index.ts';
import { KubeTransport, isConflict, type ResourceRef } from '../src/kube/transport/index.ts';

const GROUP = 'bench.okt.dev';
const RESOURCE: ResourceRef = { group: GROUP, version: 'v1', plural: 'gauges' };
const CRDS: ResourceRef = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', namespaced: false };
const NAMESPACES: ResourceRef = { group: '', version: 'v1', plural: 'namespaces', namespaced: false };
const NAMESPACE = 'okt-bench';
const CONCURRENCY = [1, 16, 64] as const;
const SECONDS_PER_CELL = Number(process.env.OKT_BENCH_SECONDS ?? 4);

type Patch = (name: string, i: number) => Promise<unknown>;

/** client-node, with its `applySecurityAuthentication` handing out one dispatcher instead of a new one per request. */
class SharedDispatcherKubeConfig extends KubeConfig {
  #shared: Dispatcher | undefined;
  async close(): Promise<void> {
    await this.#shared?.close();
  }
  override async applySecurityAuthentication(context: RequestContext): Promise<void> {
    await super.applySecurityAuthentication(context);
    const fresh = context.getDispatcher();
    if (!fresh) return;
    if (!this.#shared) this.#shared = fresh;
    else if (fresh !== this.#shared) {
      void fresh.close();
      context.setDispatcher(this.#shared);
    }
  }
}

function clientNodePatcher(kc: KubeConfig): Patch {
  const api = kc.makeApiClient(CustomObjectsApi);
  const options = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  return (name, i) => api.patchNamespacedCustomObjectStatus(
    { group: GROUP, version: 'v1', namespace: NAMESPACE, plural: RESOURCE.plural, name, body: { status: { count: i } } }, options,
  );
}

function establishedConnections(port: string): number {
  const out = execFileSync('ss', ['-Htn', 'state', 'established', `( dport = :${port} )`], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line.trim() !== '').length;
}

/** Patches per second over `seconds` with `concurrency` loops (each on its own object), and the most connections seen. */
async function measure(patch: Patch, concurrency: number, port: string, seconds: number): Promise<{ perSecond: number; connections: number }> {
  let done = 0;
  let maxConnections = 0;
  const deadline = performance.now() + seconds * 1000;
  const sampler = setInterval(() => {
    maxConnections = Math.max(maxConnections, establishedConnections(port));
  }, 250);
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async (_, w) => {
    for (let i = 0; performance.now() < deadline; i += 1) {
      await patch(`g${w}`, i);
      done += 1;
    }
  }));
  const elapsed = (performance.now() - start) / 1000;
  clearInterval(sampler);
  return { perSecond: done / elapsed, connections: maxConnections };
}

async function prepare(transport: KubeTransport): Promise<void> {
  const ignoreExisting = (err: unknown) => {
    if (!isConflict(err)) throw err;
  };
  await transport.create(NAMESPACES, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }).catch(ignoreExisting);
  await transport.create(CRDS, undefined, {
    apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `gauges.${GROUP}` },
    spec: {
      group: GROUP, scope: 'Namespaced', names: { plural: 'gauges', singular: 'gauge', kind: 'Gauge' },
      versions: [{
        name: 'v1', served: true, storage: true, subresources: { status: {} },
        schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
      }],
    },
  }).catch(ignoreExisting);
  for (let attempt = 0; ; attempt += 1) {
    try {
      await transport.list(RESOURCE, { namespace: NAMESPACE, limit: 1 });
      break;
    } catch (err) {
      if (attempt > 100) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  for (let w = 0; w < Math.max(...CONCURRENCY); w += 1) {
    await transport.create(RESOURCE, NAMESPACE, { apiVersion: `${GROUP}/v1`, kind: 'Gauge', metadata: { name: `g${w}` } }).catch(ignoreExisting);
  }
}

/** Waits (up to 15 s) until the connections left by the previous client have closed. */
async function settle(port: string, baseline: number): Promise<void> {
  for (let i = 0; i < 150 && establishedConnections(port) > baseline; i += 1) await new Promise((resolve) => setTimeout(resolve, 100));
}

interface Client {
  key: string;
  label: string;
  open(): Promise<{ patch: Patch; close(): Promise<void> }>;
}

export async function run(): Promise<Record<string, number>> {
  let plane: ControlPlane | undefined;
  let kubeconfigPath = process.env.OKT_BENCH_KUBECONFIG;
  if (!kubeconfigPath) {
    plane = await startControlPlane({ progress: (line) => process.stderr.write(`${line}\n`) });
    kubeconfigPath = plane.kubeconfigPath;
  }
  const path = kubeconfigPath;
  const load = <T extends KubeConfig>(kc: T): T => {
    kc.loadFromFile(path);
    return kc;
  };
  const kc = load(new KubeConfig());
  const port = new URL(kc.getCurrentCluster()?.server ?? '').port || '443';
  const clients: Client[] = [
    { key: 'clientnode', label: 'client-node 2.0.1', open: async () => ({ patch: clientNodePatcher(load(new KubeConfig())), close: async () => undefined }) },
    {
      key: 'clientnode_shared_dispatcher', label: 'client-node, one shared dispatcher',
      open: async () => {
        const shared = load(new SharedDispatcherKubeConfig());
        return { patch: clientNodePatcher(shared), close: () => shared.close() };
      },
    },
    {
      key: 'transport', label: 'okt transport (undici Pool, keep-alive, HTTP/2 negotiated)',
      open: async () => {
        const transport = await KubeTransport.fromKubeConfig(kc, { connections: 64 });
        return { patch: (name, i) => transport.patchStatus(RESOURCE, NAMESPACE, name, { count: i }), close: () => transport.close() };
      },
    },
    {
      key: 'transport_http1', label: 'okt transport, HTTP/1.1 only',
      open: async () => {
        const transport = await KubeTransport.fromKubeConfig(kc, { connections: 64, http2: false });
        return { patch: (name, i) => transport.patchStatus(RESOURCE, NAMESPACE, name, { count: i }), close: () => transport.close() };
      },
    },
  ];
  const setup = await KubeTransport.fromKubeConfig(kc);
  try {
    await prepare(setup);
  } finally {
    await setup.close();
  }
  try {
    await settle(port, 0);
    // kube-apiserver's own loopback clients.
    const baseline = establishedConnections(port);
    const figures: Record<string, number> = {};
    const rows: string[] = [];
    for (const concurrency of CONCURRENCY) {
      const cell: number[] = [];
      for (const client of clients) {
        await settle(port, baseline);
        const { patch, close } = await client.open();
        await measure(patch, Math.min(concurrency, 4), port, 1); // warm up the JIT briefly
        const result = await measure(patch, concurrency, port, SECONDS_PER_CELL);
        await close();
        const connections = Math.max(0, result.connections - baseline);
        cell.push(result.perSecond);
        const suffix = concurrency === 64 ? '' : `_c${concurrency}`;
        figures[`kube.${client.key}_patch_per_s${suffix}`] = Math.round(result.perSecond);
        figures[`kube.${client.key}_connections${suffix}`] = connections;
        rows.push(`| ${concurrency} | ${client.label} | ${result.perSecond.toFixed(0)}/s | ${connections} |`);
      }
      rows.push(`| ${concurrency} | transport / client-node | ${((cell[2] as number) / (cell[0] as number)).toFixed(2)}x | |`);
    }
    console.log(`status merge patches, ${SECONDS_PER_CELL} s per cell, API server ${kc.getCurrentCluster()?.server}`);
    console.log('| concurrency | client | patches | TCP connections to the API server (max seen) |');
    console.log('| --- | --- | --- | --- |');
    for (const row of rows) console.log(row);
    return figures;
  } finally {
    await plane?.stop();
  }
}
