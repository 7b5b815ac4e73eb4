// The objects a node makes, end to end (`npm run bench -- objects`), on a control plane started here
// (etcd + kube-apiserver on loopback): N CRs of the stack graph (bench/objects-graph.ts: the database
// graph's nodes, a Service, a Secret and a ConfigMap naming the node per CR) created at Running, then
// walked Servicing, Running, Stopping (one node per spec edit: every transition changes the ConfigMap),
// by okt and by the controller-runtime peer of bench/peer with `--objects` (the same three objects by
// controllerutil.CreateOrUpdate, SetControllerReference, Owns() on the three kinds), in rounds, the
// order turned each round; each side's figures are those of its median round by transitions/s.
// - API writes per transition over the whole walk, creation included (where the objects are made),
//   counted by each side's client until its writes stop: okt's transport counters (status writes,
//   server-side applies, the finalizer), the peer's own counts (status updates and their 409s, the
//   creates and updates CreateOrUpdate sent);
// - the cache's heap per owned object: okt's owned informers alone in a fresh process
//   (bench/owned-heap.ts: on the walked namespace, less on an empty one), the peer's live Go heap with
//   the three kinds watched less without them, per object.
// Knobs: OKT_BENCH_E2E_OBJECTS (CRs, default 1000), OKT_BENCH_E2E_ROUNDS (default 3), OKT_BENCH_SECONDS
// and the operator's OKT_BENCH_E2E_WORKERS / OKT_BENCH_E2E_CONNECTIONS, as for the e2e area.
import { execFile } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KubeConfig } from '@kubernetes/client-node';
import { startControlPlane } from '../src/cluster/index.ts';
import { ensurePeerBinary } from '../src/cluster/peer.ts';
import { generateCrd } from '../src/kube/crd.ts';
import { KubeTransport, type KubeObject } from '../src/kube/transport/index.ts';
import { waitFor } from '../src/util/wait-for.ts';
import { startNoopSidecar } from '../sidecar/noop.ts';
import {
  CONCURRENCY, CONTROLLER_RUNTIME_PEER, CRDS, ONE_NODE_PER_EDIT, PEER_MODULE, ROUNDS, RawApi, createNamespace, createResources, installFinalizerPolicy,
  crName, fixed, medianRound, peerWalk, walk, type PeerFigures, type Plane, type Subject, type WalkFigures,
} from './e2e.bench.ts';
import { STACKS, stackGraph } from './objects-graph.ts';

const COUNT = Number(process.env.OKT_BENCH_E2E_OBJECTS ?? 1000);
const EMPTY_NAMESPACE = 'e2e-objects-empty';
const execFileAsync = promisify(execFile);

/** Every CR of `namespace` has its Service, Secret and ConfigMap, the ConfigMap naming `node`: the walk made what it should. */
async function checkObjects(raw: RawApi, namespace: string, count: number, node: string): Promise<void> {
  const list = async (plural: string) => (JSON.parse((await raw.get(`/api/v1/namespaces/${namespace}/${plural}`)).toString('utf8')) as { items: (KubeObject & { data?: Record<string, string> })[] }).items;
  const [services, secrets, configMaps] = await Promise.all([list('services'), list('secrets'), list('configmaps')]);
  for (let i = 0; i < count; i++) {
    const name = crName(i);
    const found = [services.some((o) => o.metadata.name === name), secrets.some((o) => o.metadata.name === `${name}-keys`), configMaps.some((o) => o.metadata.name === `${name}-config` && o.data?.node === node)];
    if (!found.every(Boolean)) throw new Error(`${namespace}/${name}: its Service, Secret and ConfigMap at ${node} are not all there (${found.join(', ')})`);
  }
}

/** okt's owned informers alone in a fresh process: the heap per object on `namespace`, less on an empty namespace. */
async function ownedHeap(plane: Plane, namespace: string, expected: number): Promise<number> {
  const script = fileURLToPath(new URL('./owned-heap.ts', import.meta.url));
  const { stdout } = await execFileAsync(process.execPath, ['--expose-gc', script, plane.kubeconfigPath, namespace, EMPTY_NAMESPACE], { maxBuffer: 1 << 20 });
  const { heapUsed, heapBefore, cached } = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as { heapUsed: number; heapBefore: number; cached: number };
  if (cached !== expected) throw new Error(`okt's owned informers cached ${cached} objects of ${namespace}, expected ${expected}`);
  return (heapUsed - heapBefore) / cached;
}

