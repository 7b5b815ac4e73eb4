// The operator end to end, against a control plane started here (etcd + kube-apiserver on loopback)
// and a real in-process sidecar whose actions are no-op module functions raising nothing (every node rests):
// 1. the practical limit: raw status merge patches per second to the same API server, same run, and
//    around the multi-hop walk raw status updates too (PUT of /status: how okt writes status);
// 2. transitions per second for 100, 1,000 and 5,000 CRs walking Start>Running>Servicing>Running>Stopping,
//    then Running -> End in one spec edit, then a chain of nine transitions per spec edit;
// 3. API writes and reads per transition in the steady state (the three spec-driven steps);
// 4. spec change (patch sent; patch acknowledged) -> transition CloudEvent at a loopback receiver,
//    p50/p99, one CR alone and 100 CRs moving at once; the p99 of the 100 against its floor (their spec
//    patches and status updates at the raw rates measured right around it), OKT_BENCH_E2E_ROUNDS
//    rounds, the round of median p99 against its floor reported;
// 5. operator heap per watched CR after GC (what the operator holds: the heap with it against the heap
//    after an operator on an empty namespace ran and stopped, in one process), at 1,000 and 5,000 CRs;
// 6. scale-out: the multi-hop walk by one `okt run --shard 0/1` process (the median round of 8.), then by two shards;
// 7. with OKT_BENCH_E2E_PROFILE=1, where kube-apiserver's CPU goes during raw patches and during the
//    like-for-like walks of okt run and the controller-runtime peer (pprof; needs `go`);
// 8. more baselines for the multi-hop and chain walks: raw status patches of a minimal CR (a CRD of the
//    bench's own whose status is one short string), and two peer operators of the Go module bench/peer
//    walking as many new CRs Running -> End: a controller-runtime one written as kubebuilder users write
//    theirs (the baseline of e2e.multihop_vs_cr_peer_ratio) and a hand-tuned client-go one (the baseline
//    of e2e.multihop_vs_peer_ratio); their transitions/s, CPU per transition and memory per CR against
//    okt's. Like for like, okt walks the same too as an `okt run` process, its walk seen by the bench's
//    informer as the peers' are: CPU of each process, the API server's CPU, HTTP requests counted by the
//    API server (its /metrics) and the sidecar, reconciles (okt run's /metrics), and the walk against its
//    write bound (raw patches and updates around it). Each operator process (okt run, each peer) first
//    creates and walks OKT_BENCH_E2E_WARM_UP more CRs the same way, so the walk measured is its steady
//    state (the warm-up walk's CPU is printed beside it). okt in this process, okt run and the two peers run
//    in rounds, the order of the four turned each round; each side's figures are those of its median
//    round by transitions/s;
// 9. the size of a CR at rest as etcd stores it (managedFields included), read from etcd itself.
// At the end, the goal table of bench/goals.ts: each goal's figure of this run, met or not.
// Knobs: OKT_BENCH_E2E_SIZES (default "100,1000,5000"), OKT_BENCH_E2E_MEMORY (default "1000,5000"),
// OKT_BENCH_E2E_ROUNDS (default 3: the rounds of 8. and of 4.), OKT_BENCH_E2E_WARM_UP (default 2000: 6. and 8.),
// OKT_BENCH_E2E_WORKERS / OKT_BENCH_E2E_CONNECTIONS (the operator's settings), OKT_BENCH_SECONDS,
// OKT_BENCH_E2E_PROFILE (and OKT_BENCH_E2E_PROFILE_OUT, a directory to keep the walks' profiles in), OKT_BENCH_E2E_STATUS_FORMAT (default packed, the cheapest for the API server: okt's walks and
// its raw baselines write status in it; 9. also walks one CR in each other format to compare its size).
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { tmpdir } from 'node:os';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { PerformanceObserver } from 'node:perf_hooks';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { KubeConfig } from '@kubernetes/client-node';
import { Pool } from 'undici';
import { databaseGraph } from '../graphs/database.ts';
import { loadGraph, type Graph } from '../src/graph/index.ts';
import { startControlPlane, type ControlPlane } from '../src/cluster/index.ts';
import { ensurePeerBinary, type PeerCommand } from '../src/cluster/peer.ts';
import { createPlanner } from '../src/plan/index.ts';
import { createLogger, Informer } from '../src/controller/index.ts';
import { startOperator, type LifecycleResourceRef, type RunningOperator } from '../src/controller/lifecycle/index.ts';
import { createLifecycleModel, step } from '../src/controller/lifecycle/step.ts';
import { expandStatus } from '../src/controller/lifecycle/status/compact-format.ts';
import { encodeStatus } from '../src/controller/lifecycle/status/encoding.ts';
import { freePorts } from '../src/net/free-ports.ts';
import { LIFECYCLE_EVENT_TYPES, createLifecycleEventReceiver, type LifecycleEvent } from '../src/events/index.ts';
import { generateCrd } from '../src/kube/crd.ts';
import { findCondition } from '../src/kube/conditions.ts';
import { generateFinalizerPolicy } from '../src/kube/finalizer-policy.ts';
import { LIFECYCLE_FINALIZER, type LifecycleStatus } from '../src/kube/lifecycle-resource.ts';
import { parseStatusFormat, STATUS_FORMATS, type StatusFormat } from '../src/kube/status-format.ts';
import { KubeTransport, resourcePath, type ApiVerb, type KubeObject } from '../src/kube/transport/index.ts';
import { connectionFromKubeConfig } from '../src/kube/transport/connection.ts';
import { waitFor } from '../src/util/wait-for.ts';
import { sidecarRequestCounts, startNoopSidecar, type NoopSidecar } from '../sidecar/noop.ts';
import { SidecarClient } from '../src/sidecar-client/index.ts';
import { apiServerRequestCounts, operatorRequests, requestDelta, type RequestCounts } from './api-requests.ts';
import { E2E_GOALS, goalTable, latencyFloorMs, writeBoundPerSecond } from './goals.ts';
import { stackGraph } from './objects-graph.ts';

