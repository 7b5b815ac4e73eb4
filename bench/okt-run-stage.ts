// Where the bench's tools run `okt run` processes as the e2e bench's like-for-like walk runs them
// (bench/operator-ab.ts, bench/operator-allocations.ts): a control plane started here, a no-op sidecar in
// this process, the databases' CRD in the walk's status format and okt's finalizer policy where the
// release serves it; per process, a fresh namespace watched by an informer of this process, and the
// process warmed up (createWarmedUp) before its walk is measured.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { databaseGraph } from '../graphs/database.ts';
import { startControlPlane, type ControlPlane } from '../src/cluster/index.ts';
import { createLogger, Informer } from '../src/controller/index.ts';
import { generateCrd } from '../src/kube/crd.ts';
import { KubeTransport, type KubeObject } from '../src/kube/transport/index.ts';
import { waitFor } from '../src/util/wait-for.ts';
import { startNoopSidecar, type NoopSidecar } from '../sidecar/noop.ts';
import { cpuSeconds, createOktNamespace, createWarmedUp, CRDS, installFinalizerPolicy, oktRunArgs, RawApi, ReadinessTracker, RESOURCE, sidecarRequests, STATUS_FORMAT, WARM_UP } from './e2e.bench.ts';

export interface OktRunStage {
  plane: ControlPlane;
  sidecar: NoopSidecar;
  transport: KubeTransport;
  raw: RawApi;
  /** okt's finalizer policy is in force (the release serves it). */
  policy: boolean;
  tokenFile: string;
  close(): Promise<void>;
}

export async function startOktRunStage(): Promise<OktRunStage> {
  const plane = await startControlPlane({ progress: () => {} });
  const sidecar = await startNoopSidecar({ graph: databaseGraph, actions: 'module', maxActiveOperations: 256, retainOperations: 1_000_000 });
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  const transport = await KubeTransport.fromKubeConfig(kc);
  const raw = await RawApi.open(kc, 64);
  const dir = mkdtempSync(path.join(tmpdir(), 'okt-bench-stage-'));
  const close = async () => {
    rmSync(dir, { recursive: true, force: true });
    await raw.close();
    await transport.close();
    await sidecar.close();
    await plane.stop();
  };
  try {
    await transport.create(CRDS, undefined, generateCrd(databaseGraph, { ...RESOURCE, statusFormat: STATUS_FORMAT }) as KubeObject);
    await waitFor('the CRD served', async () => transport.list(RESOURCE, { limit: 1 }).then(() => true, () => undefined), { timeoutMs: 60_000 });
    const policy = await installFinalizerPolicy(raw, [RESOURCE]);
    const tokenFile = path.join(dir, 'token');
    writeFileSync(tokenFile, sidecar.token);
    return { plane, sidecar, transport, raw, policy, tokenFile, close };
  } catch (error) {
    await close();
    throw error;
  }
}

/** An `okt run` process on its namespace, warmed up, with the CRs it is to walk at Running. */
export interface WarmOktRun {
  process: ChildProcess;
  tracker: ReadinessTracker;
  /** The CRs to walk, and how long a walk of them may take. */
  names: string[];
  timeoutMs: number;
  /** The process's CPU seconds so far. */
  cpu(): number;
  stop(): Promise<void>;
}

/**
 * An `okt run` process of the checkout at `checkout` (Node's flags `nodeFlags` first) on a fresh
 * `namespace`, warmed up (OKT_BENCH_E2E_WARM_UP CRs walked Running -> End, then settled), with `count`
 * more CRs at Running to walk. `stderr`: 'pipe' to read what the process says there.
 */
export async function startWarmOktRun(stage: OktRunStage, checkout: string, namespace: string, count: number, { nodeFlags = [] as readonly string[], stderr = 'ignore' as 'ignore' | 'pipe' } = {}): Promise<WarmOktRun> {
  await createOktNamespace(stage.raw, namespace);
  const informer = new Informer<KubeObject>({ transport: stage.transport, resource: RESOURCE, namespace, logger: createLogger({ level: 'silent' }) });
  const tracker = new ReadinessTracker(informer);
  informer.start();
  const child = spawn(process.execPath, [...nodeFlags, ...oktRunArgs(checkout, namespace, { url: stage.sidecar.url, tokenFile: stage.tokenFile }, ['--health-port', '-1'])], {
    env: { ...process.env, KUBECONFIG: stage.plane.kubeconfigPath }, stdio: ['ignore', 'ignore', stderr],
  });
  const stop = async () => {
    child.kill('SIGKILL');
    await informer.stop();
  };
  try {
    await informer.waitForSync();
    const cpu = () => cpuSeconds([child.pid ?? NaN])[0] ?? NaN;
    // Quiet: the warm-up's last long-polls answered.
    const { names, timeoutMs } = await createWarmedUp(stage.raw, tracker, namespace, count, WARM_UP, cpu, () => sidecarRequests(stage.sidecar));
    return { process: child, tracker, names, timeoutMs, cpu, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