export async function run(): Promise<Record<string, number>> {
  if (!Number.isInteger(COUNT) || COUNT < 1) throw new Error(`OKT_BENCH_E2E_OBJECTS must be a whole number of at least 1, not ${JSON.stringify(process.env.OKT_BENCH_E2E_OBJECTS)}`);
  if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`OKT_BENCH_E2E_ROUNDS must be a whole number of at least 1, not ${JSON.stringify(process.env.OKT_BENCH_E2E_ROUNDS)}`);
  const peer = CONTROLLER_RUNTIME_PEER;
  const built = await ensurePeerBinary({ moduleDir: PEER_MODULE, command: peer, progress: (line) => process.stderr.write(`${line}\n`) });
  const controlPlane = await startControlPlane({ progress: (line) => process.stderr.write(`${line}\n`) });
  const kc = new KubeConfig();
  kc.loadFromFile(controlPlane.kubeconfigPath);
  const raw = await RawApi.open(kc, CONCURRENCY);
  const sidecar = await startNoopSidecar({ graph: stackGraph, actions: 'module', maxActiveOperations: 256, retainOperations: 100_000 });
  const plane: Plane = { kc, kubeconfigPath: controlPlane.kubeconfigPath, pids: [{ name: 'okt (operator, sidecar, bench)', pid: process.pid }, ...controlPlane.processes.map((p) => ({ name: p.name, pid: p.pid }))], raw };
  const subject: Subject = { graph: stackGraph, resource: STACKS, sidecar, rawNamespace: 'e2e-objects-raw', firstHop: 'Running' };
  try {
    const setup = await KubeTransport.fromKubeConfig(kc);
    await setup.create(CRDS, undefined, generateCrd(stackGraph, { ...STACKS, statusFormat: 'lean' }) as KubeObject);
    await waitFor('the Stack CRD to be served', async () => (await setup.list(STACKS, { limit: 1 }).then(() => true, () => undefined)), { timeoutMs: 60_000 });
    await setup.close();
    await installFinalizerPolicy(raw, [STACKS]);
    // The raw baseline's CRs (status patches around each walk): no operator looks at them.
    await createNamespace(raw, subject.rawNamespace);
    await createResources(raw, subject.rawNamespace, CONCURRENCY, { desiredState: subject.firstHop, resource: STACKS });
    await createNamespace(raw, EMPTY_NAMESPACE);

    const route = ONE_NODE_PER_EDIT;
    const last = route.steps.at(-1)!;
    const oktRounds: WalkFigures[] = [];
    const peerRounds: PeerFigures[] = [];
    const sides = [
      async () => {
        const figures = await walk(plane, subject, COUNT, route, { round: oktRounds.length, settle: true });
        await checkObjects(raw, figures.namespace, COUNT, last);
        oktRounds.push(figures);
      },
      async () => {
        const figures = await peerWalk(plane, subject, peer, built.path, COUNT, peerRounds.length, { route, objects: true });
        await checkObjects(raw, figures.namespace, COUNT, last);
        peerRounds.push(figures);
      },
    ];
    const load = [loadavg()[0]!];
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < sides.length; i++) await sides[(round + i) % sides.length]!();
      load.push(loadavg()[0]!);
    }
    const okt = medianRound(oktRounds);
    const cr = medianRound(peerRounds);
    const transitions = COUNT * (route.createdTransitions + route.transitions);
    const owned = COUNT * stackGraph.objects.length;
    const oktBytes = await ownedHeap(plane, okt.namespace, owned);

    const figures: Record<string, number> = {};
    figures['e2e.objects_transitions_per_s'] = fixed(okt.perSecond, 1);
    figures['e2e.objects_cr_peer_transitions_per_s'] = fixed(cr.perSecond, 1);
    figures['e2e.objects_vs_cr_peer_ratio'] = fixed(okt.perSecond / cr.perSecond, 3);
    figures['e2e.objects_api_writes_per_transition'] = fixed(okt.writes / transitions, 3);
    figures['e2e.objects_api_reads_per_transition'] = fixed(okt.reads / transitions, 3);
    figures['e2e.objects_cr_peer_api_writes_per_transition'] = fixed(cr.writes / transitions, 3);
    figures['e2e.objects_writes_vs_cr_peer_ratio'] = fixed(okt.writes / cr.writes, 3);
    figures['e2e.objects_cache_bytes_per_owned_object'] = fixed(oktBytes);
    figures['e2e.objects_cr_peer_cache_bytes_per_owned_object'] = fixed(cr.heapBytesPerOwnedObject);

    console.log(`\n${ROUNDS} rounds of ${COUNT} CRs making ${stackGraph.objects.length} objects each, created at ${route.created} then walked ${route.steps.join(', ')} (transitions/s): okt ${oktRounds.map((r) => r.perSecond.toFixed(1)).join(', ')}; controller-runtime peer ${peerRounds.map((r) => r.perSecond.toFixed(1)).join(', ')}; each side's median below`);
    const creation = COUNT * route.createdTransitions;
    console.table([
      {
        side: 'okt', 'transitions/s': fixed(okt.perSecond, 1), 'API writes/transition (whole walk)': fixed(okt.writes / transitions, 3),
        'writes/CR at creation': fixed((okt.writes - okt.steadyWrites) / COUNT, 2), 'writes/transition (spec-driven)': fixed(okt.steadyWrites / okt.steadyTransitions, 3),
        'reads/transition': fixed(okt.reads / transitions, 3), 'heap B/owned object': fixed(oktBytes), '409s': '-',
      },
      {
        side: 'controller-runtime peer', 'transitions/s': fixed(cr.perSecond, 1), 'API writes/transition (whole walk)': fixed(cr.writes / transitions, 3),
        'writes/CR at creation': fixed((cr.writes - cr.steadyWrites) / COUNT, 2), 'writes/transition (spec-driven)': fixed(cr.steadyWrites / (transitions - creation), 3),
        'reads/transition': '0 (its cache)', 'heap B/owned object': fixed(cr.heapBytesPerOwnedObject), '409s': cr.conflicts,
      },
    ]);
    console.log(`okt's requests over the whole walk, by verb (per transition): ${Object.entries(okt.byVerb).filter(([verb]) => verb !== 'watch').map(([verb, n]) => `${verb} ${(n / transitions).toFixed(3)}`).join(', ')}`);
    console.log(`okt's API writes vs the peer's: ${(okt.writes / cr.writes).toFixed(3)}; machine: ${availableParallelism()} cores, load average (1 min) ${load.map((l) => l.toFixed(1)).join(' -> ')} over the rounds`);
    return figures;
  } finally {
    await sidecar.close();
    await raw.close();
    await controlPlane.stop();
  }
}