export const RESOURCE = { group: 'okt.dev', version: 'v1alpha1', plural: 'databases', kind: 'Database' } as const;
const CHAINS = { group: 'okt.dev', version: 'v1alpha1', plural: 'chains', kind: 'Chain' } as const;
/** Start -> Step1 -> ... -> Step8 -> End: eight nodes with (no-op) actions between the entry and a leaf. */
const CHAIN_STEPS = 8;
const chainGraph = loadGraph({
  name: 'chain',
  description: 'A line of steps: one spec edit walks it from Start to End.',
  entry: 'Start',
  nodes: Object.fromEntries([
    ['Start', { children: ['Step1'] }],
    ...Array.from({ length: CHAIN_STEPS }, (_, i) => [`Step${i + 1}`, { children: [i + 1 === CHAIN_STEPS ? 'End' : `Step${i + 2}`] }]),
    ['End', {}],
  ]),
});
export const CRDS = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', namespaced: false } as const;
/** The minimal CR of the second raw baseline: a group of its own, a status of one short string. */
const MINIMAL = { group: 'bench.okt.dev', version: 'v1', plural: 'minimals', kind: 'Minimal' } as const;
const MINIMAL_NAMESPACE = 'e2e-raw-minimal';
const minimalCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${MINIMAL.plural}.${MINIMAL.group}` },
  spec: {
    group: MINIMAL.group,
    scope: 'Namespaced',
    names: { plural: MINIMAL.plural, singular: 'minimal', kind: MINIMAL.kind, listKind: `${MINIMAL.kind}List` },
    versions: [{
      name: MINIMAL.version,
      served: true,
      storage: true,
      subresources: { status: {} },
      schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object' }, status: { type: 'object', properties: { state: { type: 'string' } } } } } },
    }],
  },
};
/** The Go module of the peer operators, and its two commands. */
export const PEER_MODULE = fileURLToPath(new URL('./peer', import.meta.url));
export interface Peer extends PeerCommand {
  /** Names its rows and its CRs' namespaces. */
  label: string;
  slug: string;
  /** A Node script this Node runs, instead of the module's Go command. */
  script?: string;
}
const CLIENT_GO_PEER: Peer = { pkg: './client-go', name: 'okt-peer', label: 'client-go peer', slug: 'peer' };
export const CONTROLLER_RUNTIME_PEER: Peer = { pkg: './controller-runtime', name: 'okt-cr-peer', label: 'controller-runtime peer', slug: 'cr-peer' };
/** The Go peers' walk in Node on okt's stack, no more (bench/peer/node/peer.ts): what the runtime costs. */
const NODE_PEER: Peer = { pkg: '', name: 'okt-node-peer', label: 'Node peer', slug: 'node-peer', script: fileURLToPath(new URL('./peer/node/peer.ts', import.meta.url)) };
const NAMESPACES = { group: '', version: 'v1', plural: 'namespaces', namespaced: false } as const;
/** The objects the controller-runtime peer makes per CR with `--objects`: the stack graph's. */
const OWNED_PER_CR = stackGraph.objects.length;
/** A walk: the desired node CRs are created with (and the transitions that takes), then its spec edits and the transitions they take. */
export interface Walk {
  id: string;
  created: string;
  createdTransitions: number;
  steps: readonly string[];
  transitions: number;
}
/** One node per spec edit, each node with an action: a commit write and a Ready write per transition. */
export const ONE_NODE_PER_EDIT: Walk = { id: 'walk', created: 'Running', createdTransitions: 1, steps: ['Servicing', 'Running', 'Stopping'], transitions: 3 };
/** Running -> End in one spec edit: two transitions; the middle node's completion rides on the next commit. */
export const MULTI_HOP: Walk = { id: 'multihop', created: 'Running', createdTransitions: 1, steps: ['End'], transitions: 2 };
/**
 * The chain, Start -> End in one spec edit: nine transitions, each step's completion riding on the next
 * commit, the leaf Ready in its own: what a walk costs when transitions, not spec edits, dominate.
 */
const CHAIN: Walk = { id: 'chain', created: 'Start', createdTransitions: 0, steps: ['End'], transitions: CHAIN_STEPS + 1 };

/** A graph the bench walks: its CRs, a sidecar with no-op actions for it, a namespace of CRs for raw patches. */
export interface Subject {
  graph: Graph;
  resource: LifecycleResourceRef;
  sidecar: NoopSidecar;
  rawNamespace: string;
  /** A node one transition from the entry: the raw patches carry the status of that transition. */
  firstHop: string;
}
const WALK = ONE_NODE_PER_EDIT.steps;
export const CONCURRENCY = 64;
const SECONDS = Number(process.env.OKT_BENCH_SECONDS ?? 5);
const SIZES = numbers(process.env.OKT_BENCH_E2E_SIZES ?? '100,1000,5000');
const MEMORY_SIZES = numbers(process.env.OKT_BENCH_E2E_MEMORY ?? '1000,5000');
export const ROUNDS = Number(process.env.OKT_BENCH_E2E_ROUNDS ?? 3);
const WORKERS = Number(process.env.OKT_BENCH_E2E_WORKERS ?? 64);
/**
 * 6. and 8. The CRs each operator process of a like-for-like walk creates with the measured ones and
 * walks Running -> End first, unmeasured but for its CPU: the measured walk is then the process's
 * steady state, as a long-running operator's is. A fresh Node process's first transitions cost it more
 * (V8 compiles the code they run as it goes): okt run's CPU per transition was 0.88 ms over the walk of
 * its first 1,000 CRs (run F), 0.65 ms after this warm-up (run G, its warm-up walk 0.655 ms).
 */
export const WARM_UP = Number(process.env.OKT_BENCH_E2E_WARM_UP ?? 2000);
const CONNECTIONS = Number(process.env.OKT_BENCH_E2E_CONNECTIONS ?? 16);
export const STATUS_FORMAT = parseStatusFormat(process.env.OKT_BENCH_E2E_STATUS_FORMAT ?? 'packed', 'OKT_BENCH_E2E_STATUS_FORMAT');
const LATENCY_CRS = 100;
const SIDECAR_OPERATIONS = 400;
/** CRs moved one at a time (twice each) before the 100 move at once. */
const LATENCY_ALONE = 20;
const execFileAsync = promisify(execFile);

type Database = KubeObject & { spec: { desiredState: string }; status?: LifecycleStatus };

function numbers(list: string): number[] {
  return list.split(',').filter((s) => s.trim() !== '').map(Number);
}

/**
 * The baseline client: an undici Pool of keep-alive HTTP/1.1 connections and nothing else (no
 * counters, no typed errors), the client behind the "raw undici" figure of measured-here.md.
 */
export class RawApi {
  readonly #pool: Pool;
  readonly #headers: Record<string, string>;
  readonly #prefix: string;

  static async open(kc: KubeConfig, connections: number): Promise<RawApi> {
    return new RawApi(await connectionFromKubeConfig(kc), connections);
  }

  constructor(settings: Awaited<ReturnType<typeof connectionFromKubeConfig>>, connections: number) {
    this.#pool = new Pool(settings.origin, { connections, allowH2: false, connect: { ...settings.tls, keepAlive: true } });
    this.#headers = { ...settings.headers, accept: 'application/json' };
    this.#prefix = settings.pathPrefix;
  }

  async get(path: string): Promise<Buffer> {
    const response = await this.#pool.request({ path: this.#prefix + path, method: 'GET', headers: this.#headers });
    const bytes = Buffer.from(await response.body.arrayBuffer());
    if (response.statusCode >= 300) throw new Error(`GET ${path}: ${response.statusCode} ${bytes.toString('utf8', 0, 300)}`);
    return bytes;
  }

  /** PUT: the object as the server answered it (what the next PUT of it sends back). */
  async put(path: string, body: unknown): Promise<KubeObject> {
    return JSON.parse(await this.#write('PUT', path, body)) as KubeObject;
  }

  /** POST: the object as the server answered it. */
  async post(path: string, body: unknown): Promise<KubeObject> {
    return JSON.parse(await this.#write('POST', path, body)) as KubeObject;
  }

  async send(method: 'POST' | 'PATCH', path: string, body: unknown): Promise<void> {
    await this.#write(method, path, body);
  }

  /** The answer's text (unparsed: most callers only need to know it succeeded). */
  async #write(method: 'POST' | 'PATCH' | 'PUT', path: string, body: unknown): Promise<string> {
    const contentType = method === 'PATCH' ? 'application/merge-patch+json' : 'application/json';
    const response = await this.#pool.request({ path: this.#prefix + path, method, headers: { ...this.#headers, 'content-type': contentType }, body: JSON.stringify(body) });
    const text = await response.body.text();
    if (response.statusCode >= 300) throw new Error(`${method} ${path}: ${response.statusCode} ${text.slice(0, 300)}`);
    return text;
  }

  close(): Promise<void> {
    return this.#pool.close();
  }
}

/** CPU seconds (user + system) used so far by each of these processes, from /proc. */
export function cpuSeconds(pids: readonly number[]): number[] {
  return pids.map((pid) => {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
  });
}

/** Runs `one(i)` for i in [0, count) on `concurrency` loops. */
export async function inParallel(count: number, concurrency: number, one: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) await one(next++);
  }));
}

export const crName = (i: number) => `db${String(i).padStart(5, '0')}`;
const dbPath = (namespace: string, name?: string, subresource?: string) => resourcePath(RESOURCE, namespace, name, subresource);

export async function createNamespace(raw: RawApi, name: string, labels?: Record<string, string>): Promise<void> {
  await raw.send('POST', resourcePath(NAMESPACES, undefined), { apiVersion: 'v1', kind: 'Namespace', metadata: { name, ...(labels === undefined ? {} : { labels }) } });
}

/** The label of the namespaces okt walks CRs in: okt's finalizer policy binds to those, not to the peers'. */
const OKT_NAMESPACE_LABELS = { 'bench.okt.dev/operator': 'okt' };

/** A namespace okt walks CRs in (see installFinalizerPolicy). */
export const createOktNamespace = (raw: RawApi, name: string) => createNamespace(raw, name, OKT_NAMESPACE_LABELS);

const ADMISSION_V1 = '/apis/admissionregistration.k8s.io/v1';

/** Creates the two objects of generateFinalizerPolicy (the policy, then its binding). */
export async function createFinalizerPolicy(raw: RawApi, [policy, binding]: readonly object[]): Promise<void> {
  await raw.send('POST', `${ADMISSION_V1}/mutatingadmissionpolicies`, policy);
  await raw.send('POST', `${ADMISSION_V1}/mutatingadmissionpolicybindings`, binding);
}

/**
 * okt's finalizer policy (`okt manifests --finalizer-policy`, docs/operator.md "The finalizer at
 * creation") for okt's namespaces, where the API server serves it (Kubernetes 1.36 and later), as an
 * operator author on such a release installs okt: its CRs are created with the finalizer, and carry no
 * managedFields entry of okt's for it. Whether it is in force.
 */
export async function installFinalizerPolicy(raw: RawApi, resources: readonly LifecycleResourceRef[]): Promise<boolean> {
  const served = JSON.parse((await raw.get(ADMISSION_V1)).toString()) as { resources: { name: string }[] };
  if (!served.resources.some((r) => r.name === 'mutatingadmissionpolicies')) return false;
  const probed = resources[0]!;
  await createFinalizerPolicy(raw, generateFinalizerPolicy(resources, { name: 'okt-bench', namespaceLabels: OKT_NAMESPACE_LABELS }));
  // The API server takes a new policy up from its informer, a moment after it is stored: a dry-run creation says when.
  const probe = 'e2e-finalizer-policy-probe';
  await createOktNamespace(raw, probe);
  await waitFor('okt\'s finalizer policy in force', async () => {
    const created = await raw.post(`${resourcePath(probed, probe)}?dryRun=All`, { apiVersion: `${probed.group}/${probed.version}`, kind: probed.kind, metadata: { name: 'probe' }, spec: { desiredState: 'Running' } });
    return (created.metadata.finalizers ?? []).includes(LIFECYCLE_FINALIZER) || undefined;
  }, { timeoutMs: 30_000 });
  return true;
}

/** `count` CRs of `resource` (databases by default), created with `desiredState` (Running by default). */
export async function createResources(raw: RawApi, namespace: string, count: number, { desiredState = 'Running', finalizers, resource = RESOURCE }: { desiredState?: string; finalizers?: string[]; resource?: LifecycleResourceRef } = {}): Promise<void> {
  await inParallel(count, CONCURRENCY, (i) => raw.send('POST', resourcePath(resource, namespace), {
    apiVersion: `${resource.group}/${resource.version}`, kind: resource.kind,
    // Keep: a CR walked to End stays (the default would delete it), so every walk ends on a Ready CR.
    metadata: finalizers ? { name: crName(i), finalizers } : { name: crName(i) }, spec: { desiredState, onLeaf: 'Keep' },
  }));
}

const TRANSITION_UID = '00000000-0000-0000-0000-000000000000';

/** The status the operator writes for the subject's first transition (what a transition write carries), from the pure step. */
function transitionStatus(subject: Subject): LifecycleStatus {
  const effects = step({
    model: createLifecycleModel(subject.graph),
    resource: { uid: TRANSITION_UID, generation: 1, deleting: false, spec: { desiredState: subject.firstHop }, status: undefined },
    sidecar: { kind: 'answered', epoch: '00000000-0000-0000-0000-000000000000', observedEvents: [] },
    delivered: 0,
    now: new Date().toISOString(),
    outboxLimit: 64,
    statusFormat: STATUS_FORMAT,
  });
  const status = effects.status as LifecycleStatus;
  // What the reconciler stores: compact and packed are encodings of the step's status at the API boundary.
  return encodeStatus(status, TRANSITION_UID, STATUS_FORMAT) as LifecycleStatus;
}

/** 1. Status merge patches per second to the subject's raw CRs, `loops` loops each on its own CR, for `seconds`. */
async function rawPatchRate(raw: RawApi, subject: Subject, loops: number, seconds: number): Promise<number> {
  const status = transitionStatus(subject);
  return patchRate(raw, (w) => resourcePath(subject.resource, subject.rawNamespace, crName(w), 'status'), (i) => ({ status: { ...status, transition: i } }), loops, seconds);
}

/**
 * 1b. The same status written the way okt writes it: a PUT of /status, each loop sending back the
 * object its last answer held (so its resourceVersion is the precondition).
 */
async function rawUpdateRate(raw: RawApi, subject: Subject, loops: number, seconds: number): Promise<number> {
  const status = transitionStatus(subject);
  const pathOf = (w: number) => resourcePath(subject.resource, subject.rawNamespace, crName(w), 'status');
  const objects = await Promise.all(Array.from({ length: loops }, async (_, w) => JSON.parse((await raw.get(pathOf(w))).toString('utf8')) as KubeObject));
  return writeRate(loops, seconds, async (w, i) => {
    objects[w] = await raw.put(pathOf(w), { ...objects[w], status: { ...status, transition: i } });
  });
}

/** 8. The same against the minimal CRs: a status of one short string (`{"state":"s17"}`). */
function minimalPatchRate(raw: RawApi, loops: number, seconds: number): Promise<number> {
  return patchRate(raw, (w) => resourcePath(MINIMAL, MINIMAL_NAMESPACE, crName(w), 'status'), (i) => ({ status: { state: `s${i}` } }), loops, seconds);
}

function patchRate(raw: RawApi, pathOf: (loop: number) => string, patchOf: (i: number) => unknown, loops: number, seconds: number): Promise<number> {
  return writeRate(loops, seconds, (w, i) => raw.send('PATCH', pathOf(w), patchOf(i)));
}

/** Writes per second of `loops` loops, each writing its own CR for `seconds`: loop w's i-th write is `write(w, i)`. */
async function writeRate(loops: number, seconds: number, write: (loop: number, i: number) => Promise<void>): Promise<number> {
  let done = 0;
  const deadline = performance.now() + seconds * 1000;
  const start = performance.now();
  await Promise.all(Array.from({ length: loops }, async (_, w) => {
    // Every write changes something (i): an unchanged object is not written to etcd at all.
    for (let i = 1; performance.now() < deadline; i += 1) {
      await write(w, i);
      done += 1;
    }
  }));
  return done / ((performance.now() - start) / 1000);
}

/**
 * Edits spec.desiredState of the CRs `names` of `resource` to `desired` (CONCURRENCY at once) and waits
 * until `tracker` sees each there, Ready; `wait` wraps that wait (a peer's, failing as soon as it exits).
 */
export async function moveAll(raw: RawApi, tracker: ReadinessTracker, resource: LifecycleResourceRef, namespace: string, names: readonly string[], desired: string, timeoutMs: number, wait = (ready: Promise<void>) => ready): Promise<void> {
  const ready = tracker.expect(names, desired, timeoutMs);
  await inParallel(names.length, CONCURRENCY, (i) => raw.send('PATCH', resourcePath(resource, namespace, names[i]!), { spec: { desiredState: desired } }));
  await wait(ready);
}

/** Resolves when every expected CR sits at `desired`, Ready, for its current generation, as the operator's cache shows it. */
export class ReadinessTracker {
  #desired = '';
  #pending = new Set<string>();
  #resolve: (() => void) | undefined;
  /** Where the CR's node is: okt's `status.state`, or the peer's conventional `status.phase`. */
  readonly #field: 'state' | 'phase';
  /** The Ready condition each pending CR was last seen with: a timeout says why they wait. */
  readonly #lastReady = new Map<string, string>();

  constructor(informer: Pick<Informer<KubeObject>, 'addHandler'>, field: 'state' | 'phase' = 'state') {
    this.#field = field;
    const check = (obj: KubeObject) => this.#check(obj as Database);
    informer.addHandler({ onAdd: check, onUpdate: (_old, obj) => check(obj) });
  }

  expect(names: Iterable<string>, desired: string, timeoutMs: number): Promise<void> {
    this.#desired = desired;
    this.#pending = new Set(names);
    this.#lastReady.clear();
    const done = new Promise<void>((resolve) => (this.#resolve = resolve));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${this.#pending.size} CRs not Ready at ${desired} after ${timeoutMs / 1000} s (e.g. ${[...this.#pending].slice(0, 3).map((name) => `${name}: ${this.#lastReady.get(name) ?? 'not seen'}`).join('; ')})`)), timeoutMs);
    });
    return Promise.race([done, timeout]).finally(() => clearTimeout(timer));
  }

  #check(obj: Database): void {
    const name = obj.metadata.name ?? '';
    if (!this.#pending.has(name)) return;
    const status = obj.status as (LifecycleStatus & { phase?: string }) | undefined;
    const ready = findCondition(status?.conditions ?? [], 'Ready');
    this.#lastReady.set(name, `at ${status?.[this.#field] ?? 'no node'}, Ready ${ready?.status ?? 'unset'} ${ready?.reason ?? ''} ${ready?.message ?? ''}`.trim());
    if (status?.[this.#field] !== this.#desired || status.observedGeneration !== obj.metadata.generation) return;
    if (ready?.status !== 'True') return;
    this.#pending.delete(name);
    if (this.#pending.size === 0) this.#resolve?.();
  }
}

/** The control plane a bench area walks on. */
export interface Plane {
  kc: KubeConfig;
  kubeconfigPath: string;
  /** This process (operator, sidecar, bench client) and the control plane's processes. */
  pids: { name: string; pid: number }[];
  raw: RawApi;
}

interface Bench extends Plane {
  database: Subject;
  chain: Subject;
}

export function operatorFor(bench: Plane, subject: Subject, namespace: string, extra: { sink?: string; statusFormat?: StatusFormat } = {}): Promise<RunningOperator> {
  return startOperator({
    kubeConfig: bench.kc,
    graph: subject.graph,
    resource: subject.resource,
    statusFormat: extra.statusFormat ?? STATUS_FORMAT,
    namespace,
    workers: WORKERS,
    connections: CONNECTIONS,
    sidecar: { url: subject.sidecar.url, token: subject.sidecar.token },
    // No sink: events count as delivered once committed (the sink's cost is measured in 4.).
    events: extra.sink === undefined ? {} : { sink: extra.sink },
    health: false,
    logger: createLogger({ level: 'silent' }),
  });
}

/** The HTTP requests the sidecar has answered, every route but its /metrics. */
export async function sidecarRequests(sidecar: NoopSidecar): Promise<number> {
  return Object.values(await sidecarRequestCounts(sidecar)).reduce((sum, n) => sum + n, 0);
}

async function reconcileCounts(operator: RunningOperator): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const value of (await operator.manager.metrics.reconcileTotal.get()).values) {
    const result = String(value.labels.result);
    counts[result] = (counts[result] ?? 0) + value.value;
  }
  return counts;
}

export interface WalkFigures {
  namespace: string;
  crs: number;
  /** Raw status patches per second at concurrency 64: the mean of the runs right before and after the walk. */
  raw: number;
  /** Every transition of the walk, creation included (checked against the sum of status.transition). */
  transitions: number;
  seconds: number;
  /** Transitions per second while the spec edits drive them: from the first edit to the last CR Ready. */
  perSecond: number;
  steadyTransitions: number;
  steadySeconds: number;
  /** Cores used during the steady walk, per process of Bench.pids. */
  cpu: number[];
  /** CPU ms of this process (operator, sidecar, bench client: process.cpuUsage()) per spec-driven transition. */
  selfCpuMsPerTransition: number;
  /** Raw status patches per second of the minimal CR around the walk (NaN: not measured for this walk). */
  minimalRaw: number;
  /** Raw status updates (PUT, okt's way of writing status) per second of the subject's CRs, measured with minimalRaw. */
  rawUpdate: number;
  steadyWrites: number;
  steadyReads: number;
  /** The operator's writes and reads over the whole walk, creation included (with `settle`, until its writes stopped). */
  writes: number;
  reads: number;
  /** The same, by verb. */
  byVerb: Record<ApiVerb, number>;
  reconciles: number;
  /** HTTP requests the sidecar answered during the spec-driven walk (starts, looks, long-polls). */
  sidecarCalls: number;
  errors: number;
}

