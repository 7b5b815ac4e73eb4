// What a CR's shape costs kube-apiserver per write: its CPU (utime + stime from /proc) per status PUT
// and per spec merge patch, 64 CRs of one CRD written 64 at once, for these shapes of a CR at rest:
// - okt: walked Running -> End (through Servicing) by an operator in this process, compact status,
//   its finalizer; and the same status packed (the packed format), its finalizer once created with the
//   CR (the creator's managedFields entry holds it) and once patched on by okt as the operator does
//   (a managedFields entry of okt's own, as every CR okt runs has);
// - the controller-runtime peer's: phase, observedGeneration and one Ready condition, no finalizer;
// - okt's bytes in few fields: okt's finalizer, state, observedGeneration and Ready, and a string
//   making up the rest of okt's status's bytes.
// Each PUT sends back the object its last answer held with one field changed (so etcd writes), as
// controller-runtime's Status().Update and okt do; okt's packed CR is also PUT with the status alone
// (a fifth row), what names the object beside it (name, namespace, uid, resourceVersion): cheaper for
// 1.37, but 1.35 drops the metadata left out from managedFields (src/controller/lifecycle/reconciler.ts).
// A watch per shape's namespace, as an operator's informer. The rows alternate ROUNDS times (default 5);
// each figure is its median. A tool to tell whether a write costs the API server per byte or per
// field, not a goal (the goals' ratios come from `npm run bench -- e2e`).
//   node bench/apiserver-object-cost.ts [ROUNDS]     OKT_BENCH_SECONDS: seconds per measurement (default 4)
import { KubeConfig } from '@kubernetes/client-node';
import { databaseGraph } from '../graphs/database.ts';
import { startControlPlane } from '../src/cluster/index.ts';
import { findCondition } from '../src/kube/conditions.ts';
import { generateCrd } from '../src/kube/crd.ts';
import type { LifecycleStatus } from '../src/kube/lifecycle-resource.ts';
import { KubeTransport, resourcePath, type KubeObject } from '../src/kube/transport/index.ts';
import { waitFor } from '../src/util/wait-for.ts';
import { startNoopSidecar } from '../sidecar/noop.ts';
import { expandStatus } from '../src/controller/lifecycle/status/compact-format.ts';
import { encodeStatus } from '../src/controller/lifecycle/status/encoding.ts';
import { cpuSeconds, createNamespace, crName, CRDS, inParallel, operatorFor, RawApi, RESOURCE } from './e2e.bench.ts';
import { median } from './median.ts';

const ROUNDS = Number(process.argv[2] ?? 5);
const SECONDS = Number(process.env.OKT_BENCH_SECONDS ?? 4);
const LOOPS = 64;
const FINALIZER = 'okt.dev/lifecycle';

interface Shape {
  name: string;
  finalizers?: string[];
  status: Record<string, unknown>;
  /** A PUT's body is the status and what names the object, not the whole object. */
  statusAlone?: boolean;
  /** The finalizers are patched on after the creation by the field manager `okt`, as the operator does. */
  finalizersPatched?: boolean;
}

type Database = KubeObject & { status?: LifecycleStatus };

