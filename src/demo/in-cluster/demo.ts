// `npm start -- --in-cluster`: okt deployed the way docs/cli.md tells users to, on a real node. The okt
// image built from the repository's Dockerfile, `okt manifests ... | kubectl apply -f -` for the
// operator, a CloudEvents receiver behind a Service; then one CR (graphs/database-app.ts) that makes
// PostgreSQL with its sidecar, Service, storage and Secret, walked as the local demo walks the
// database, and deleted: nothing of it is left but the claim its policy keeps.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { startControlPlane, type ControlPlane } from '../../cluster/index.ts';
import { buildImage, loadIntoContainerd } from '../../cluster/image.ts';
import { OBJECT_LABELS } from '../../graph/index.ts';
import { KubeTransport } from '../../kube/transport/index.ts';
import type { LifecycleEvent } from '../../events/index.ts';
import { waitFor } from '../../util/wait-for.ts';
import { DEMO_WALK, waitForReady, type DemoOutput } from '../database-demo.ts';
import { applyYaml, followLogs, kubectl, namespaceWithToken, rolloutStatus, serviceHostAlias } from './kubectl.ts';
import {
  APP_NAMESPACE,
  DEMO_CR_NAME,
  EVENTS_PORT,
  EVENTS_SERVICE,
  OKT_IMAGE,
  OPERATOR_NAMESPACE,
  POSTGRES_IMAGE,
  SINK_URL,
  TOKEN_SECRET,
  databaseCr,
  eventsReceiver,
  hostPathVolume,
  service,
  type SidecarSnippet,
} from './objects.ts';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const OKT_CLI = [process.execPath, `${REPO}bin/okt.js`];
export const OPERATOR_DEPLOYMENT = 'okt-database';
/** The demo's graph, in the repository and in the okt image (the operator loads its renders from there). */
const GRAPH_FILE = 'graphs/database-app.ts';
const GRAPH_MODULE = `/app/${GRAPH_FILE}`;
/** The PersistentVolume the CR's claim binds to. */
const VOLUME = 'okt-demo-data';
/** What the CR makes for the graph's whole life; its backup Job besides, only in Servicing. */
const KINDS = 'deployments,services,configmaps,secrets,persistentvolumeclaims,jobs';

export interface InClusterDemoOptions {
  /** Use this cluster (a kubeconfig whose node runs the images, on this host: the volume's directory is made here) instead of starting one. */
  kubeconfigPath?: string;
}

export class InClusterDemo {
  plane: ControlPlane | undefined;
  transport: KubeTransport | undefined;
  kubeconfigPath: string | undefined;
  readonly name = DEMO_CR_NAME;
  readonly namespace = APP_NAMESPACE;
  /** Every event the receiver logged, in arrival order, once each. */
  readonly events: LifecycleEvent[] = [];
  readonly #out: DemoOutput;
  readonly #options: InClusterDemoOptions;
  #logs: { stop(): void } | undefined;
  #volumeDir: string | undefined;
  /** `--host-alias` values of the operator's Pod, on a cluster without DNS. */
  readonly #aliases: string[] = [];

  constructor(out: DemoOutput, options: InClusterDemoOptions = {}) {
    this.#out = out;
    this.#options = options;
  }