/** How long an operator goes without a write before its walk counts as settled. */
const SETTLE_MS = 2_000;

/** Resolves once `count()` has not moved for SETTLE_MS and `idle()` holds (two minutes at most). */
export async function settled(count: () => number | Promise<number>, idle: () => boolean = () => true): Promise<void> {
  let last = await count();
  let since = performance.now();
  for (const until = performance.now() + 120_000; performance.now() < until;) {
    await sleep(100);
    const now = await count();
    if (now !== last || !idle()) {
      last = now;
      since = performance.now();
      continue;
    }
    if (performance.now() - since >= SETTLE_MS) return;
  }
  throw new Error(`the operator still wrote after two minutes (${last} writes)`);
}

/** A namespace of its own for each round of a walk. */
const roundNamespace = (base: string, round: number) => (round === 0 ? base : `${base}-r${round}`);

/**
 * 2. and 3. `count` CRs of the subject created at `route.created`, then walked through its spec edits,
 * all at once. `settle`: the operator's writes are counted until they stop (SETTLE_MS without one,
 * its queue empty), not only until the last CR is Ready: a write that follows the last Ready counts too.
 */
export async function walk(bench: Plane, subject: Subject, count: number, route: Walk, { minimal = false, round = 0, settle = false } = {}): Promise<WalkFigures> {
  const namespace = roundNamespace(`e2e-${route.id}-${count}`, round);
  await createOktNamespace(bench.raw, namespace);
  // The machine is shared and its load drifts: the baseline is measured right before and right after.
  const rawBefore = await rawPatchRate(bench.raw, subject, CONCURRENCY, SECONDS);
  const minimalBefore = minimal ? await minimalPatchRate(bench.raw, CONCURRENCY, SECONDS) : NaN;
  const updateBefore = minimal ? await rawUpdateRate(bench.raw, subject, CONCURRENCY, SECONDS) : NaN;
  const operator = await operatorFor(bench, subject, namespace);
  try {
    const tracker = new ReadinessTracker(operator.lifecycle.informer);
    const names = Array.from({ length: count }, (_, i) => crName(i));
    const timeoutMs = 60_000 + count * 300;
    const start = performance.now();
    const first = operator.transport.counters.snapshot();
    const firstByVerb = { ...operator.transport.counters.byVerb };
    const ready = tracker.expect(names, route.created, timeoutMs);
    await createResources(bench.raw, namespace, count, { desiredState: route.created, resource: subject.resource });
    await ready;
    // The steady state: the finalizer and first-sight writes are behind; every CR rests, Ready.
    const before = operator.transport.counters.snapshot();
    const steadyStart = performance.now();
    const cpuBefore = cpuSeconds(bench.pids.map((p) => p.pid));
    const selfBefore = process.cpuUsage();
    const reconcilesBefore = await reconcileCounts(operator);
    const sidecarBefore = await sidecarRequests(subject.sidecar);
    for (const desired of route.steps) await moveAll(bench.raw, tracker, subject.resource, namespace, names, desired, timeoutMs);
    const seconds = (performance.now() - start) / 1000;
    const steadySeconds = (performance.now() - steadyStart) / 1000;
    const self = process.cpuUsage(selfBefore);
    const cpu = cpuSeconds(bench.pids.map((p) => p.pid)).map((used, i) => (used - (cpuBefore[i] ?? 0)) / steadySeconds);
    if (settle) await settled(() => operator.transport.counters.writes, () => operator.lifecycle.controller.queue.length + operator.lifecycle.controller.queue.processing === 0);
    const after = operator.transport.counters.snapshot();
    const afterByVerb = { ...operator.transport.counters.byVerb };
    const reconcilesAfter = await reconcileCounts(operator);
    const sidecarCalls = (await sidecarRequests(subject.sidecar)) - sidecarBefore;
    let transitions = 0;
    for (const obj of operator.lifecycle.informer.store.list()) transitions += transitionsOf(obj as Database);
    const expected = count * (route.createdTransitions + route.transitions);
    if (transitions !== expected) throw new Error(`expected ${expected} transitions, status.transition sums to ${transitions}`);
    const delta = (key: string) => (reconcilesAfter[key] ?? 0) - (reconcilesBefore[key] ?? 0);
    await operator.stop();
    const rawAfter = await rawPatchRate(bench.raw, subject, CONCURRENCY, SECONDS);
    const minimalAfter = minimal ? await minimalPatchRate(bench.raw, CONCURRENCY, SECONDS) : NaN;
    const updateAfter = minimal ? await rawUpdateRate(bench.raw, subject, CONCURRENCY, SECONDS) : NaN;
    return {
      namespace,
      raw: (rawBefore + rawAfter) / 2,
      minimalRaw: (minimalBefore + minimalAfter) / 2,
      rawUpdate: (updateBefore + updateAfter) / 2,
      selfCpuMsPerTransition: ((self.user + self.system) / 1000) / (count * route.transitions),
      crs: count,
      transitions,
      seconds,
      perSecond: (count * route.transitions) / steadySeconds,
      steadyTransitions: count * route.transitions,
      steadySeconds,
      cpu,
      steadyWrites: after.writes - before.writes,
      steadyReads: after.reads - before.reads,
      writes: after.writes - first.writes,
      reads: after.reads - first.reads,
      byVerb: Object.fromEntries(Object.entries(afterByVerb).map(([verb, n]) => [verb, n - firstByVerb[verb as ApiVerb]])) as Record<ApiVerb, number>,
      reconciles: delta('success') + delta('error') + delta('requeue_after'),
      sidecarCalls,
      errors: delta('error'),
    };
  } finally {
    await operator.stop();
  }
}


/** The reconciles an `okt run` process has finished, every result, from its /metrics (`okt_reconcile_total`). */
async function processReconciles(metricsPort: number): Promise<number> {
  const answer = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  if (!answer.ok) throw new Error(`okt run's /metrics answered ${answer.status}`);
  let total = 0;
  for (const line of (await answer.text()).split('\n')) {
    const sample = /^okt_reconcile_total\{[^}]*\} (\S+)$/.exec(line);
    if (sample) total += Number(sample[1]);
  }
  return total;
}

/** The walk of `okt run` processes, seen by the bench's informer as the peers' walks are. */
export interface OktRunFigures {
  namespace: string;
  crs: number;
  /** Transitions per second from the first spec edit to the last CR Ready, as the bench's informer sees it. */
  perSecond: number;
  /** Raw status merge patches and raw status updates (PUT) per second: the means of before and after the walk. */
  raw: number;
  rawUpdate: number;
  /** CPU ms per spec-driven transition (utime + stime from /proc) of the operator processes, of this process (sidecar, bench client) and of kube-apiserver, over the same window. */
  operatorCpuMsPerTransition: number;
  /** With a warm-up (WARM_UP): the operator processes' CPU ms per transition of the warm-up walk. */
  warmUpOperatorCpuMsPerTransition?: number;
  benchCpuMsPerTransition: number;
  apiServerCpuMsPerTransition: number;
  /**
   * From the first spec edit until the operator settled (SETTLE_MS without a request to the API server
   * or the sidecar, nor a reconcile): its requests to the API server as the API server counts them
   * (`operatorRequests`: watches and the bench's spec edits left out), by kind; the sidecar's requests
   * as the sidecar counts them; per spec-driven transition.
   */
  apiRequestsPerTransition: number;
  apiRequestsByKind: RequestCounts;
  sidecarRequestsPerTransition: number;
  /** Reconciles per spec-driven transition, every result, from the processes' /metrics (`okt_reconcile_total`), until settled. */
  reconcilesPerTransition: number;
  /** 7. kube-apiserver's CPU profile of the walk's first WALK_PROFILE_SECONDS, when profiled. */
  profile?: Buffer;
}

/** The HTTP requests of a settled walk, counted by the API server and the sidecar, not by the operator. */
async function requestsUntilSettled(bench: Plane, subject: Subject, before: { api: RequestCounts; sidecar: number }, specEdits: number, more: () => Promise<number> = async () => 0) {
  const count = async () => {
    const delta = requestDelta(before.api, await apiServerRequestCounts((p) => bench.raw.get(p)));
    return { delta, total: operatorRequests(delta, subject.resource.group, specEdits) + (await sidecarRequests(subject.sidecar)) + (await more()) };
  };
  await settled(async () => (await count()).total);
  const delta = requestDelta(before.api, await apiServerRequestCounts((p) => bench.raw.get(p)));
  const byKind = Object.fromEntries(Object.entries(delta).filter(([key]) => !key.startsWith('WATCH') && key.split(' ')[1]?.startsWith(`${subject.resource.group}/`)));
  const specPatches = `PATCH ${subject.resource.group}/${subject.resource.plural}`;
  byKind[specPatches] = (byKind[specPatches] ?? 0) - specEdits;
  if (byKind[specPatches] === 0) delete byKind[specPatches];
  return { api: operatorRequests(delta, subject.resource.group, specEdits), byKind, sidecar: (await sidecarRequests(subject.sidecar)) - before.sidecar };
}

/** The arguments of an `okt run` of the checkout at `root` (its bin/okt.js and graph) on the databases of `namespace`, as the like-for-like walk runs it, and `more`. */
export function oktRunArgs(root: string, namespace: string, sidecar: { url: string; tokenFile: string }, more: readonly string[] = []): string[] {
  return [
    path.join(root, 'bin/okt.js'), 'run', '--graph', path.join(root, 'graphs/database.ts'),
    '--group', RESOURCE.group, '--version', RESOURCE.version, '--kind', RESOURCE.kind, '--namespace', namespace,
    '--workers', String(WORKERS), '--log-level', 'warn', '--status-format', STATUS_FORMAT,
    '--sidecar-url', sidecar.url, '--sidecar-token-file', sidecar.tokenFile, ...more,
  ];
}

/**
 * `count` databases and `warmUp` more created at Running in `namespace` for the `okt run` processes
 * watching it; the `warmUp` ones walked Running -> End (WARM_UP) and the operators settled (`quiet`
 * unmoved for SETTLE_MS). The names of the `count` to measure, the time a walk of them may take, and
 * the operators' CPU ms per transition of the warm-up walk (`operatorCpu`: their CPU seconds so far).
 */
export async function createWarmedUp(raw: RawApi, tracker: ReadinessTracker, namespace: string, count: number, warmUp: number, operatorCpu: () => number, quiet: () => Promise<number>): Promise<{ names: string[]; timeoutMs: number; warmUpCpuMsPerTransition?: number }> {
  const names = Array.from({ length: count }, (_, i) => crName(i));
  const warmNames = Array.from({ length: warmUp }, (_, i) => crName(count + i));
  const timeoutMs = 60_000 + (count + warmUp) * 300;
  const created = tracker.expect([...names, ...warmNames], MULTI_HOP.created, timeoutMs);
  await createResources(raw, namespace, count + warmUp);
  await created;
  if (warmUp === 0) return { names, timeoutMs };
  const before = operatorCpu();
  await moveAll(raw, tracker, RESOURCE, namespace, warmNames, 'End', timeoutMs);
  const warmUpCpuMsPerTransition = ((operatorCpu() - before) * 1000) / (warmUp * MULTI_HOP.transitions);
  await settled(quiet);
  return { names, timeoutMs, warmUpCpuMsPerTransition };
}

/**
 * 6. and 8. `count` new CRs walked Running -> End (the multi-hop walk) by `shards` `okt run --shard i/N`
 * processes, readiness seen by an informer of the bench: the like-for-like side of the peers' walks
 * (one shard), and scale-out (two). Each process serves /metrics on a free loopback port: its reconciles.
 */