const plane = await startControlPlane({ progress: (line) => process.stderr.write(`${line}\n`) });
const kc = new KubeConfig();
kc.loadFromFile(plane.kubeconfigPath);
const raw = await RawApi.open(kc, LOOPS + 8);
const apiServer = plane.processes.find((p) => p.name === 'kube-apiserver')?.pid ?? NaN;
const sidecar = await startNoopSidecar({ graph: databaseGraph, actions: 'module', maxActiveOperations: 256 });
try {
  const setup = await KubeTransport.fromKubeConfig(kc);
  await setup.create(CRDS, undefined, generateCrd(databaseGraph, { ...RESOURCE, statusFormat: 'compact' }) as KubeObject);
  await waitFor('the Database CRD to be served', async () => (await setup.list(RESOURCE, { limit: 1 }).then(() => true, () => undefined)), { timeoutMs: 60_000 });
  await setup.close();

  const walked = await walkOne();
  const okt = walked.status as unknown as Record<string, unknown>;
  const uid = walked.metadata.uid ?? '';
  const ready = findCondition(walked.status!.conditions, 'Ready')!;
  const fewFields = { state: okt.state, observedGeneration: okt.observedGeneration, conditions: [ready] };
  const packed = encodeStatus(expandStatus(okt, uid) as LifecycleStatus, uid, 'packed') as Record<string, unknown>;
  // The baseline first: the controller-runtime peer's CR.
  const shapes: Shape[] = [
    { name: 'controller-runtime peer', status: { phase: 'End', observedGeneration: 2, conditions: [{ type: 'Ready', status: 'True', observedGeneration: 2, lastTransitionTime: ready.lastTransitionTime ?? walked.status!.lastTransition!.time, reason: 'Arrived', message: 'at End' }] } },
    { name: 'okt, compact', finalizers: [FINALIZER], status: okt },
    { name: 'okt, packed', finalizers: [FINALIZER], status: packed },
    { name: 'okt, packed, finalizer patched on by okt', finalizers: [FINALIZER], finalizersPatched: true, status: packed },
    { name: 'okt, packed, PUT of the status alone', finalizers: [FINALIZER], status: packed, statusAlone: true },
    { name: "okt's bytes in few fields", finalizers: [FINALIZER], status: { ...fewFields, rest: 'x'.repeat(Math.max(0, JSON.stringify(okt).length - JSON.stringify({ ...fewFields, rest: '' }).length)) } },
  ];
  const namespaceOf = (i: number) => `object-cost-${i}`;
  for (const [i, shape] of shapes.entries()) await createShape(namespaceOf(i), shape);
  const watches = shapes.map((_, i) => raw.get(`${resourcePath(RESOURCE, namespaceOf(i))}?watch=1&timeoutSeconds=${ROUNDS * shapes.length * SECONDS * 4 + 60}`).catch(() => undefined));

  const puts = shapes.map((): number[] => []);
  const patches = shapes.map((): number[] => []);
  for (let round = 0; round < ROUNDS; round++) {
    // The order turned each round: the machine's load drifts.
    for (let k = 0; k < shapes.length; k++) {
      const i = (round + k) % shapes.length;
      puts[i]!.push(await cpuPerWrite(namespaceOf(i), shapes[i]!, 'put'));
      patches[i]!.push(await cpuPerWrite(namespaceOf(i), shapes[i]!, 'patch'));
    }
  }
  const rows = await Promise.all(shapes.map(async (shape, i) => {
    const got = await raw.get(resourcePath(RESOURCE, namespaceOf(i), crName(0)));
    return {
      shape: shape.name, 'GET bytes': got.length, 'JSON nodes': jsonNodes(JSON.parse(got.toString('utf8'))),
      'PUT /status ms': Number(median(puts[i]!).toFixed(3)), 'PUT vs the peer': Number((median(puts[i]!) / median(puts[0]!)).toFixed(3)),
      'spec patch ms': Number(median(patches[i]!).toFixed(3)), 'patch vs the peer': Number((median(patches[i]!) / median(patches[0]!)).toFixed(3)),
    };
  }));
  console.log(`\nkube-apiserver CPU per write (ms; medians of ${ROUNDS} rounds of ${SECONDS} s, ${LOOPS} CRs written ${LOOPS} at once)`);
  console.table(rows);
  for (const [i, shape] of shapes.entries()) console.log(`${shape.name}: PUT ${puts[i]!.map((x) => x.toFixed(2)).join(' ')}; patch ${patches[i]!.map((x) => x.toFixed(2)).join(' ')}`);
  void watches;
} finally {
  await sidecar.close();
  await raw.close().catch(() => undefined);
  await plane.stop();
}
process.exit(0);

