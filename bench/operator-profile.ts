// Where the operator's CPU goes per transition: an `okt run` process under V8's CPU profiler drives N
// CRs (default 500) Running -> End (the multi-hop walk of `npm run bench -- e2e`) against a control plane
// started here and an in-process no-op sidecar; prints its CPU per transition and the self time of the
// heaviest functions and packages during the walk only. Not a benchmark (no ratio): a tool to find
// what to make cheaper.   node bench/operator-profile.ts [N]
// OKT_PROFILE_INTERVAL_US: the profiler's sampling interval (default V8's 1000 µs; finer gives steadier shares).
// OKT_PROFILE_STATUS_FORMAT: the CRD's and the operator's status format (default packed, as the e2e bench's).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { databaseGraph } from '../graphs/database.ts';
import { startControlPlane } from '../src/cluster/index.ts';
import { findCondition } from '../src/kube/conditions.ts';
import { generateCrd } from '../src/kube/crd.ts';
import { parseStatusFormat } from '../src/kube/status-format.ts';
import type { LifecycleStatus } from '../src/kube/lifecycle-resource.ts';
import { KubeTransport, NAMESPACES, type KubeObject } from '../src/kube/transport/index.ts';
import { waitFor } from '../src/util/wait-for.ts';
import { startNoopSidecar } from '../sidecar/noop.ts';
import { cpuSeconds, CRDS, crName, inParallel, RESOURCE } from './e2e.bench.ts';

const COUNT = Number(process.argv[2] ?? 500);
const NAMESPACE = 'profile';
const CONCURRENCY = 64;
const STATUS_FORMAT = parseStatusFormat(process.env.OKT_PROFILE_STATUS_FORMAT ?? 'packed', 'OKT_PROFILE_STATUS_FORMAT');

interface CpuProfileNode { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }
interface CpuProfile { nodes: CpuProfileNode[]; samples: number[]; timeDeltas: number[]; startTime: number }

async function atEverywhere(transport: KubeTransport, state: string): Promise<void> {
  await waitFor(`${COUNT} CRs Ready at ${state}`, async () => {
    const list = await transport.list(RESOURCE, { namespace: NAMESPACE });
    const ready = list.items.filter((o) => {
      const status = (o as { status?: LifecycleStatus }).status;
      return status?.state === state && findCondition(status.conditions, 'Ready')?.status === 'True';
    });
    return ready.length === COUNT ? true : undefined;
  }, { timeoutMs: 120_000 + COUNT * 200, intervalMs: 250 });
}

/** Self time per function and per package or okt file, of the samples between two instants (µs since the profile's start). */
function selfTimes(profile: CpuProfile, fromUs: number): { functions: [string, number][]; places: [string, number][] } {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const functions = new Map<string, number>();
  const places = new Map<string, number>();
  let at = profile.startTime;
  profile.samples.forEach((id, i) => {
    at += profile.timeDeltas[i] ?? 0;
    if (at < fromUs) return;
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url)?.[1];
    const place = pkg ?? (url.includes('/work/') || url.startsWith('file:') ? url.replace(/^.*?\/(src|sidecar|bin)\//, '$1/') : url || `(${functionName})`);
    const name = `${functionName || '(anonymous)'} ${place}:${lineNumber + 1}`;
    const dt = (profile.timeDeltas[i] ?? 0) / 1000;
    functions.set(name, (functions.get(name) ?? 0) + dt);
    places.set(place, (places.get(place) ?? 0) + dt);
  });
  const top = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1]).slice(0, 30);
  return { functions: top(functions), places: top(places) };
}