async function oktRunWalk(bench: Bench, count: number, { shards = 1, round = 0, profiled = false, warmUp = 0 } = {}): Promise<OktRunFigures> {
  const namespace = roundNamespace(`e2e-okt-run-${shards}-${count}`, round);
  await createOktNamespace(bench.raw, namespace);
  const rawBefore = await rawPatchRate(bench.raw, bench.database, CONCURRENCY, SECONDS);
  const updateBefore = await rawUpdateRate(bench.raw, bench.database, CONCURRENCY, SECONDS);
  const dir = mkdtempSync(path.join(tmpdir(), 'okt-bench-okt-run-'));
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, bench.database.sidecar.token);
  const transport = await KubeTransport.fromKubeConfig(bench.kc);
  const informer = new Informer<KubeObject>({ transport, resource: RESOURCE, namespace, logger: createLogger({ level: 'silent' }) });
  const tracker = new ReadinessTracker(informer);
  informer.start();
  const metricsPorts = await freePorts(shards);
  const operators: ChildProcess[] = metricsPorts.map((port, i) =>
    spawn(process.execPath, oktRunArgs(fileURLToPath(new URL('..', import.meta.url)), namespace, { url: bench.database.sidecar.url, tokenFile }, [
      '--shard', `${i}/${shards}`, '--health-port', String(port), '--health-host', '127.0.0.1',
    ]), { env: { ...process.env, KUBECONFIG: bench.kubeconfigPath }, stdio: 'ignore' }),
  );
  const reconciles = async () => (await Promise.all(metricsPorts.map(processReconciles))).reduce((sum, n) => sum + n, 0);
  try {
    await informer.waitForSync();
    const apiServer = bench.pids.findIndex((p) => p.name === 'kube-apiserver');
    const pids = [...operators.map((o) => o.pid ?? NaN), bench.pids[apiServer]?.pid ?? NaN];
    const operatorCpu = () => cpuSeconds(pids.slice(0, -1)).reduce((sum, s) => sum + s, 0);
    const { names, timeoutMs, warmUpCpuMsPerTransition: warmUpOperatorCpuMsPerTransition } = await createWarmedUp(
      bench.raw, tracker, namespace, count, warmUp, operatorCpu, async () => (await reconciles()) + (await sidecarRequests(bench.database.sidecar)),
    );
    const before = { api: await apiServerRequestCounts((p) => bench.raw.get(p)), sidecar: await sidecarRequests(bench.database.sidecar), reconciles: await reconciles() };
    const cpuBefore = cpuSeconds(pids);
    const selfBefore = process.cpuUsage();
    const start = performance.now();
    const profile = profiled ? apiServerProfileOf(bench, WALK_PROFILE_SECONDS) : undefined;
    await moveAll(bench.raw, tracker, RESOURCE, namespace, names, 'End', timeoutMs);
    const transitions = count * MULTI_HOP.transitions;
    const perSecond = transitions / ((performance.now() - start) / 1000);
    const self = process.cpuUsage(selfBefore);
    const used = cpuSeconds(pids).map((s, i) => s - (cpuBefore[i] ?? 0));
    const apiServerCpu = used.pop() ?? NaN;
    const requests = await requestsUntilSettled(bench, bench.database, before, count, reconciles);
    const reconciled = (await reconciles()) - before.reconciles;
    let transitionSum = 0;
    for (const obj of informer.store.list()) transitionSum += transitionsOf(obj as Database);
    const expected = (count + warmUp) * (MULTI_HOP.createdTransitions + MULTI_HOP.transitions);
    if (transitionSum !== expected) throw new Error(`okt run: expected ${expected} transitions, status.transition sums to ${transitionSum}`);
    for (const operator of operators) operator.kill('SIGTERM');
    const rawAfter = await rawPatchRate(bench.raw, bench.database, CONCURRENCY, SECONDS);
    const updateAfter = await rawUpdateRate(bench.raw, bench.database, CONCURRENCY, SECONDS);
    console.log(`\nokt run, ${shards} shard(s), ${count} CRs Running -> End: ${perSecond.toFixed(1)} transitions/s; raw patches/s before ${rawBefore.toFixed(0)}, after ${rawAfter.toFixed(0)}; raw updates/s before ${updateBefore.toFixed(0)}, after ${updateAfter.toFixed(0)}`);
    return {
      namespace,
      crs: count,
      perSecond,
      raw: (rawBefore + rawAfter) / 2,
      rawUpdate: (updateBefore + updateAfter) / 2,
      operatorCpuMsPerTransition: (used.reduce((sum, s) => sum + s, 0) * 1000) / transitions,
      ...(warmUpOperatorCpuMsPerTransition !== undefined && { warmUpOperatorCpuMsPerTransition }),
      benchCpuMsPerTransition: (self.user + self.system) / 1000 / transitions,
      apiServerCpuMsPerTransition: (apiServerCpu * 1000) / transitions,
      apiRequestsPerTransition: requests.api / transitions,
      apiRequestsByKind: requests.byKind,
      sidecarRequestsPerTransition: requests.sidecar / transitions,
      reconcilesPerTransition: reconciled / transitions,
      ...(profile && { profile: await profile }),
    };
  } finally {
    for (const operator of operators) operator.kill('SIGKILL');
    await informer.stop();
    await transport.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The graph's routes as the peer reads them, `next[desired][current]`, from the planner okt walks with. */
function peerRoutes(graph: Graph): { graph: string; entry: string; next: Record<string, Record<string, string>>; actions: string[] } {
  const planner = createPlanner(graph);
  const next: Record<string, Record<string, string>> = {};
  for (const desired of graph.nodeNames) {
    const hops: Record<string, string> = {};
    for (const current of graph.nodeNames) {
      const plan = planner.next(current, desired);
      if (plan.kind === 'move') hops[current] = plan.to;
    }
    next[desired] = hops;
  }
  return { graph: graph.name, entry: graph.entry, next, actions: graph.nodeNames.filter((name) => graph.node(name).hasAction) };
}

export interface PeerFigures {
  namespace: string;
  crs: number;
  perSecond: number;
  raw: number;
  /** CPU ms per transition: the peer process; this process meanwhile (the sidecar it calls, the bench's client); kube-apiserver. */
  cpuMsPerTransition: number;
  /** With a warm-up (WARM_UP): the peer's CPU ms per transition of the warm-up walk. */
  warmUpCpuMsPerTransition?: number;
  benchCpuMsPerTransition: number;
  apiServerCpuMsPerTransition: number;
  /**
   * RSS (after a GC and FreeOSMemory) of a fresh peer with every walked CR cached and reconciled once,
   * minus the same on an empty namespace, per CR; and the live Go heap (HeapAlloc) the same way.
   */
  rssBytesPerCr: number;
  heapBytesPerCr: number;
  /** The peer's status updates, 409s and reconciles during the spec-driven walk. */
  updatesPerTransition: number;
  conflicts: number;
  reconcilesPerTransition: number;
  sidecarCallsPerTransition: number;
  /** As for `okt run` (OktRunFigures): counted by the API server and the sidecar, until the peer settled. */
  apiRequestsPerTransition: number;
  apiRequestsByKind: RequestCounts;
  sidecarRequestsPerTransition: number;
  /**
   * With `objects`: the peer's write requests over the whole walk, creation included (status updates,
   * 409s and the objects' creates and updates), until they stopped; and the live Go heap per owned
   * object its cache holds (a fresh peer with the objects' kinds watched, less one without, per object).
   */
  writes: number;
  /** Of `writes`, those of the spec-driven walk (after every CR was Ready at its first node). */
  steadyWrites: number;
  heapBytesPerOwnedObject: number;
  /** 7. kube-apiserver's CPU profile of the walk's first WALK_PROFILE_SECONDS, when profiled. */
  profile?: Buffer;
}

/** A running peer: one JSON answer per command line on its stdin. */
class PeerProcess {
  readonly child: ChildProcess;
  readonly name: string;
  readonly #lines: AsyncIterator<string>;
  readonly #exited: Promise<string>;

  constructor(binary: string, name: string, args: string[]) {
    this.name = name;
    this.child = spawn(binary, args, { stdio: ['pipe', 'pipe', 'inherit'] });
    this.#lines = createInterface({ input: this.child.stdout! })[Symbol.asyncIterator]();
    this.#exited = new Promise((resolve) => this.child.once('exit', (code, signal) => resolve(`${name} exited (${code ?? signal}); its stderr is above`)));
  }

  /** `work`, or a failure as soon as the peer exits. */
  orExit<T>(work: Promise<T>): Promise<T> {
    let settled = false;
    return Promise.race([
      work.finally(() => (settled = true)),
      this.#exited.then((why) => (settled ? work : Promise.reject(new Error(why)))),
    ]);
  }

  async line(): Promise<string> {
    const next = await this.#lines.next();
    if (next.done) throw new Error(`${this.name} exited (${this.child.exitCode ?? this.child.signalCode})`);
    return next.value;
  }

  async ask<T>(command: 'mem' | 'stats'): Promise<T> {
    this.child.stdin!.write(`${command}\n`);
    return JSON.parse(await this.line()) as T;
  }

  /** Closes its stdin (it exits), SIGKILL after 5 s. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.child.stdin!.end();
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  }
}

type PeerStats = { updates: number; conflicts: number; errors: number; reconciles: number; sidecarCalls: number; skippedStale: number; objectWrites: number };
type PeerMemory = { rss: number; heapInuse: number; heapAlloc: number; cached: number };

/**
 * The peer's counters once it has counted `updates` status updates (2 s at most): the bench's watch can
 * see an update before the peer has counted it (the answer to its request still on the way).
 */
async function settledStats(peer: PeerProcess, updates: number): Promise<PeerStats> {
  let stats = await peer.ask<PeerStats>('stats');
  for (const until = performance.now() + 2_000; stats.updates < updates && performance.now() < until;) {
    await sleep(20);
    stats = await peer.ask<PeerStats>('stats');
  }
  return stats;
}

/**
 * 8. A peer baseline: `count` new CRs of the subject (database CRs by default) walked as `route` says
 * (Running -> End, the multi-hop walk, by default) by a peer of bench/peer, with the same workers, the
 * same routes and the same sidecar; readiness (status.phase at the desired node, Ready, for the
 * generation) seen by an informer of the bench. `objects`: the controller-runtime peer makes the
 * stack graph's three objects per CR (`--objects`).
 */
export async function peerWalk(bench: Plane, subject: Subject, side: Peer, binary: string, count: number, round: number, { route = MULTI_HOP, objects = false, profiled = false, warmUp = 0 } = {}): Promise<PeerFigures> {
  const resource = subject.resource;
  const namespace = roundNamespace(`e2e-${objects ? 'objects-' : ''}${side.slug}-${count}`, round);
  await createNamespace(bench.raw, namespace);
  const rawBefore = await rawPatchRate(bench.raw, subject, CONCURRENCY, SECONDS);
  const dir = mkdtempSync(path.join(tmpdir(), 'okt-bench-peer-'));
  writeFileSync(path.join(dir, 'token'), subject.sidecar.token);
  writeFileSync(path.join(dir, 'routes.json'), JSON.stringify(peerRoutes(subject.graph)));
  const transport = await KubeTransport.fromKubeConfig(bench.kc);
  const informer = new Informer<KubeObject>({ transport, resource, namespace, logger: createLogger({ level: 'silent' }) });
  const tracker = new ReadinessTracker(informer, 'phase');
  informer.start();
  const startPeer = async (watched: string, withObjects = objects) => {
    const started = new PeerProcess(binary, side.name, [
      ...(side.script === undefined ? [] : ['--expose-gc', side.script]),
      '--kubeconfig', bench.kubeconfigPath, '--group', resource.group, '--version', resource.version, '--resource', resource.plural,
      '--namespace', watched, '--workers', String(WORKERS), '--routes', path.join(dir, 'routes.json'),
      '--sidecar-url', subject.sidecar.url, '--sidecar-token-file', path.join(dir, 'token'),
      ...(withObjects ? ['--objects'] : []),
    ]);
    try {
      const synced = await started.line();
      if (synced !== 'synced') throw new Error(`${side.name} said ${synced}`);
      return started;
    } catch (error) {
      await started.stop();
      throw error;
    }
  };
  /**
   * As okt's operator.bytes_per_cr is measured: a fresh process once it has cached every CR of the
   * namespace and reconciled each once (all at rest: no write), against a fresh one on an empty namespace.
   */
  const atRest = async (watched: string, crs: number, withObjects = objects): Promise<PeerMemory & PeerStats> => {
    const fresh = await startPeer(watched, withObjects);
    try {
      let stats = await fresh.ask<PeerStats>('stats');
      for (const until = performance.now() + 30_000; stats.reconciles < crs && performance.now() < until;) {
        await sleep(50);
        stats = await fresh.ask<PeerStats>('stats');
      }
      return { ...stats, ...(await fresh.ask<PeerMemory>('mem')) };
    } finally {
      await fresh.stop();
    }
  };
  const emptyNamespace = `${namespace}-empty`;
  await createNamespace(bench.raw, emptyNamespace);
  const peer = await startPeer(namespace);
  try {
    await informer.waitForSync();
    const names = Array.from({ length: count }, (_, i) => crName(i));
    const warmNames = Array.from({ length: warmUp }, (_, i) => crName(count + i));
    const timeoutMs = 60_000 + (count + warmUp) * 300;
    const ready = tracker.expect([...names, ...warmNames], route.created, timeoutMs);
    await createResources(bench.raw, namespace, count + warmUp, { desiredState: route.created, resource });
    await peer.orExit(ready);
    let statsBefore = await settledStats(peer, count + warmUp);
    const apiServer = bench.pids.findIndex((p) => p.name === 'kube-apiserver');
    const pids = [peer.child.pid ?? NaN, bench.pids[apiServer]?.pid ?? NaN];
    const walk = async (walked: readonly string[]) => {
      for (const desired of route.steps) await moveAll(bench.raw, tracker, resource, namespace, walked, desired, timeoutMs, (moved) => peer.orExit(moved));
    };
    let warmUpCpuMsPerTransition: number | undefined;
    if (warmUp > 0) {
      const [warmUpBefore = NaN] = cpuSeconds(pids);
      await walk(warmNames);
      warmUpCpuMsPerTransition = (((cpuSeconds(pids)[0] ?? NaN) - warmUpBefore) * 1000) / (warmUp * route.transitions);
      const warmUpdates = statsBefore.updates + warmUp * route.transitions;
      await settled(async () => (await peer.ask<PeerStats>('stats')).reconciles + (await sidecarRequests(subject.sidecar)));
      statsBefore = await settledStats(peer, warmUpdates);
    }
    const requestsBefore = { api: await apiServerRequestCounts((p) => bench.raw.get(p)), sidecar: await sidecarRequests(subject.sidecar) };
    const cpuBefore = cpuSeconds(pids);
    const selfBefore = process.cpuUsage();
    const start = performance.now();
    const profile = profiled ? apiServerProfileOf(bench, WALK_PROFILE_SECONDS) : undefined;
    await walk(names);
    const transitions = count * route.transitions;
    const perSecond = transitions / ((performance.now() - start) / 1000);
    const self = process.cpuUsage(selfBefore);
    const [peerCpu = NaN, apiServerCpu = NaN] = cpuSeconds(pids).map((used, i) => used - (cpuBefore[i] ?? 0));
    const requests = await requestsUntilSettled(bench, subject, requestsBefore, count * route.steps.length);
    let statsAfter = await settledStats(peer, statsBefore.updates + transitions);
    const writesOf = (stats: PeerStats) => stats.updates + stats.conflicts + stats.objectWrites;
    if (objects) {
      await settled(async () => writesOf(await peer.ask<PeerStats>('stats')));
      statsAfter = await peer.ask<PeerStats>('stats');
    }
    await peer.stop();
    const empty = await atRest(emptyNamespace, 0);
    const cached = count + warmUp;
    const full = await atRest(namespace, cached);
    if (full.cached !== cached || full.reconciles < cached) throw new Error(`a fresh ${side.name} cached ${full.cached} CRs and reconciled ${full.reconciles} times, expected ${cached}`);
    if (full.updates !== 0 || full.objectWrites !== 0) throw new Error(`a fresh ${side.name} wrote ${full.updates} statuses and ${full.objectWrites} objects of CRs at rest`);
    // The owned objects' part of the cache: the same peer, the objects' kinds not watched.
    const withoutOwned = objects ? await atRest(namespace, cached, false) : undefined;
    const rawAfter = await rawPatchRate(bench.raw, subject, CONCURRENCY, SECONDS);
    console.log(`\n${side.label}${objects ? ' (objects)' : ''}: ${statsAfter.updates - statsBefore.updates} status updates, ${statsAfter.conflicts - statsBefore.conflicts} conflicts (409), ${statsAfter.objectWrites - statsBefore.objectWrites} object writes, ${statsAfter.errors - statsBefore.errors} other errors, ${statsAfter.reconciles - statsBefore.reconciles} reconciles (${statsAfter.skippedStale - statsBefore.skippedStale} skipped on a cache older than its own write), ${statsAfter.sidecarCalls - statsBefore.sidecarCalls} sidecar calls for ${transitions} transitions`);
    return {
      namespace,
      crs: count,
      perSecond,
      raw: (rawBefore + rawAfter) / 2,
      cpuMsPerTransition: (peerCpu * 1000) / transitions,
      benchCpuMsPerTransition: (self.user + self.system) / 1000 / transitions,
      apiServerCpuMsPerTransition: (apiServerCpu * 1000) / transitions,
      ...(warmUpCpuMsPerTransition !== undefined && { warmUpCpuMsPerTransition }),
      rssBytesPerCr: (full.rss - empty.rss) / cached,
      heapBytesPerCr: (full.heapAlloc - empty.heapAlloc) / cached,
      updatesPerTransition: (statsAfter.updates - statsBefore.updates) / transitions,
      conflicts: statsAfter.conflicts - statsBefore.conflicts,
      reconcilesPerTransition: (statsAfter.reconciles - statsBefore.reconciles) / transitions,
      sidecarCallsPerTransition: (statsAfter.sidecarCalls - statsBefore.sidecarCalls) / transitions,
      apiRequestsPerTransition: requests.api / transitions,
      apiRequestsByKind: requests.byKind,
      sidecarRequestsPerTransition: requests.sidecar / transitions,
      writes: writesOf(statsAfter),
      steadyWrites: writesOf(statsAfter) - writesOf(statsBefore),
      heapBytesPerOwnedObject: withoutOwned === undefined ? NaN : (full.heapAlloc - withoutOwned.heapAlloc) / (OWNED_PER_CR * cached),
      ...(profile && { profile: await profile }),
    };
  } finally {
    await peer.stop();
    await informer.stop();
    await transport.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The etcd client URL of the plane's etcd, from its command line. */
function etcdUrl(plane: ControlPlane): string {
  const etcd = plane.processes.find((p) => p.name === 'etcd');
  const argv = etcd ? readFileSync(`/proc/${etcd.pid}/cmdline`, 'utf8').split('\0') : [];
  const url = argv.find((a) => a.startsWith('--listen-client-urls='))?.split('=')[1]?.split(',')[0];
  if (url === undefined) throw new Error('cannot find the etcd client URL of the control plane');
  return url;
}

/**
 * 9. A CR as etcd stores it (the API server stores custom resources as JSON, managedFields included):
 * its value's bytes, read through etcd's v3 JSON gateway (POST /v3/kv/range), key
 * /registry/<group>/<plural>/<namespace>/<name>. Also the JSON of a GET, for comparison.
 */
async function storedBytes(bench: Bench, etcd: string, resource: LifecycleResourceRef, namespace: string, name: string): Promise<{ etcd: number; get: number; value: string }> {
  const key = `/registry/${resource.group}/${resource.plural}/${namespace}/${name}`;
  const response = await fetch(`${etcd}/v3/kv/range`, { method: 'POST', body: JSON.stringify({ key: Buffer.from(key).toString('base64') }) });
  if (!response.ok) throw new Error(`etcd range ${key}: ${response.status} ${await response.text()}`);
  const { kvs } = (await response.json()) as { kvs?: { value: string }[] };
  const stored = kvs?.[0]?.value;
  if (stored === undefined) throw new Error(`etcd has no ${key}`);
  const value = Buffer.from(stored, 'base64');
  if (value[0] !== '{'.charCodeAt(0)) throw new Error(`etcd's value of ${key} is not JSON (${value.subarray(0, 8).toString('hex')}...)`);
  const got = await bench.raw.get(resourcePath(resource, namespace, name));
  return { etcd: value.length, get: got.length, value: value.toString('utf8') };
}

/** A CR's status.transition as okt reads it (a compact status leaves it out when its path summary counts it). */
function transitionsOf(obj: Database): number {
  return (expandStatus(obj.status, obj.metadata.uid ?? '') as LifecycleStatus | undefined)?.transition ?? 0;
}

/** Latency samples of one case (ms): from the spec patch sent, and from its answer (the change stored). */
interface LatencySamples {
  fromSent: number[];
  fromStored: number[];
}

/**
 * 4. Spec change -> the transition CloudEvent at a loopback receiver: one CR moving alone (the
 * operator's own delay), then 100 CRs moving at once (one sample per CR per step). Measured from the
 * patch sent (what a user waits) and from the patch answered (the change stored: what the operator can
 * act on; the rest of the wait is the API server's queue of the 100 edits themselves).
 */
async function eventLatency(bench: Bench, round: number): Promise<{ alone: LatencySamples; together: LatencySamples; longestGcPauseMs: number }> {
  const namespace = roundNamespace('e2e-latency', round);
  await createOktNamespace(bench.raw, namespace);
  const sent = new Map<string, number>();
  const stored = new Map<string, number>();
  const eventAt = new Map<string, number>();
  let samples: LatencySamples = { fromSent: [], fromStored: [] };
  let target = '';
  let arrived: (() => void) | undefined;
  const receiver = await createLifecycleEventReceiver({
    onEvent: (event: LifecycleEvent) => {
      if (event.type !== LIFECYCLE_EVENT_TYPES.transition || event.data?.to !== target) return;
      const name = event.source.split('/').pop() ?? '';
      if (!sent.has(name) || eventAt.has(name)) return;
      eventAt.set(name, performance.now());
      if (eventAt.size === sent.size) arrived?.();
    },
  });
  const operator = await operatorFor(bench, bench.database, namespace, { sink: receiver.url });
  try {
    const tracker = new ReadinessTracker(operator.lifecycle.informer);
    const move = async (names: string[], desired: string) => {
      // The previous step's events out first: each sample then measures one step alone.
      await waitFor('every committed event delivered', async () => allDelivered(operator) || undefined, { timeoutMs: 60_000, intervalMs: 20 });
      target = desired;
      for (const map of [sent, stored, eventAt]) map.clear();
      const all = new Promise<void>((resolve) => (arrived = resolve));
      const settled = tracker.expect(names, desired, 120_000);
      for (const name of names) sent.set(name, performance.now());
      await Promise.all(names.map(async (name) => {
        await bench.raw.send('PATCH', dbPath(namespace, name), { spec: { desiredState: desired } });
        stored.set(name, performance.now());
      }));
      await all;
      await settled;
      for (const [name, at] of eventAt) {
        samples.fromSent.push(at - (sent.get(name) ?? NaN));
        // The event can beat the patch's answer to this process by a hair: that is no wait at all.
        samples.fromStored.push(Math.max(0, at - (stored.get(name) ?? NaN)));
      }
    };
    const names = Array.from({ length: LATENCY_CRS }, (_, i) => crName(i));
    const ready = tracker.expect(names, 'Running', 120_000);
    await createResources(bench.raw, namespace, LATENCY_CRS);
    await ready;
    for (const name of names.slice(0, LATENCY_ALONE)) {
      await move([name], 'Servicing');
      await move([name], 'Running');
    }
    const alone = samples;
    samples = { fromSent: [], fromStored: [] };
    // This process's GC pauses while the CRs move at once (the operator's, and the bench's own garbage).
    const pauses: number[] = [];
    const observer = new PerformanceObserver((list) => pauses.push(...list.getEntries().map((entry) => entry.duration)));
    observer.observe({ entryTypes: ['gc'] });
    for (const desired of WALK) await move(names, desired);
    observer.disconnect();
    return { alone, together: samples, longestGcPauseMs: Math.max(0, ...pauses) };
  } finally {
    await operator.stop();
    await receiver.close();
  }
}

/** 4. One round of the latency case and its floor, from the raw rates right before and right after it. */
interface LatencyRound {
  alone: LatencySamples;
  together: LatencySamples;
  rawPatch: number;
  rawUpdate: number;
  floorMs: number;
  p99VsFloor: number;
  /** The bench process's longest GC pause while the CRs moved at once (the operator runs in it). */
  longestGcPauseMs: number;
}

async function latencyRound(bench: Bench, round: number): Promise<LatencyRound> {
  const before = [await rawPatchRate(bench.raw, bench.database, CONCURRENCY, SECONDS), await rawUpdateRate(bench.raw, bench.database, CONCURRENCY, SECONDS)] as const;
  const { alone, together, longestGcPauseMs } = await eventLatency(bench, round);
  const rawPatch = (before[0] + (await rawPatchRate(bench.raw, bench.database, CONCURRENCY, SECONDS))) / 2;
  const rawUpdate = (before[1] + (await rawUpdateRate(bench.raw, bench.database, CONCURRENCY, SECONDS))) / 2;
  const floorMs = latencyFloorMs(LATENCY_CRS, rawPatch, rawUpdate);
  const p99 = percentile([...together.fromSent].sort((a, b) => a - b), 99);
  return { alone, together, rawPatch, rawUpdate, floorMs, p99VsFloor: p99 / floorMs, longestGcPauseMs };
}

/**
 * Cost centers of kube-apiserver (1.35-1.37) in a write of a CR: a label and the function whose
 * cumulative share it is (matched by the end of its name).
 */
const API_SERVER_COST_CENTERS = [
  ['update', 'the whole update: read, patch, decode, validate, encode, write to etcd', 'etcd3.(*store).GuaranteedUpdate'],
  ['schema_decode', 'decoding with the CRD schema (metadata, managedFields included, coerced)', 'apiserver.schemaCoercingDecoder.Decode'],
  ['managed_fields_update', 'managedFields: the field manager', '.(*FieldManager).UpdateNoErrors'],
  ['managed_fields_read', 'managedFields: read out of the object', 'unstructured.(*Unstructured).GetManagedFields'],
  ['merge_patch', 'the JSON merge patch itself', '.doMergePatch'],
  ['validation', 'validating the update: the OpenAPI schema (ratcheting), CEL rules, metadata', 'registry/rest.ValidateUpdate'],
  ['encode', 'encoding the object for etcd', 'versioning.(*codec).Encode'],
  ['watch_decode', 'watch: decoding each change coming back from etcd', 'etcd3.(*watchChan).transform'],
  ['gc', 'garbage collection', 'runtime.gcBgMarkWorker'],
] as const;
type CostCenter = (typeof API_SERVER_COST_CENTERS)[number][0];

/** Whether OKT_BENCH_E2E_PROFILE asks for kube-apiserver's profiles (7.; they are taken only with `go` on PATH to read them). */
const PROFILE = process.env.OKT_BENCH_E2E_PROFILE === '1';
/** 7. The seconds of a like-for-like walk profiled from its first spec edit (shorter than the fastest walk of 1,000 CRs). */
const WALK_PROFILE_SECONDS = 4;

/** 7. A CPU profile of kube-apiserver (its /debug/pprof) over the next `seconds`. */
function apiServerProfileOf(bench: Plane, seconds: number): Promise<Buffer> {
  return bench.raw.get(`/debug/pprof/profile?seconds=${seconds}`);
}

/** The cumulative share of the API server's CPU in each cost center of a profile, read with `go tool pprof`. */
async function costCenterShares(profile: Buffer): Promise<Map<CostCenter, number>> {
  const dir = mkdtempSync(path.join(tmpdir(), 'okt-bench-pprof-'));
  try {
    const file = path.join(dir, 'kube-apiserver.pprof');
    writeFileSync(file, profile);
    const { stdout } = await execFileAsync('go', ['tool', 'pprof', '-top', '-cum', '-nodecount=2000', file], { maxBuffer: 16 << 20 });
    // Rows: flat flat% sum% cum cum% name
    const cumShare = new Map<string, number>();
    for (const line of stdout.split('\n')) {
      const columns = line.trim().split(/\s+/);
      if (columns.length >= 6 && columns[4]?.endsWith('%')) cumShare.set(columns.slice(5).join(' '), Number.parseFloat(columns[4]) / 100);
    }
    return new Map(API_SERVER_COST_CENTERS.map(([key, , fn]) => [key, [...cumShare].find(([name]) => name.endsWith(fn))?.[1] ?? 0]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function hasGo(): Promise<boolean> {
  const go = await execFileAsync('go', ['version']).then(() => true, () => false);
  if (!go) console.log('\nno `go` on PATH: no profile of the API server (provisioning installs it; see okt cluster provision)');
  return go;
}

/** 7. Where kube-apiserver's CPU goes while raw status patches run: the share of each cost center. */
async function rawPatchProfile(bench: Bench, seconds: number): Promise<Record<string, number>> {
  const [profile] = await Promise.all([apiServerProfileOf(bench, seconds), rawPatchRate(bench.raw, bench.database, CONCURRENCY, seconds + 1)]);
  const shares = await costCenterShares(profile);
  const figures: Record<string, number> = {};
  const rows = API_SERVER_COST_CENTERS.map(([key, label]) => {
    const share = shares.get(key) ?? 0;
    figures[`e2e.apiserver_cpu_share_${key}`] = fixed(share, 3);
    return { 'cost center': label, 'share of the API server CPU': `${(share * 100).toFixed(1)}%` };
  });
  console.log(`\nkube-apiserver CPU during ${seconds} s of raw status patches (64 at once), by cost center (cumulative, they overlap):`);
  console.table(rows);
  return figures;
}

/**
 * 7. Where kube-apiserver's CPU per transition goes in the like-for-like walks, okt run's against the
 * controller-runtime peer's: each cost center's share of its walk's profile times the walk's API
 * server CPU per transition (ms), and okt's extra.
 */
async function walkProfiles(okt: { apiServerCpuMsPerTransition: number; profile?: Buffer }, peer: { apiServerCpuMsPerTransition: number; profile?: Buffer }): Promise<Record<string, number>> {
  if (okt.profile === undefined || peer.profile === undefined) return {};
  const out = process.env.OKT_BENCH_E2E_PROFILE_OUT;
  if (out !== undefined) {
    writeFileSync(path.join(out, 'okt-run.pprof'), okt.profile);
    writeFileSync(path.join(out, 'cr-peer.pprof'), peer.profile);
  }
  const [oktShares, peerShares] = await Promise.all([costCenterShares(okt.profile), costCenterShares(peer.profile)]);
  const figures: Record<string, number> = {};
  const rows = API_SERVER_COST_CENTERS.map(([key, label]) => {
    const oktMs = (oktShares.get(key) ?? 0) * okt.apiServerCpuMsPerTransition;
    const peerMs = (peerShares.get(key) ?? 0) * peer.apiServerCpuMsPerTransition;
    figures[`e2e.okt_run_apiserver_cpu_ms_${key}`] = fixed(oktMs, 3);
    figures[`e2e.cr_peer_apiserver_cpu_ms_${key}`] = fixed(peerMs, 3);
    return { 'cost center': label, 'okt run ms': fixed(oktMs, 3), 'controller-runtime peer ms': fixed(peerMs, 3), 'okt extra ms': fixed(oktMs - peerMs, 3) };
  });
  console.log(`\nkube-apiserver CPU per transition of the like-for-like walks by cost center (each walk's first ${WALK_PROFILE_SECONDS} s profiled; share x its CPU per transition; cumulative, they overlap):`);
  console.table(rows);
  return figures;
}

function allDelivered(operator: RunningOperator): boolean {
  return operator.lifecycle.informer.store.list().every((obj) => operator.events.delivered(obj.metadata.uid ?? '') >= ((obj as Database).status?.sequence ?? 0));
}

/** 5. The heap after GC of a fresh operator process with `count` CRs of `namespace` in its cache, reconciled once. */
const EMPTY_NAMESPACE = 'e2e-mem-empty';

/** In a fresh process: the heap after an operator on an empty namespace ran and stopped, then with an operator on `namespace`, every CR cached. */
async function operatorHeap(bench: Bench, namespace: string, count: number): Promise<{ heapUsed: number; heapBefore: number; writes: number }> {
  const script = fileURLToPath(new URL('./operator-heap.ts', import.meta.url));
  const args = ['--expose-gc', script, bench.kubeconfigPath, namespace, String(count), bench.database.sidecar.url, bench.database.sidecar.token, EMPTY_NAMESPACE, STATUS_FORMAT];
  const { stdout } = await execFileAsync(process.execPath, args, { maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as { heapUsed: number; heapBefore: number; writes: number };
}

/** 9. One CR walked as 2. walks them, by an operator writing `statusFormat`: its namespace, the CR at rest. */
async function walkInFormat(bench: Bench, statusFormat: StatusFormat): Promise<string> {
  const namespace = `e2e-walk-${statusFormat}`;
  await createOktNamespace(bench.raw, namespace);
  const operator = await operatorFor(bench, bench.database, namespace, { statusFormat });
  try {
    const tracker = new ReadinessTracker(operator.lifecycle.informer);
    const names = [crName(0)];
    const ready = tracker.expect(names, ONE_NODE_PER_EDIT.created, 60_000);
    await createResources(bench.raw, namespace, 1, { desiredState: ONE_NODE_PER_EDIT.created });
    await ready;
    for (const desired of WALK) await moveAll(bench.raw, tracker, RESOURCE, namespace, names, desired, 60_000);
  } finally {
    await operator.stop();
  }
  return namespace;
}

/** A CR at rest as the walk leaves it, to copy into the memory bench's CRs (their generation is 1). */
function restingStatus(walked: Database | undefined): LifecycleStatus {
  if (walked?.status === undefined) throw new Error('no walked CR to copy a status from');
  const { outbox: _none, ...status } = walked.status;
  return {
    ...status,
    observedGeneration: 1,
    conditions: status.conditions.map((c) => ({ ...c, observedGeneration: 1 })),
    // A compact status leaves out lastTransition's generation when it is the observed one.
    ...(status.lastTransition?.generation === undefined ? {} : { lastTransition: { ...status.lastTransition, generation: 1 } }),
  };
}

interface MemoryFigures {
  crs: number;
  bytesPerCr: number;
  setupSeconds: number;
  /** Writes of the operator while it looked at the CRs once (0: all at rest, as intended). */
  writes: number;
}

async function memory(bench: Bench, status: LifecycleStatus): Promise<{ empty: number; sizes: MemoryFigures[] }> {
  await createOktNamespace(bench.raw, EMPTY_NAMESPACE);
  // An operator with nothing to cache: what it holds whatever the CRs (connections, queues, metrics).
  const emptyRun = await operatorHeap(bench, EMPTY_NAMESPACE, 0);
  const empty = emptyRun.heapUsed - emptyRun.heapBefore;
  const sizes: MemoryFigures[] = [];
  for (const count of MEMORY_SIZES) {
    const started = performance.now();
    let namespace = `e2e-walk-${count}`;
    if (!SIZES.includes(count)) {
      namespace = `e2e-mem-${count}`;
      await createOktNamespace(bench.raw, namespace);
      // Born with the finalizer and given the status of a walked CR: the operator only looks at each once.
      await createResources(bench.raw, namespace, count, { desiredState: status.state, finalizers: ['okt.dev/lifecycle'] });
      await inParallel(count, CONCURRENCY, (i) => bench.raw.send('PATCH', dbPath(namespace, crName(i), 'status'), { status }));
    }
    const setupSeconds = (performance.now() - started) / 1000;
    const { heapUsed, heapBefore, writes } = await operatorHeap(bench, namespace, count);
    sizes.push({ crs: count, bytesPerCr: (heapUsed - heapBefore - empty) / count, setupSeconds, writes });
  }
  return { empty, sizes };
}

/** The other limit of a walk: no-op operations (`true`) per second through the same in-process sidecar, 64 at once. */
async function sidecarRate(sidecar: NoopSidecar, count: number): Promise<number> {
  const client = new SidecarClient({ baseUrl: sidecar.url, token: sidecar.token });
  try {
    const start = performance.now();
    await inParallel(count, CONCURRENCY, async (i) => {
      await client.startOperation(`bench-${i}`, { node: 'Running', graph: databaseGraph.name });
      const op = await client.waitForOperation(`bench-${i}`, { timeoutMs: 60_000 });
      if (op.phase !== 'Succeeded') throw new Error(`operation bench-${i} ended ${op.phase}: ${op.message ?? ''}`);
    });
    return count / ((performance.now() - start) / 1000);
  } finally {
    await client.close();
  }
}

/** What the API server wrote per second during the steady walk: the operator's writes and the spec edits that drove it. */
function apiWritesPerSecond(w: WalkFigures): number {
  return (w.steadyWrites + w.steadyTransitions) / w.steadySeconds;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? NaN;
}

export const fixed = (n: number, digits = 0) => Number(n.toFixed(digits));

/** The round of median transitions/s (of an even count, the upper of the two middle ones). */
export function medianRound<T extends { perSecond: number }>(rounds: readonly T[]): T {
  return medianBy(rounds, (round) => round.perSecond);
}

/** The round of median `figure` (of an even count, the upper of the two middle ones). */
function medianBy<T>(rounds: readonly T[], figure: (round: T) => number): T {
  const sorted = [...rounds].sort((a, b) => figure(a) - figure(b));
  const median = sorted[Math.floor(sorted.length / 2)];
  if (median === undefined) throw new Error('no round to take the median of');
  return median;
}

export async function run(): Promise<Record<string, number>> {
  if (!Number.isInteger(ROUNDS) || ROUNDS < 1) throw new Error(`OKT_BENCH_E2E_ROUNDS must be a whole number of at least 1, not ${JSON.stringify(process.env.OKT_BENCH_E2E_ROUNDS)}`);
  // 8. The peers are built (minutes on a cold Go build cache, once) before anything runs, so the build does not load the walks.
  const peerBinaries = new Map<Peer, string>();
  for (const peer of [CLIENT_GO_PEER, CONTROLLER_RUNTIME_PEER]) {
    const built = await ensurePeerBinary({ moduleDir: PEER_MODULE, command: peer, progress: (line) => process.stderr.write(`${line}\n`) });
    if (built.builtSeconds !== undefined) process.stderr.write(`okt peer: first use: built ${peer.name} in ${built.builtSeconds} s (cached for later runs: ${built.path})\n`);
    peerBinaries.set(peer, built.path);
  }
  peerBinaries.set(NODE_PEER, process.execPath);
  const plane = await startControlPlane({ progress: (line) => process.stderr.write(`${line}\n`) });
  const kc = new KubeConfig();
  kc.loadFromFile(plane.kubeconfigPath);
  const raw = await RawApi.open(kc, CONCURRENCY);
  // Module actions: a no-op in the sidecar's process, so the walk measures the operator, not fork + exec.
  const sidecarOf = (graph: Graph) => startNoopSidecar({ graph, actions: 'module', maxActiveOperations: 256, retainOperations: 100_000 });
  const database: Subject = { graph: databaseGraph, resource: RESOURCE, sidecar: await sidecarOf(databaseGraph), rawNamespace: 'e2e-raw', firstHop: 'Running' };
  const chain: Subject = { graph: chainGraph, resource: CHAINS, sidecar: await sidecarOf(chainGraph), rawNamespace: 'e2e-raw-chain', firstHop: 'Step1' };
  const pids = [{ name: 'okt (operator, sidecar, bench)', pid: process.pid }, ...plane.processes.map((p) => ({ name: p.name, pid: p.pid }))];
  const bench: Bench = { kc, kubeconfigPath: plane.kubeconfigPath, pids, raw, database, chain };
  const figures: Record<string, number> = {};
  try {
    const setup = await KubeTransport.fromKubeConfig(kc);
    for (const subject of [database, chain]) {
      await setup.create(CRDS, undefined, generateCrd(subject.graph, { ...subject.resource, statusFormat: STATUS_FORMAT }) as KubeObject);
      await waitFor(`the ${subject.resource.kind} CRD to be served`, async () => (await setup.list(subject.resource, { limit: 1 }).then(() => true, () => undefined)), { timeoutMs: 60_000 });
      // 1.
      await createNamespace(raw, subject.rawNamespace);
      await createResources(raw, subject.rawNamespace, CONCURRENCY, { desiredState: subject.firstHop, resource: subject.resource });
    }
    // 8. The minimal CRs (no spec to speak of, status empty until patched).
    await setup.create(CRDS, undefined, minimalCrd as KubeObject);
    await waitFor('the Minimal CRD to be served', async () => (await setup.list(MINIMAL, { limit: 1 }).then(() => true, () => undefined)), { timeoutMs: 60_000 });
    await createNamespace(raw, MINIMAL_NAMESPACE);
    await inParallel(CONCURRENCY, CONCURRENCY, (i) => raw.send('POST', resourcePath(MINIMAL, MINIMAL_NAMESPACE), { apiVersion: `${MINIMAL.group}/${MINIMAL.version}`, kind: MINIMAL.kind, metadata: { name: crName(i) }, spec: {} }));
    await setup.close();
    const finalizerPolicy = await installFinalizerPolicy(raw, [RESOURCE, CHAINS]);
    figures['e2e.okt_finalizer_policy'] = finalizerPolicy ? 1 : 0;
    process.stderr.write(`okt's finalizer policy (okt manifests --finalizer-policy): ${finalizerPolicy ? 'in force in okt\'s namespaces' : 'not served by this Kubernetes release: okt puts its finalizer on itself'}\n`);

    await rawPatchRate(raw, database, 8, 1); // warm up
    const rawSerial = await rawPatchRate(raw, database, 1, SECONDS);
    figures['e2e.raw_patch_serial_per_s'] = fixed(rawSerial);
    const sidecarOps = await sidecarRate(database.sidecar, SIDECAR_OPERATIONS);
    // 7.
    const profiled = PROFILE && (await hasGo());
    if (profiled) Object.assign(figures, await rawPatchProfile(bench, 10));
    figures['e2e.sidecar_noop_operations_per_s'] = fixed(sidecarOps);

    // 2. and 3.
    const walks: WalkFigures[] = [];
    for (const count of SIZES) {
      const result = await walk(bench, database, count, ONE_NODE_PER_EDIT);
      walks.push(result);
      if (count === 1000 || figures['e2e.transitions_per_s'] === undefined) {
        figures['e2e.raw_patch_per_s'] = fixed(result.raw);
        figures['e2e.transitions_per_s'] = fixed(result.perSecond, 1);
        figures['e2e.transitions_vs_raw_patch_ratio'] = fixed(result.perSecond / result.raw, 3);
        figures['e2e.writes_per_transition'] = fixed(result.steadyWrites / result.steadyTransitions, 3);
        figures['e2e.reads_per_transition'] = fixed(result.steadyReads / result.steadyTransitions, 3);
        figures['e2e.reconciles_per_transition'] = fixed(result.reconciles / result.steadyTransitions, 3);
        figures['e2e.api_writes_vs_raw_patch_ratio'] = fixed(apiWritesPerSecond(result) / result.raw, 3);
      }
      figures[`e2e.transitions_per_s_${count}`] = fixed(result.perSecond, 1);
    }
    // The same 1,000 CRs (or the largest size), Running -> End in one spec edit, by okt and by each peer:
    // rounds of every side, the order turned each round (the load of a shared machine drifts); each
    // side's figures are those of its median round.
    const hopCount = Math.min(1000, Math.max(...SIZES));
    const oktRounds: WalkFigures[] = [];
    const oktRunRounds: OktRunFigures[] = [];
    const peerRounds = new Map<Peer, PeerFigures[]>([[CLIENT_GO_PEER, []], [CONTROLLER_RUNTIME_PEER, []], [NODE_PEER, []]]);
    const sides: (() => Promise<void>)[] = [
      async () => void oktRounds.push(await walk(bench, database, hopCount, MULTI_HOP, { minimal: true, round: oktRounds.length, settle: true })),
      async () => void oktRunRounds.push(await oktRunWalk(bench, hopCount, { round: oktRunRounds.length, profiled, warmUp: WARM_UP })),
      ...[...peerRounds].map(([peer, rounds]) => async () => void rounds.push(await peerWalk(bench, database, peer, peerBinaries.get(peer)!, hopCount, rounds.length, { profiled: profiled && peer === CONTROLLER_RUNTIME_PEER, warmUp: WARM_UP }))),
    ];
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < sides.length; i++) await sides[(round + i) % sides.length]!();
    }
    const hops = medianRound(oktRounds);
    const oktRun = medianRound(oktRunRounds);
    const peerRun = medianRound(peerRounds.get(CLIENT_GO_PEER)!);
    const crPeerRun = medianRound(peerRounds.get(CONTROLLER_RUNTIME_PEER)!);
    const nodePeerRun = medianRound(peerRounds.get(NODE_PEER)!);
    console.log(`\nRunning -> End, ${ROUNDS} rounds (transitions/s): okt in this process ${oktRounds.map((r) => r.perSecond.toFixed(1)).join(', ')}; okt run ${oktRunRounds.map((r) => r.perSecond.toFixed(1)).join(', ')}; ${[...peerRounds].map(([peer, rounds]) => `${peer.label} ${rounds.map((r) => r.perSecond.toFixed(1)).join(', ')}`).join('; ')}; each side's median below`);
    figures['e2e.multihop_transitions_per_s'] = fixed(hops.perSecond, 1);
    figures['e2e.multihop_transitions_vs_raw_patch_ratio'] = fixed(hops.perSecond / hops.raw, 3);
    figures['e2e.multihop_writes_per_transition'] = fixed(hops.steadyWrites / hops.steadyTransitions, 3);
    figures['e2e.multihop_reads_per_transition'] = fixed(hops.steadyReads / hops.steadyTransitions, 3);
    figures['e2e.multihop_reconciles_per_transition'] = fixed(hops.reconciles / hops.steadyTransitions, 3);
    figures['e2e.multihop_sidecar_calls_per_transition'] = fixed(hops.sidecarCalls / hops.steadyTransitions, 3);
    figures['e2e.raw_update_per_s'] = fixed(hops.rawUpdate);
    figures['e2e.multihop_transitions_vs_raw_update_ratio'] = fixed(hops.perSecond / hops.rawUpdate, 3);
    console.log(`\n${hops.crs} CRs Running -> End in one spec edit (2 transitions each): ${hops.perSecond.toFixed(1)} transitions/s against ${hops.raw.toFixed(0)} raw patches/s (${(hops.perSecond / hops.raw).toFixed(3)}) and ${hops.rawUpdate.toFixed(0)} raw status updates/s, okt's way of writing (${(hops.perSecond / hops.rawUpdate).toFixed(3)}); ${(hops.steadyWrites / hops.steadyTransitions).toFixed(3)} writes and ${(hops.steadyReads / hops.steadyTransitions).toFixed(3)} reads, ${(hops.reconciles / hops.steadyTransitions).toFixed(3)} reconciles and ${(hops.sidecarCalls / hops.steadyTransitions).toFixed(3)} sidecar calls per transition (counted until the operator settled)`);
    // 8. The second raw baseline (a minimal CR) and the peers, on the same walk.
    figures['e2e.minimal_raw_patch_per_s'] = fixed(hops.minimalRaw);
    figures['e2e.multihop_vs_minimal_raw_ratio'] = fixed(hops.perSecond / hops.minimalRaw, 3);
    figures['e2e.okt_cpu_ms_per_transition'] = fixed(hops.selfCpuMsPerTransition, 3);
    console.log(`against ${hops.minimalRaw.toFixed(0)} raw patches/s of a minimal CR (a status of one short string; okt's own CR: ${hops.raw.toFixed(0)}/s): ${(hops.perSecond / hops.minimalRaw).toFixed(3)}`);
    // Each ratio's baseline is its peer (okt / peer): the controller-runtime peer is what users would
    // run instead of okt; the client-go peer, hand-tuned (no 409 on a stale cache), the lean end.
    for (const [prefix, run] of [['peer', peerRun], ['cr_peer', crPeerRun], ['node_peer', nodePeerRun]] as const) {
      figures[`e2e.${prefix}_transitions_per_s`] = fixed(run.perSecond, 1);
      figures[`e2e.multihop_vs_${prefix}_ratio`] = fixed(hops.perSecond / run.perSecond, 3);
      figures[`e2e.${prefix}_cpu_ms_per_transition`] = fixed(run.cpuMsPerTransition, 3);
      figures[`e2e.${prefix}_bytes_per_cr`] = fixed(run.rssBytesPerCr);
      figures[`e2e.${prefix}_heap_bytes_per_cr`] = fixed(run.heapBytesPerCr);
      figures[`e2e.${prefix}_updates_per_transition`] = fixed(run.updatesPerTransition, 3);
      figures[`e2e.${prefix}_reconciles_per_transition`] = fixed(run.reconcilesPerTransition, 3);
      figures[`e2e.${prefix}_sidecar_calls_per_transition`] = fixed(run.sidecarCallsPerTransition, 3);
      figures[`e2e.${prefix}_conflicts_per_transition`] = fixed(run.conflicts / (run.crs * MULTI_HOP.transitions), 3);
      figures[`e2e.${prefix}_apiserver_cpu_ms_per_transition`] = fixed(run.apiServerCpuMsPerTransition, 3);
    }
    for (const [label, run] of [['client-go peer', peerRun], ['controller-runtime peer', crPeerRun], ['Node peer', nodePeerRun]] as const) {
      console.log(`${run.crs} CRs Running -> End by the ${label} (${WORKERS} workers, a status update per transition, the same sidecar): ${run.perSecond.toFixed(1)} transitions/s against ${run.raw.toFixed(0)} raw patches/s (${(run.perSecond / run.raw).toFixed(3)}), ${run.reconcilesPerTransition.toFixed(2)} reconciles and ${(run.conflicts / (run.crs * MULTI_HOP.transitions)).toFixed(3)} conflicts per transition; okt multi-hop vs it: ${(hops.perSecond / run.perSecond).toFixed(3)}`);
    }
    // 8. Like for like: okt as its own process (`okt run`), its walks seen by the bench's informer as the
    // peers' are; HTTP requests counted by the API server and the sidecar for every side alike.
    const httpPerTransition = (r: { apiRequestsPerTransition: number; sidecarRequestsPerTransition: number }) => r.apiRequestsPerTransition + r.sidecarRequestsPerTransition;
    const writeBound = writeBoundPerSecond(oktRun.raw, oktRun.rawUpdate);
    figures['e2e.okt_run_transitions_per_s'] = fixed(oktRun.perSecond, 1);
    figures['e2e.okt_run_vs_cr_peer_ratio'] = fixed(oktRun.perSecond / crPeerRun.perSecond, 3);
    figures['e2e.okt_run_vs_peer_ratio'] = fixed(oktRun.perSecond / peerRun.perSecond, 3);
    figures['e2e.okt_run_cpu_ms_per_transition'] = fixed(oktRun.operatorCpuMsPerTransition, 3);
    figures['e2e.operator_cpu_vs_cr_peer_ratio'] = fixed(oktRun.operatorCpuMsPerTransition / crPeerRun.cpuMsPerTransition, 3);
    // The warm-up walk's CPU beside the measured walk's: the same figure says the process was steady (printed, no goal).
    if (oktRun.warmUpOperatorCpuMsPerTransition !== undefined) figures['e2e.okt_run_warm_up_cpu_ms_per_transition'] = fixed(oktRun.warmUpOperatorCpuMsPerTransition, 3);
    if (crPeerRun.warmUpCpuMsPerTransition !== undefined) figures['e2e.cr_peer_warm_up_cpu_ms_per_transition'] = fixed(crPeerRun.warmUpCpuMsPerTransition, 3);
    figures['e2e.okt_run_apiserver_cpu_ms_per_transition'] = fixed(oktRun.apiServerCpuMsPerTransition, 3);
    figures['e2e.apiserver_cpu_vs_cr_peer_ratio'] = fixed(oktRun.apiServerCpuMsPerTransition / crPeerRun.apiServerCpuMsPerTransition, 3);
    // What the runtime costs: the Go peers' walk in Node on okt's stack, against the controller-runtime
    // peer; and okt against it, what okt itself adds.
    figures['e2e.node_peer_cpu_vs_cr_peer_ratio'] = fixed(nodePeerRun.cpuMsPerTransition / crPeerRun.cpuMsPerTransition, 3);
    figures['e2e.operator_cpu_vs_node_peer_ratio'] = fixed(oktRun.operatorCpuMsPerTransition / nodePeerRun.cpuMsPerTransition, 3);
    figures['e2e.okt_run_vs_node_peer_ratio'] = fixed(oktRun.perSecond / nodePeerRun.perSecond, 3);
    for (const [prefix, run] of [['okt_run', oktRun], ['peer', peerRun], ['cr_peer', crPeerRun], ['node_peer', nodePeerRun]] as const) {
      figures[`e2e.${prefix}_api_requests_per_transition`] = fixed(run.apiRequestsPerTransition, 3);
      figures[`e2e.${prefix}_http_requests_per_transition`] = fixed(httpPerTransition(run), 3);
    }
    figures['e2e.okt_run_sidecar_calls_per_transition'] = fixed(oktRun.sidecarRequestsPerTransition, 3);
    figures['e2e.http_requests_vs_cr_peer_delta'] = fixed(httpPerTransition(oktRun) - httpPerTransition(crPeerRun), 3);
    figures['e2e.okt_run_reconciles_per_transition'] = fixed(oktRun.reconcilesPerTransition, 3);
    figures['e2e.okt_run_raw_patch_per_s'] = fixed(oktRun.raw);
    figures['e2e.okt_run_raw_update_per_s'] = fixed(oktRun.rawUpdate);
    figures['e2e.walk_write_bound_per_s'] = fixed(writeBound, 1);
    figures['e2e.walk_vs_write_bound_ratio'] = fixed(oktRun.perSecond / writeBound, 3);
    console.log(`\nlike for like, ${oktRun.crs} CRs Running -> End, each operator its own process, readiness seen by the bench's informer (median rounds; per transition; HTTP requests counted by the API server, watches and the bench's spec edits left out, and by the sidecar, from the first spec edit until the operator settled):`);
    const likeForLike = [
      { side: 'okt run', run: oktRun, operatorCpuMs: oktRun.operatorCpuMsPerTransition, warmUpCpuMs: oktRun.warmUpOperatorCpuMsPerTransition },
      { side: 'client-go peer', run: peerRun, operatorCpuMs: peerRun.cpuMsPerTransition, warmUpCpuMs: peerRun.warmUpCpuMsPerTransition },
      { side: 'controller-runtime peer', run: crPeerRun, operatorCpuMs: crPeerRun.cpuMsPerTransition, warmUpCpuMs: crPeerRun.warmUpCpuMsPerTransition },
      { side: 'Node peer', run: nodePeerRun, operatorCpuMs: nodePeerRun.cpuMsPerTransition, warmUpCpuMs: nodePeerRun.warmUpCpuMsPerTransition },
    ];
    console.table(likeForLike.map(({ side, run, operatorCpuMs, warmUpCpuMs }) => ({
      side, 'transitions/s': fixed(run.perSecond, 1), 'operator CPU ms': fixed(operatorCpuMs, 3), 'its warm-up walk': fixed(warmUpCpuMs ?? NaN, 3), 'kube-apiserver CPU ms': fixed(run.apiServerCpuMsPerTransition, 3),
      'API requests': fixed(run.apiRequestsPerTransition, 3), 'sidecar requests': fixed(run.sidecarRequestsPerTransition, 3), 'HTTP requests': fixed(httpPerTransition(run), 3), reconciles: fixed(run.reconcilesPerTransition, 3),
    })));
    console.log('API requests per transition by verb and resource (the bench\'s spec edits taken out of the PATCHes)');
    const kinds = [...new Set(likeForLike.flatMap(({ run }) => Object.keys(run.apiRequestsByKind)))].sort();
    console.table(kinds.map((kind) => ({ request: kind, ...Object.fromEntries(likeForLike.map(({ side, run }) => [side, fixed((run.apiRequestsByKind[kind] ?? 0) / (run.crs * MULTI_HOP.transitions), 3)])) })));
    Object.assign(figures, await walkProfiles(oktRun, crPeerRun));
    console.log(`okt run's write bound around its walk: 1/(0.5/${oktRun.raw.toFixed(0)} raw patches/s + 1/${oktRun.rawUpdate.toFixed(0)} raw updates/s) = ${writeBound.toFixed(1)} transitions/s; the walk reached ${(oktRun.perSecond / writeBound).toFixed(3)} of it`);
    // Many transitions per spec edit: the chain.
    const line = await walk(bench, chain, Math.min(1000, Math.max(...SIZES)), CHAIN, { minimal: true });
    const ceiling = CHAIN.transitions / (CHAIN.transitions + 1); // one spec edit, then one write per transition
    figures['e2e.chain_transitions_per_s'] = fixed(line.perSecond, 1);
    figures['e2e.chain_raw_patch_per_s'] = fixed(line.raw);
    figures['e2e.chain_transitions_vs_raw_patch_ratio'] = fixed(line.perSecond / line.raw, 3);
    figures['e2e.chain_writes_per_transition'] = fixed(line.steadyWrites / line.steadyTransitions, 3);
    figures['e2e.chain_minimal_raw_patch_per_s'] = fixed(line.minimalRaw);
    figures['e2e.chain_vs_minimal_raw_ratio'] = fixed(line.perSecond / line.minimalRaw, 3);
    console.log(`\n${line.crs} chain CRs Start -> End in one spec edit (${CHAIN.transitions} transitions each): ${line.perSecond.toFixed(1)} transitions/s against ${line.raw.toFixed(0)} raw patches/s of these CRs (${(line.perSecond / line.raw).toFixed(3)}; the ceiling is ${ceiling.toFixed(2)}); ${(line.steadyWrites / line.steadyTransitions).toFixed(3)} writes and ${(line.steadyReads / line.steadyTransitions).toFixed(3)} reads per transition`);
    console.log(`against ${line.minimalRaw.toFixed(0)} raw patches/s of a minimal CR: ${(line.perSecond / line.minimalRaw).toFixed(3)}`);
    // 6. Scale-out: the same walk by one operator process and by two shards of it.
    // One shard: the median round of okt run above.
    const one = oktRun;
    const two = await oktRunWalk(bench, hopCount, { shards: 2, warmUp: WARM_UP });
    figures['e2e.shards_1_transitions_per_s'] = fixed(one.perSecond, 1);
    figures['e2e.shards_2_transitions_per_s'] = fixed(two.perSecond, 1);
    figures['e2e.shards_2_vs_1_ratio'] = fixed(two.perSecond / one.perSecond, 3);
    console.log(`\n${hopCount} CRs Running -> End, operators as processes: 1 shard ${one.perSecond.toFixed(1)} transitions/s (raw ${one.raw.toFixed(0)}/s), 2 shards ${two.perSecond.toFixed(1)} transitions/s (raw ${two.raw.toFixed(0)}/s): 2 vs 1 = ${(two.perSecond / one.perSecond).toFixed(2)}`);
    // 8. CPU per transition of the same walk (1,000 CRs Running -> End) by okt and by the peers.
    const apiServerIndex = pids.findIndex((p) => p.name === 'kube-apiserver');
    const oktApiServerMs = ((hops.cpu[apiServerIndex] ?? NaN) * hops.steadySeconds * 1000) / hops.steadyTransitions;
    figures['e2e.okt_apiserver_cpu_ms_per_transition'] = fixed(oktApiServerMs, 3);
    console.log(`\nCPU ms per transition, ${hops.crs} CRs Running -> End (utime + stime from /proc; this process: process.cpuUsage())`);
    console.table([
      { walk: 'okt in this process (multi-hop walk)', operator: '-', 'this process (operator + sidecar + bench client)': fixed(hops.selfCpuMsPerTransition, 3), 'kube-apiserver': fixed(oktApiServerMs, 3), 'transitions/s': fixed(hops.perSecond, 1) },
      { walk: 'okt run, 1 shard (own process)', operator: fixed(one.operatorCpuMsPerTransition, 3), 'this process (operator + sidecar + bench client)': `${fixed(one.benchCpuMsPerTransition, 3)} (sidecar + bench client)`, 'kube-apiserver': fixed(one.apiServerCpuMsPerTransition, 3), 'transitions/s': fixed(one.perSecond, 1) },
      ...([['client-go peer (own process)', peerRun], ['controller-runtime peer (own process)', crPeerRun], ['Node peer (own process)', nodePeerRun]] as const).map(([label, run]) => ({
        walk: label, operator: fixed(run.cpuMsPerTransition, 3), 'this process (operator + sidecar + bench client)': `${fixed(run.benchCpuMsPerTransition, 3)} (sidecar + bench client)`, 'kube-apiserver': fixed(run.apiServerCpuMsPerTransition, 3), 'transitions/s': fixed(run.perSecond, 1),
      })),
    ]);
    for (const [label, run] of [['client-go peer', peerRun], ['controller-runtime peer', crPeerRun]] as const) {
      console.log(`memory: the ${label}'s RSS after GC (a fresh process, every CR cached and at rest, against none) grew ${run.rssBytesPerCr.toFixed(0)} B per CR (live Go heap: ${run.heapBytesPerCr.toFixed(0)} B per CR); okt's heap per CR: operator.bytes_per_cr below`);
    }
    console.log(`\ncores used while spec edits drove the walks (machine: ${availableParallelism()} cores, load average ${loadavg()[0]?.toFixed(1)})`);
    const cpuRows: [string, WalkFigures][] = [...walks.map((w): [string, WalkFigures] => ['one node per edit', w]), ['Running -> End', hops], ['chain', line]];
    console.table(cpuRows.map(([label, w]) => Object.fromEntries([['walk', label], ['CRs', w.crs], ...pids.map((p, i) => [p.name, fixed(w.cpu[i] ?? NaN, 2)])])));
    console.log(`\noperator: ${WORKERS} workers, ${CONNECTIONS} connections; sidecar in this process, no-op module actions`);
    console.log(`limits: the sidecar alone ran ${sidecarOps.toFixed(0)} no-op operations/s (${CONCURRENCY} at once); raw status merge patches (undici Pool, HTTP/1.1 keep-alive) ${rawSerial.toFixed(0)}/s serially, and at concurrency ${CONCURRENCY} around each walk:`);
    console.table(walks.map((w) => ({
      CRs: w.crs,
      'transitions (creation included)': w.transitions,
      'wall s (creation included)': fixed(w.seconds, 1),
      'spec-driven transitions': w.steadyTransitions,
      'spec-driven s': fixed(w.steadySeconds, 1),
      'transitions/s': fixed(w.perSecond, 1),
      'raw patch/s': fixed(w.raw),
      'transitions/s vs raw': fixed(w.perSecond / w.raw, 3),
      'transitions/s vs sidecar ops/s': fixed(w.perSecond / sidecarOps, 3),
      'API writes/s (operator + spec edits) vs raw': fixed(apiWritesPerSecond(w) / w.raw, 3),
      'writes/transition': fixed(w.steadyWrites / w.steadyTransitions, 3),
      'reads/transition': fixed(w.steadyReads / w.steadyTransitions, 3),
      'reconciles/transition': fixed(w.reconciles / w.steadyTransitions, 2),
      'failed reconciles': w.errors,
    })));

    // 4., ROUNDS times, each round's floor from the raw rates right before and right after it; the
    // figures are those of the round of median p99 against its floor (the machine's load drifts).
    const latencyRounds: LatencyRound[] = [];
    for (let round = 0; round < ROUNDS; round++) latencyRounds.push(await latencyRound(bench, round));
    const latency = medianBy(latencyRounds, (round) => round.p99VsFloor);
    const { alone, together, floorMs } = latency;
    const ascending = (xs: number[]) => xs.sort((a, b) => a - b);
    const latencyRows = [
      ['one CR alone', 'patch sent', ascending(alone.fromSent)], ['one CR alone', 'patch answered', ascending(alone.fromStored)],
      [`${LATENCY_CRS} CRs at once`, 'patch sent', ascending(together.fromSent)], [`${LATENCY_CRS} CRs at once`, 'patch answered', ascending(together.fromStored)],
    ] as const;
    console.log(`\nspec change -> transition CloudEvent at a loopback receiver (ms), the round of median p99 against its floor (${ROUNDS} rounds: ${latencyRounds.map((r) => r.p99VsFloor.toFixed(3)).join(', ')}; the longest GC pause of this process, where the operator runs, while the CRs moved at once: ${latencyRounds.map((r) => r.longestGcPauseMs.toFixed(0)).join(', ')} ms)`);
    console.table(latencyRows.map(([label, from, xs]) => ({ case: label, from, samples: xs.length, p50: fixed(percentile(xs, 50), 1), p99: fixed(percentile(xs, 99), 1), max: fixed(xs.at(-1) ?? NaN, 1) })));
    figures['events.latency_p50_ms'] = fixed(percentile(together.fromSent, 50), 1);
    figures['events.latency_p99_ms'] = fixed(percentile(together.fromSent, 99), 1);
    figures['events.latency_stored_p50_ms'] = fixed(percentile(together.fromStored, 50), 1);
    figures['events.latency_stored_p99_ms'] = fixed(percentile(together.fromStored, 99), 1);
    figures['events.latency_alone_p50_ms'] = fixed(percentile(alone.fromSent, 50), 1);
    figures['events.latency_alone_p99_ms'] = fixed(percentile(alone.fromSent, 99), 1);
    figures['events.latency_floor_ms'] = fixed(floorMs, 1);
    figures['e2e.latency_p99_vs_floor_ratio'] = fixed(latency.p99VsFloor, 3);
    console.log(`the floor of ${LATENCY_CRS} CRs at once: ${LATENCY_CRS} spec patches at ${latency.rawPatch.toFixed(0)} raw patches/s and ${LATENCY_CRS} status updates at ${latency.rawUpdate.toFixed(0)} raw updates/s (measured right around that round) = ${floorMs.toFixed(0)} ms; p99 from the patch sent ${latency.p99VsFloor.toFixed(3)} of it`);

    // 5.
    const reader = await KubeTransport.fromKubeConfig(kc);
    const walked = await reader.list<Database>(RESOURCE, { namespace: 'e2e-latency', limit: 1 });
    await reader.close();
    const { empty, sizes } = await memory(bench, restingStatus(walked.items[0]));
    const jsonBytes = JSON.stringify(walked.items[0]).length;
    console.log(`\noperator heap per watched CR at rest (${jsonBytes} bytes of JSON as listed): in a fresh process each, the heap after GC with the operator running less the heap after an operator on an empty namespace ran and stopped there, against the ${(empty / 2 ** 20).toFixed(2)} MiB an operator holds on an empty namespace`);
    console.table(sizes.map((m) => ({ CRs: m.crs, 'bytes/CR': fixed(m.bytesPerCr), 'operator writes': m.writes, 'setup s (create + status, raw; 0: the walked CRs)': fixed(m.setupSeconds, 1) })));
    figures['operator.heap_empty_bytes'] = empty;
    for (const m of sizes) figures[`operator.bytes_per_cr_${m.crs}`] = fixed(m.bytesPerCr);
    const largest = sizes.at(-1);
    if (largest) figures['operator.bytes_per_cr'] = fixed(largest.bytesPerCr);
    const smallest = sizes[0];
    if (largest && smallest && largest.crs > smallest.crs) {
      // Linearity: the slope between the two sizes leaves out what a first reconcile costs once (code, schemas, clients).
      const slope = (largest.bytesPerCr * largest.crs - smallest.bytesPerCr * smallest.crs) / (largest.crs - smallest.crs);
      figures['operator.bytes_per_cr_marginal'] = fixed(slope);
      console.log(`marginal heap per CR between ${smallest.crs} and ${largest.crs} CRs: ${slope.toFixed(0)} bytes`);
    }

    // 9. A CR at rest as etcd stores it.
    const etcd = etcdUrl(plane);
    const walkSize = SIZES.includes(1000) ? 1000 : SIZES[0]!;
    const otherFormats = STATUS_FORMATS.filter((format) => format !== STATUS_FORMAT);
    const otherFormatWalks: string[] = [];
    for (const format of otherFormats) otherFormatWalks.push(await walkInFormat(bench, format));
    const atRest: [string, LifecycleResourceRef, string][] = [
      [`one node per edit, at Stopping (${WALK.length + 1} transitions), ${STATUS_FORMAT} status`, RESOURCE, `e2e-walk-${walkSize}`],
      ['multi-hop, at End', RESOURCE, hops.namespace],
      ['chain, at End', CHAINS, `e2e-chain-${line.crs}`],
      ['with a sink (latency walk), at Stopping', RESOURCE, 'e2e-latency'],
      ['client-go peer, at End (phase + conditions)', RESOURCE, peerRun.namespace],
      ['controller-runtime peer, at End (phase + conditions)', RESOURCE, crPeerRun.namespace],
      ...otherFormats.map((format, i): [string, LifecycleResourceRef, string] => [`one node per edit, at Stopping, ${format} status`, RESOURCE, otherFormatWalks[i]!]),
    ];
    const stored = await Promise.all(atRest.map(([, resource, namespace]) => storedBytes(bench, etcd, resource, namespace, crName(0))));
    figures['e2e.cr_stored_bytes'] = stored[0]!.etcd;
    figures['e2e.peer_cr_stored_bytes'] = stored[4]!.etcd;
    figures['e2e.cr_peer_cr_stored_bytes'] = stored[5]!.etcd;
    figures['e2e.multihop_cr_stored_bytes'] = stored[1]!.etcd;
    // Like for like: the CRs share their name; their namespaces' names are the bench's ('e2e-multihop-1000'
    // against 'e2e-cr-peer-1000', each with its median round's suffix), so their lengths are taken out.
    figures['e2e.cr_stored_bytes_vs_cr_peer_delta'] = stored[1]!.etcd - atRest[1]![2].length - (stored[5]!.etcd - atRest[5]![2].length);
    figures[`e2e.cr_stored_bytes_${STATUS_FORMAT}`] = stored[0]!.etcd;
    otherFormats.forEach((format, i) => (figures[`e2e.cr_stored_bytes_${format}`] = stored[6 + i]!.etcd));
    console.log('\na CR at rest as etcd stores it (JSON, managedFields included; read from etcd), and the JSON of a GET');
    console.table(atRest.map(([label], i) => ({ CR: label, 'etcd bytes': stored[i]!.etcd, 'GET bytes': stored[i]!.get })));

    // The goals of this area (bench/goals.ts), each a figure of this run.
    console.log(`\ngoals (okt like for like: the okt run process; the peer: the controller-runtime one; medians of ${ROUNDS} rounds)`);
    console.table(goalTable(E2E_GOALS, figures));
    return figures;
  } finally {
    await database.sidecar.close();
    await chain.sidecar.close();
    await raw.close();
    await plane.stop();
  }
}