/** One CR walked Running -> End (kept there) by an operator in this process: okt's CR at rest. */
async function walkOne(): Promise<Database> {
  const namespace = 'object-cost-walk';
  await createNamespace(raw, namespace);
  const subject = { graph: databaseGraph, resource: RESOURCE, sidecar, rawNamespace: namespace, firstHop: 'Running' };
  const operator = await operatorFor({ kc, kubeconfigPath: plane.kubeconfigPath, pids: [], raw }, subject, namespace, { statusFormat: 'compact' });
  const path = resourcePath(RESOURCE, namespace, crName(0));
  const at = (state: string) => waitFor(`the walked CR Ready at ${state}`, async () => {
    const obj = JSON.parse((await raw.get(path)).toString('utf8')) as Database;
    return obj.status?.state === state && obj.status.observedGeneration === obj.metadata.generation && findCondition(obj.status.conditions, 'Ready')?.status === 'True' ? obj : undefined;
  }, { timeoutMs: 60_000 });
  try {
    await raw.send('POST', resourcePath(RESOURCE, namespace), { apiVersion: `${RESOURCE.group}/${RESOURCE.version}`, kind: RESOURCE.kind, metadata: { name: crName(0) }, spec: { desiredState: 'Running', onLeaf: 'Keep' } });
    await at('Running');
    await raw.send('PATCH', path, { spec: { desiredState: 'End' } });
    await at('End');
    // Its last events delivered and nothing left to write: the CR at rest.
    await waitFor('the operator at rest', async () => (operator.lifecycle.controller.queue.length + operator.lifecycle.controller.queue.processing === 0 ? true : undefined), { timeoutMs: 30_000 });
    return await at('End');
  } finally {
    await operator.stop();
  }
}

async function createShape(namespace: string, shape: Shape): Promise<void> {
  await createNamespace(raw, namespace);
  await inParallel(LOOPS, LOOPS, async (i) => {
    await raw.send('POST', resourcePath(RESOURCE, namespace), {
      apiVersion: `${RESOURCE.group}/${RESOURCE.version}`, kind: RESOURCE.kind,
      metadata: { name: crName(i), ...(shape.finalizers === undefined || shape.finalizersPatched ? {} : { finalizers: shape.finalizers }) }, spec: { desiredState: 'End', onLeaf: 'Keep' },
    });
    if (shape.finalizersPatched) await raw.send('PATCH', `${resourcePath(RESOURCE, namespace, crName(i))}?fieldManager=okt`, { metadata: { finalizers: shape.finalizers } });
    const created = JSON.parse((await raw.get(resourcePath(RESOURCE, namespace, crName(i)))).toString('utf8')) as KubeObject;
    await raw.put(resourcePath(RESOURCE, namespace, crName(i), 'status'), { ...created, status: shape.status });
  });
}

/** kube-apiserver's CPU ms per write of this kind, LOOPS loops each writing its own CR for SECONDS. */
async function cpuPerWrite(namespace: string, shape: Shape, kind: 'put' | 'patch'): Promise<number> {
  const objects = await Promise.all(Array.from({ length: LOOPS }, async (_, i) => JSON.parse((await raw.get(resourcePath(RESOURCE, namespace, crName(i)))).toString('utf8')) as KubeObject));
  let writes = 0;
  const [before = NaN] = cpuSeconds([apiServer]);
  const deadline = performance.now() + SECONDS * 1000;
  await Promise.all(objects.map(async (_, w) => {
    // Every write changes something: an unchanged object is not written to etcd at all.
    for (let i = 1; performance.now() < deadline; i += 1) {
      if (kind === 'put') objects[w] = await raw.put(resourcePath(RESOURCE, namespace, crName(w), 'status'), putBody(objects[w]!, shape, { ...shape.status, observedGeneration: 2 + (i % 2) }));
      else await raw.send('PATCH', resourcePath(RESOURCE, namespace, crName(w)), { spec: { desiredState: i % 2 === 0 ? 'End' : 'Running' } });
      writes += 1;
    }
  }));
  const [after = NaN] = cpuSeconds([apiServer]);
  return ((after - before) * 1000) / writes;
}

/** The body of a status PUT: the whole object with `status`, or the status alone with what names the object. */
function putBody(object: KubeObject, shape: Shape, status: Record<string, unknown>): KubeObject {
  if (!shape.statusAlone) return { ...object, status };
  const { apiVersion, kind, metadata: { name, namespace, uid, resourceVersion } } = object;
  return { apiVersion, kind, metadata: { name, namespace, uid, resourceVersion }, status };
}

function jsonNodes(value: unknown): number {
  if (Array.isArray(value)) return 1 + value.reduce((sum: number, v) => sum + jsonNodes(v), 0);
  if (typeof value === 'object' && value !== null) return 1 + Object.values(value).reduce((sum: number, v) => sum + jsonNodes(v), 0);
  return 1;
}