const plane = await startControlPlane({ progress: (line) => process.stderr.write(`${line}\n`) });
const dir = mkdtempSync(path.join(tmpdir(), 'okt-operator-profile-'));
const sidecar = await startNoopSidecar({ graph: databaseGraph, actions: 'module', maxActiveOperations: 256, retainOperations: 100_000 });
try {
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  const transport = await KubeTransport.fromKubeConfig(kc, { connections: CONCURRENCY });
  await transport.create(CRDS, undefined, generateCrd(databaseGraph, { ...RESOURCE, statusFormat: STATUS_FORMAT }) as KubeObject);
  await waitFor('the CRD to be served', async () => transport.list(RESOURCE, { limit: 1 }).then(() => true, () => undefined), { timeoutMs: 60_000 });
  await transport.create(NAMESPACES, undefined, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } });
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, sidecar.token);
  const operator = spawn(process.execPath, [
    '--cpu-prof', '--cpu-prof-dir', dir,
    ...(process.env.OKT_PROFILE_INTERVAL_US === undefined ? [] : ['--cpu-prof-interval', process.env.OKT_PROFILE_INTERVAL_US]),
    fileURLToPath(new URL('../bin/okt.js', import.meta.url)), 'run', '--graph', fileURLToPath(new URL('../graphs/database.ts', import.meta.url)),
    '--group', RESOURCE.group, '--version', RESOURCE.version, '--kind', RESOURCE.kind, '--namespace', NAMESPACE,
    '--workers', '64', '--health-port', '-1', '--log-level', 'warn', '--status-format', STATUS_FORMAT, '--sidecar-url', sidecar.url, '--sidecar-token-file', tokenFile,
  ], { env: { ...process.env, KUBECONFIG: plane.kubeconfigPath }, stdio: ['ignore', 'inherit', 'inherit'] });
  const names = Array.from({ length: COUNT }, (_, i) => crName(i));
  await inParallel(COUNT, CONCURRENCY, async (i) => {
    await transport.create(RESOURCE, NAMESPACE, {
      apiVersion: `${RESOURCE.group}/${RESOURCE.version}`, kind: RESOURCE.kind, metadata: { name: names[i] }, spec: { desiredState: 'Running', onLeaf: 'Keep' },
    });
  });
  await atEverywhere(transport, 'Running');
  const [cpuBefore = 0] = cpuSeconds([operator.pid!]);
  const walkStartedUs = Number(process.hrtime.bigint() / 1000n);
  const started = performance.now();
  const api = kc.makeApiClient(CustomObjectsApi);
  const mergePatch = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
  await inParallel(COUNT, CONCURRENCY, async (i) => {
    await api.patchNamespacedCustomObject({ group: RESOURCE.group, version: RESOURCE.version, plural: RESOURCE.plural, namespace: NAMESPACE, name: names[i]!, body: { spec: { desiredState: 'End' } } }, mergePatch);
  });
  await atEverywhere(transport, 'End');
  const seconds = (performance.now() - started) / 1000;
  const transitions = COUNT * 2;
  const cpu = ((cpuSeconds([operator.pid!])[0] ?? 0) - cpuBefore) * 1000;
  const walkEndedUs = Number(process.hrtime.bigint() / 1000n);
  operator.kill('SIGTERM');
  await new Promise((resolve) => operator.once('exit', resolve));
  await transport.close();
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`no CPU profile in ${dir}`);
  const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as CpuProfile & { endTime: number };
  if (process.env.OKT_PROFILE_OUT) writeFileSync(process.env.OKT_PROFILE_OUT, JSON.stringify({ ...profile, walkStartedUs, walkEndedUs }));
  // The profile's clock is the process's monotonic clock in µs, the same as hrtime's: keep the walk only.
  const { functions, places } = selfTimes({ ...profile, samples: profile.samples }, walkStartedUs);
  const walkMs = (Math.min(walkEndedUs, profile.endTime) - walkStartedUs) / 1000;
  console.log(`${transitions} transitions in ${seconds.toFixed(1)} s (${(transitions / seconds).toFixed(1)}/s); okt run CPU ${(cpu / transitions).toFixed(2)} ms per transition (walk profiled: ${walkMs.toFixed(0)} ms)`);
  console.log('\nself time by package / okt file (ms per transition):');
  for (const [place, ms] of places) console.log(`  ${(ms / transitions).toFixed(3)}  ${place}`);
  console.log('\nself time by function (ms per transition):');
  for (const [name, ms] of functions) console.log(`  ${(ms / transitions).toFixed(3)}  ${name}`);
} finally {
  await sidecar.close();
  await plane.stop();
  rmSync(dir, { recursive: true, force: true });
}