  async start(): Promise<void> {
    const progress = (line: string) => this.#out.info(`      ${line}`);
    if (this.#options.kubeconfigPath) {
      this.#out.step('[1/6] the cluster in the given kubeconfig');
      this.kubeconfigPath = this.#options.kubeconfigPath;
    } else {
      this.#out.step('[1/6] control plane and a real node: containerd, kubelet, kube-proxy, controllers (the first run builds them: about 10 minutes)');
      this.plane = await startControlPlane({ node: true, progress });
      this.kubeconfigPath = this.plane.kubeconfigPath;
      this.#out.info(`      node ${this.plane.node?.name} Ready ${((this.plane.node?.readyAfterMs ?? 0) / 1000).toFixed(1)} s after start; KUBECONFIG=${this.kubeconfigPath}`);
    }
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(this.kubeconfigPath);
    this.transport = await KubeTransport.fromKubeConfig(kubeConfig);

    this.#out.step(`[2/6] images, built without a Docker daemon (npx okt image build): ${OKT_IMAGE}, ${POSTGRES_IMAGE}`);
    await buildImage({ contextDir: REPO, tag: OKT_IMAGE, progress });
    await buildImage({ contextDir: REPO, tag: POSTGRES_IMAGE, dockerfile: `${REPO}sidecar/adapters/postgres/Dockerfile`, progress });
    for (const image of [OKT_IMAGE, POSTGRES_IMAGE]) await loadIntoContainerd({ image, progress });

    this.#out.step(`[3/6] around the application in ${APP_NAMESPACE}: the sidecars' token, a CloudEvents receiver, a PersistentVolume`);
    await this.#prepareNamespace();

    this.#out.step(`[4/6] the operator: okt manifests ${GRAPH_FILE} --graph-module ${GRAPH_MODULE} ... | kubectl apply -f -`);
    if (!(await this.#clusterHasDns())) this.#aliases.push(await serviceHostAlias(this.#kubeconfig(), APP_NAMESPACE, EVENTS_SERVICE));
    const applied = await this.#applyOperator();
    this.#out.info(`      applied ${applied.join(', ')}${this.#aliases.length ? `; no cluster DNS here: --host-alias ${this.#aliases.join(' --host-alias ')}` : ''}`);
    this.#logs = followLogs(this.#kubeconfig(), ['-n', APP_NAMESPACE, `deploy/${EVENTS_SERVICE}`], (line) => this.#onReceiverLine(line));
  }

  /**
   * Creates the CR and walks it, one spec edit per step, waiting for Ready and the transition's event
   * each time and saying what the CR made; then deletes it and says what is left.
   */
  async walk(): Promise<void> {
    this.#out.step(`[5/6] one CR, database/${DEMO_CR_NAME}, walked: ${['Start', ...DEMO_WALK].join(' -> ')}, one spec.desiredState edit per step`);
    const arrivals = (node: string) => this.events.filter((e) => e.data.to === node).length;
    let uid = '';
    for (const [i, desired] of DEMO_WALK.entries()) {
      const started = Date.now();
      const before = arrivals(desired);
      if (i === 0) {
        const manifest = JSON.stringify(databaseCr(desired));
        await this.#admitted(manifest);
        await applyYaml(this.#kubeconfig(), manifest);
        this.#out.info(`  created database/${DEMO_CR_NAME} with spec.desiredState=${desired}; ${await this.#finalizerAtCreation()}`);
        await this.#aliasTheSidecar();
      } else {
        await kubectl(this.#kubeconfig(), ['-n', APP_NAMESPACE, 'patch', `database/${DEMO_CR_NAME}`, '--type=merge', '-p', JSON.stringify({ spec: { desiredState: desired } })]);
        this.#out.info(`  spec.desiredState=${desired}`);
      }
      const db = await waitForReady(this.#need(this.transport), APP_NAMESPACE, DEMO_CR_NAME, desired);
      uid = db.metadata.uid ?? '';
      await waitFor(`the CloudEvent of the transition to ${desired}`, async () => (arrivals(desired) > before ? true : undefined), { timeoutMs: 60_000 });
      this.#out.info(`  ${desired} reached and Ready in ${Date.now() - started} ms; path ${db.status?.pathSummary ?? ''}`);
      this.#out.info(`  made by database/${DEMO_CR_NAME} at ${desired}: ${(await this.#madeFor(uid)).join(' ')}`);
      if (desired === 'Servicing') this.#out.info(`  backup written: ${(await this.#backups()).join(', ') || '(none found)'}`);
    }
    await this.#deleteTheCr(uid);
  }

  tryThese(): string {
    return [
      `  export KUBECONFIG=${this.kubeconfigPath}`,
      `  kubectl get nodes; kubectl get pods -A -o wide`,
      `  kubectl -n ${APP_NAMESPACE} get ${KINDS},persistentvolumes   # the kept claim, bound`,
      `  kubectl -n ${OPERATOR_NAMESPACE} logs deploy/${OPERATOR_DEPLOYMENT}      # the operator`,
      `  npx okt manifests ${GRAPH_FILE} --group okt.dev --version v1alpha1 --kind Database --graph-module ${GRAPH_MODULE} --finalizer-policy   # what was applied`,
    ].join('\n');
  }

  async stop(): Promise<void> {
    this.#logs?.stop();
    await this.transport?.close();
    await this.plane?.stop();
    if (this.#volumeDir !== undefined) rmSync(this.#volumeDir, { recursive: true, force: true });
  }

  /** The namespaces with the sidecars' token, the CloudEvents receiver, and a volume for the CR's claim. */
  async #prepareNamespace(): Promise<void> {
    const kc = this.#kubeconfig();
    const token = randomBytes(32).toString('hex');
    // The same token Secret where the operator runs and where the sidecar runs.
    for (const namespace of [APP_NAMESPACE, OPERATOR_NAMESPACE]) await namespaceWithToken(kc, namespace, TOKEN_SECRET, token);
    await applyYaml(kc, JSON.stringify(service(EVENTS_SERVICE, EVENTS_PORT, 'events')));
    await applyYaml(kc, JSON.stringify(eventsReceiver()));
    this.#volumeDir = mkdtempSync(path.join(tmpdir(), 'okt-demo-data-'));
    chmodSync(this.#volumeDir, 0o777);
    await applyYaml(kc, JSON.stringify(hostPathVolume(VOLUME, this.#volumeDir)));
    await rolloutStatus(kc, APP_NAMESPACE, EVENTS_SERVICE);
    this.#out.info(`      ${EVENTS_SERVICE} running in ${APP_NAMESPACE}; PersistentVolume ${VOLUME} on ${this.#volumeDir} (this node has no provisioner)`);
  }

  /** `okt manifests ... | kubectl apply -f -` with the host aliases known so far; the kinds applied. */
  async #applyOperator(): Promise<string[]> {
    const yaml = okt(manifestArgs(this.#aliases));
    await applyYaml(this.#kubeconfig(), yaml);
    await rolloutStatus(this.#kubeconfig(), OPERATOR_NAMESPACE, OPERATOR_DEPLOYMENT);
    return parseAllDocuments(yaml).map((d) => (d.toJS() as { kind?: string } | null)?.kind).filter((kind): kind is string => kind !== undefined);
  }

  /**
   * The operator finds the sidecar at the Service the CR makes (`<cr>.<namespace>.svc`). Without
   * cluster DNS its Pod resolves that name through a host alias, which can name the Service's
   * ClusterIP only once the CR made it: the manifests are applied again with it (the Pod rolls).
   */
  async #aliasTheSidecar(): Promise<void> {
    if (this.#aliases.length === 0) return;
    const kc = this.#kubeconfig();
    const alias = await waitFor(`the Service database/${DEMO_CR_NAME} makes`, async () => {
      try {
        return await serviceHostAlias(kc, APP_NAMESPACE, DEMO_CR_NAME);
      } catch {
        return undefined;
      }
    }, { timeoutMs: 60_000, intervalMs: 500 });
    this.#aliases.push(alias);
    await this.#applyOperator();
    this.#out.info(`  no cluster DNS here: --host-alias ${alias} (the Service database/${DEMO_CR_NAME} made), the operator applied again`);
  }

  /**
   * Waits until the API server would create the CR (`kubectl create --dry-run=server`): for a few
   * seconds after its CRD is created, the finalizer policy's plugin does not know the kind yet (it
   * reads CRDs' schemas from /openapi/v3 every 5 s) and refuses with 503 (see
   * docs/operator.md, section "The finalizer at creation").
   */
  async #admitted(manifest: string): Promise<void> {
    const started = Date.now();
    await waitFor('the API server to admit a database (a dry-run creation)', async () => {
      await kubectl(this.#kubeconfig(), ['create', '--dry-run=server', '-f', '-'], manifest);
      return true;
    }, { timeoutMs: 60_000, intervalMs: 500 });
    const waited = Date.now() - started;
    if (waited >= 1_000) this.#out.info(`  waited ${Math.round(waited / 1000)} s for the API server to admit a database (the finalizer policy's plugin reads a new CRD's schema every 5 s)`);
  }

  /** Where the CR's finalizer came from: put on as the API server created it (the finalizer policy), no managedFields entry owning it. */
  async #finalizerAtCreation(): Promise<string> {
    const out = await kubectl(this.#kubeconfig(), ['-n', APP_NAMESPACE, 'get', `database/${DEMO_CR_NAME}`, '-o', 'json', '--show-managed-fields']);
    const { metadata } = JSON.parse(out) as { metadata: { finalizers?: string[]; managedFields?: { manager: string; fieldsV1?: { 'f:metadata'?: Record<string, unknown> } }[] } };
    const owners = (metadata.managedFields ?? []).filter((e) => e.fieldsV1?.['f:metadata']?.['f:finalizers'] !== undefined).map((e) => e.manager);
    return `finalizers ${JSON.stringify(metadata.finalizers ?? [])}, owned by ${owners.length === 0 ? 'no managedFields entry (the finalizer policy put it on)' : owners.join(', ')}`;
  }

  /** What the CR made, as `kubectl get -o name` says it (okt's label names the owner). */
  async #madeFor(uid: string): Promise<string[]> {
    const out = await kubectl(this.#kubeconfig(), ['-n', APP_NAMESPACE, 'get', KINDS, '-l', `${OBJECT_LABELS.ownerUid}=${uid}`, '-o', 'name']);
    return out.split('\n').filter(Boolean);
  }

  /**
   * `kubectl delete` of the CR (its deletion path, then its objects deleted in reverse order), then
   * until nothing of it is left but the claim its policy keeps, without the CR's owner reference.
   */
  async #deleteTheCr(uid: string): Promise<void> {
    const kc = this.#kubeconfig();
    this.#out.step(`[6/6] kubectl delete database/${DEMO_CR_NAME}: what it made goes, but the claim its policy keeps`);
    const started = Date.now();
    await kubectl(kc, ['-n', APP_NAMESPACE, 'delete', `database/${DEMO_CR_NAME}`, '--timeout=180s']);
    this.#out.info(`  database/${DEMO_CR_NAME} gone in ${Date.now() - started} ms`);
    const pods = async () => (await kubectl(kc, ['-n', APP_NAMESPACE, 'get', 'pods', '-o', 'name'])).split('\n').filter((pod) => pod !== '' && !pod.startsWith(`pod/${EVENTS_SERVICE}-`));
    const left = await waitFor('nothing of the CR but its kept claim, and none of its Pods', async () => {
      const made = await this.#madeFor(uid);
      return made.every((name) => name.startsWith('persistentvolumeclaim/')) && (await pods()).length === 0 ? made : undefined;
    }, { timeoutMs: 120_000, intervalMs: 1_000 });
    const claim = `${DEMO_CR_NAME}-data`;
    const owners = (await kubectl(kc, ['-n', APP_NAMESPACE, 'get', 'pvc', claim, '-o', 'jsonpath={.metadata.ownerReferences}'])).trim();
    const volume = (await kubectl(kc, ['-n', APP_NAMESPACE, 'get', 'pvc', claim, '-o', 'jsonpath={.spec.volumeName}'])).trim();
    this.#out.info(`  left behind: ${left.join(' ') || '(nothing)'}; owner references: ${owners || 'none'}; no Pod of it; the claim bound to ${volume}`);
  }

  async #clusterHasDns(): Promise<boolean> {
    try {
      await kubectl(this.#kubeconfig(), ['-n', 'kube-system', 'get', 'service', 'kube-dns', '-o', 'name']);
      return true;
    } catch {
      return false;
    }
  }

  /** The pg_dump files on the CR's claim, read in the server's container with `kubectl exec` as a user would. */
  async #backups(): Promise<string[]> {
    const dir = '/var/lib/okt-pg/backups';
    const out = await kubectl(this.#kubeconfig(), ['-n', APP_NAMESPACE, 'exec', `deploy/${DEMO_CR_NAME}`, '-c', 'postgres', '--', 'ls', dir]);
    return out.split('\n').filter((f) => f.endsWith('.dump')).map((f) => `${dir}/${f}`);
  }

  #onReceiverLine(line: string): void {
    let event: LifecycleEvent & { sink?: string };
    try {
      event = JSON.parse(line) as LifecycleEvent & { sink?: string };
    } catch {
      return;
    }
    if (event.sink !== undefined || event.id === undefined) return;
    // A restart of the log stream replays the Pod's log from its start.
    if (this.events.some((e) => e.id === event.id && e.source === event.source)) return;
    this.events.push(event);
    this.#out.event(event);
  }

  #kubeconfig(): string {
    return this.#need(this.kubeconfigPath);
  }

  #need<T>(value: T | undefined): T {
    if (value === undefined) throw new Error('the demo is not started');
    return value;
  }
}

/**
 * The operator's `okt manifests` flags, as docs/cli.md shows them, plus host aliases where there is no DNS: no --sidecar-url (the CR's Service is where its sidecar is).
 * With --finalizer-policy: a release that provisions a node (1.37.2) serves its MutatingAdmissionPolicy.
 */
export function manifestArgs(hostAliases: readonly string[]): string[] {
  return [
    'manifests', GRAPH_FILE, '--graph-module', GRAPH_MODULE, '--group', 'okt.dev', '--version', 'v1alpha1', '--kind', 'Database', '--short-names', 'odb',
    '--image', OKT_IMAGE, '--namespace', OPERATOR_NAMESPACE, '--watch-namespace', APP_NAMESPACE, '--sink', SINK_URL, '--finalizer-policy',
    ...hostAliases.flatMap((alias) => ['--host-alias', alias]),
  ];
}

/** What `okt manifests --sidecar-only` prints for the database graph: the containers and volumes to paste in. */
export function sidecarSnippetFromCli(): SidecarSnippet {
  return parse(okt(['manifests', 'graphs/database.ts', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind', 'Database', '--image', OKT_IMAGE, '--sidecar-only'])) as SidecarSnippet;
}

/** The okt command line of this checkout; its stdout. */
export function okt(args: readonly string[]): string {
  return execFileSync(OKT_CLI[0]!, [OKT_CLI[1]!, ...args], { cwd: REPO, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

