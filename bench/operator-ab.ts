// okt run's CPU per transition, one checkout against another: each side an `okt run` process of its
// checkout (its bin/okt.js and graphs/database.ts) on one control plane started here and one no-op
// sidecar in this process, in a fresh namespace per walk (okt's finalizer policy in force where the
// release serves it), warmed up as the e2e bench's like-for-like walk is (OKT_BENCH_E2E_WARM_UP CRs,
// default 2000, created with the COUNT measured and walked Running -> End first, then settled), then
// COUNT CRs walked Running -> End (okt run as that walk runs it: OKT_BENCH_E2E_WORKERS,
// OKT_BENCH_E2E_STATUS_FORMAT), readiness seen by an informer of this process; the process's CPU
// (utime + stime from /proc) per transition of that walk. The sides alternate, the first of each pair
// turned each pair; prints every pair's B/A and the median of them. A tool to tell a cut of a few
// percent apart, not a goal: run a checkout against itself first, the spread of its pairs is the
// resolution. Each checkout needs its node_modules. OKT_AB_A_NODE_FLAGS and OKT_AB_B_NODE_FLAGS give a
// side's process Node's and V8's flags (a checkout against itself with a flag on one side judges that flag).
//   node bench/operator-ab.ts A_DIR B_DIR [PAIRS (default 6)] [COUNT (default 1000)]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { databaseGraph } from '../graphs/database.ts';
import { startControlPlane } from '../src/cluster/index.ts';
import { createLogger, Informer } from '../src/controller/index.ts';
import { generateCrd } from '../src/kube/crd.ts';
import { KubeTransport, type KubeObject } from '../src/kube/transport/index.ts';
import { waitFor } from '../src/util/wait-for.ts';
import { startNoopSidecar } from '../sidecar/noop.ts';
import { cpuSeconds, createOktNamespace, createWarmedUp, CRDS, installFinalizerPolicy, moveAll, MULTI_HOP, oktRunArgs, RawApi, ReadinessTracker, RESOURCE, sidecarRequests, STATUS_FORMAT, WARM_UP } from './e2e.bench.ts';

const [aDir, bDir, pairsArg, countArg] = process.argv.slice(2);
if (aDir === undefined || bDir === undefined) throw new Error('usage: node bench/operator-ab.ts A_DIR B_DIR [PAIRS] [COUNT]');
const PAIRS = Number(pairsArg ?? 6);
const COUNT = Number(countArg ?? 1000);
/** Node's and V8's flags for each side's process (OKT_AB_A_NODE_FLAGS, OKT_AB_B_NODE_FLAGS, space-separated): to judge a runtime flag on one checkout. */
const NODE_FLAGS = { a: nodeFlags(process.env.OKT_AB_A_NODE_FLAGS), b: nodeFlags(process.env.OKT_AB_B_NODE_FLAGS) };

const plane = await startControlPlane({ progress: () => {} });
const sidecar = await startNoopSidecar({ graph: databaseGraph, actions: 'module', maxActiveOperations: 256, retainOperations: 1_000_000 });
const kc = new KubeConfig();
kc.loadFromFile(plane.kubeconfigPath);
const transport = await KubeTransport.fromKubeConfig(kc);
const raw = await RawApi.open(kc, 64);
const dir = mkdtempSync(path.join(tmpdir(), 'okt-bench-ab-'));
try {
  await transport.create(CRDS, undefined, generateCrd(databaseGraph, { ...RESOURCE, statusFormat: STATUS_FORMAT }) as KubeObject);
  await waitFor('the CRD served', async () => transport.list(RESOURCE, { limit: 1 }).then(() => true, () => undefined), { timeoutMs: 60_000 });
  const policy = await installFinalizerPolicy(raw, [RESOURCE]);
  console.log(`okt's finalizer policy ${policy ? 'in force' : 'not served by this release'}; ${COUNT} CRs walked Running -> End after a warm-up of ${WARM_UP}`);
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, sidecar.token);

  /** CPU ms per transition of one side's measured walk, in a fresh namespace and process. */
  const walk = async (side: 'a' | 'b', pair: number): Promise<number> => {
    const checkout = side === 'a' ? aDir : bDir;
    const namespace = `ab-${side}-${pair}`;
    await createOktNamespace(raw, namespace);
    const informer = new Informer<KubeObject>({ transport, resource: RESOURCE, namespace, logger: createLogger({ level: 'silent' }) });
    const tracker = new ReadinessTracker(informer);
    informer.start();
    const operator = spawn(process.execPath, [...NODE_FLAGS[side], ...oktRunArgs(checkout, namespace, { url: sidecar.url, tokenFile }, ['--health-port', '-1'])], {
      env: { ...process.env, KUBECONFIG: plane.kubeconfigPath }, stdio: 'ignore',
    });
    try {
      await informer.waitForSync();
      const cpu = () => cpuSeconds([operator.pid ?? NaN])[0] ?? NaN;
      // Quiet: the warm-up's last long-polls answered.
      const { names, timeoutMs } = await createWarmedUp(raw, tracker, namespace, COUNT, WARM_UP, cpu, () => sidecarRequests(sidecar));
      const before = cpu();
      await moveAll(raw, tracker, RESOURCE, namespace, names, 'End', timeoutMs);
      return ((cpu() - before) * 1000) / (COUNT * MULTI_HOP.transitions);
    } finally {
      operator.kill('SIGKILL');
      await informer.stop();
    }
  };

  if (NODE_FLAGS.a.length + NODE_FLAGS.b.length > 0) console.log(`node flags: A ${NODE_FLAGS.a.join(' ') || '(none)'}, B ${NODE_FLAGS.b.join(' ') || '(none)'}`);
  const median = (xs: readonly number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
  const ratios: number[] = [];
  for (let pair = 0; pair < PAIRS; pair++) {
    const first = pair % 2 === 0 ? 'a' : 'b';
    const figures = { a: NaN, b: NaN };
    figures[first] = await walk(first, pair);
    const second = first === 'a' ? 'b' : 'a';
    figures[second] = await walk(second, pair);
    ratios.push(figures.b / figures.a);
    console.log(`pair ${pair}: A ${figures.a.toFixed(3)}, B ${figures.b.toFixed(3)} ms per transition; B/A ${(figures.b / figures.a).toFixed(3)}`);
  }
  console.log(`B/A, the median of ${PAIRS} pairs: ${median(ratios).toFixed(3)} (pairs ${Math.min(...ratios).toFixed(3)}-${Math.max(...ratios).toFixed(3)})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
  await raw.close();
  await transport.close();
  await sidecar.close();
  await plane.stop();
}

function nodeFlags(value: string | undefined): string[] {
  return (value ?? '').split(' ').filter((flag) => flag !== '');
}
