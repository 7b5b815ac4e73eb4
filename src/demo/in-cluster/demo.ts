// `npm start -- --in-cluster`: okt deployed the way docs/cli.md tells users to, on a real node. The okt
// image built from the repository's Dockerfile, `okt manifests ... | kubectl apply -f -` for the
// operator, PostgreSQL in a Pod with the okt sidecar container `okt manifests --sidecar-only` prints,
// a CloudEvents receiver behind a Service; then the database walked as the local demo walks it.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { parse, parseAllDocuments } from 'yaml';
import { startControlPlane, type ControlPlane } from '../../cluster/index.ts';
import { buildImage, loadIntoContainerd } from '../../cluster/image.ts';
import { KubeTransport } from '../../kube/transport/index.ts';
import type { LifecycleEvent } from '../../events/index.ts';
import { waitFor } from '../../util/wait-for.ts';
import { DEMO_WALK, waitForReady, type DemoOutput } from '../database-demo.ts';
import { applyYaml, followLogs, kubectl, namespaceWithToken, rolloutStatus, serviceHostAlias } from './kubectl.ts';
import {
  APP_NAMESPACE,
  DEMO_CR_NAME,
  EVENTS_SERVICE,
  OKT_IMAGE,
  OPERATOR_NAMESPACE,
  POSTGRES_IMAGE,
  POSTGRES_SERVICE,
  SIDECAR_CONFIGMAP,
  SIDECAR_URL,
  SINK_URL,
  TOKEN_SECRET,
  databaseCr,
  eventsReceiver,
  postgresDeployment,
  services,
  type SidecarSnippet,
} from './objects.ts';

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const OKT_CLI = [process.execPath, `${REPO}bin/okt.js`];
export const OPERATOR_DEPLOYMENT = 'okt-database';


export interface InClusterDemoOptions {
  /** Use this cluster (a kubeconfig whose node runs the images) instead of starting one. */
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

  constructor(out: DemoOutput, options: InClusterDemoOptions = {}) {
    this.#out = out;
    this.#options = options;
  }

  async start(): Promise<void> {
    const progress = (line: string) => this.#out.info(`      ${line}`);
    if (this.#options.kubeconfigPath) {
      this.#out.step('[1/5] the cluster in the given kubeconfig');
      this.kubeconfigPath = this.#options.kubeconfigPath;
    } else {
      this.#out.step('[1/5] control plane and a real node: containerd, kubelet, kube-proxy, controllers (the first run builds them: about 10 minutes)');
      this.plane = await startControlPlane({ node: true, progress });
      this.kubeconfigPath = this.plane.kubeconfigPath;
      this.#out.info(`      node ${this.plane.node?.name} Ready ${((this.plane.node?.readyAfterMs ?? 0) / 1000).toFixed(1)} s after start; KUBECONFIG=${this.kubeconfigPath}`);
    }
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(this.kubeconfigPath);
    this.transport = await KubeTransport.fromKubeConfig(kubeConfig);

    this.#out.step(`[2/5] images, built without a Docker daemon (npx okt image build): ${OKT_IMAGE}, ${POSTGRES_IMAGE}`);
    await buildImage({ contextDir: REPO, tag: OKT_IMAGE, progress });
    await buildImage({ contextDir: REPO, tag: POSTGRES_IMAGE, dockerfile: `${REPO}sidecar/adapters/postgres/Dockerfile`, progress });
    for (const image of [OKT_IMAGE, POSTGRES_IMAGE]) await loadIntoContainerd({ image, progress });

    this.#out.step(`[3/5] the application in ${APP_NAMESPACE}: PostgreSQL with the okt sidecar container, a CloudEvents receiver`);
    await this.#deployApplication();

    this.#out.step(`[4/5] the operator: okt manifests graphs/database.ts ... | kubectl apply -f -`);
    await this.#deployOperator();
    this.#logs = followLogs(this.#kubeconfig(), ['-n', APP_NAMESPACE, `deploy/${EVENTS_SERVICE}`], (line) => this.#onReceiverLine(line));
  }

  /** Creates the CR and walks it, one spec edit per step, waiting for Ready and the transition's event each time. */
  async walk(): Promise<void> {
    this.#out.step(`[5/5] the walk: ${['Start', ...DEMO_WALK].join(' -> ')}, one spec.desiredState edit per step`);
    const arrivals = (node: string) => this.events.filter((e) => e.data.to === node).length;
    for (const [i, desired] of DEMO_WALK.entries()) {
      const started = Date.now();
      const before = arrivals(desired);
      if (i === 0) {
        await applyYaml(this.#kubeconfig(), JSON.stringify(databaseCr(desired)));
        this.#out.info(`  created database/${DEMO_CR_NAME} with spec.desiredState=${desired}`);
      } else {
        await kubectl(this.#kubeconfig(), ['-n', APP_NAMESPACE, 'patch', `database/${DEMO_CR_NAME}`, '--type=merge', '-p', JSON.stringify({ spec: { desiredState: desired } })]);
        this.#out.info(`  spec.desiredState=${desired}`);
      }
      const db = await waitForReady(this.#need(this.transport), APP_NAMESPACE, DEMO_CR_NAME, desired);
      await waitFor(`the CloudEvent of the transition to ${desired}`, async () => (arrivals(desired) > before ? true : undefined), { timeoutMs: 60_000 });
      this.#out.info(`  ${desired} reached and Ready in ${Date.now() - started} ms; path ${db.status?.pathSummary ?? ''}`);
      if (desired === 'Servicing') this.#out.info(`  backup written: ${(await this.#backups()).join(', ') || '(none found)'}`);
    }
  }

  tryThese(): string {
    return [
      `  export KUBECONFIG=${this.kubeconfigPath}`,
      `  kubectl get nodes; kubectl get pods -A -o wide`,
      `  kubectl -n ${APP_NAMESPACE} get databases               # State, Desired, Ready, Age`,
      `  kubectl -n ${OPERATOR_NAMESPACE} logs deploy/${OPERATOR_DEPLOYMENT}      # the operator`,
      `  kubectl -n ${APP_NAMESPACE} logs deploy/${POSTGRES_SERVICE} -c okt-sidecar   # the sidecar`,
      `  kubectl -n ${APP_NAMESPACE} exec deploy/${POSTGRES_SERVICE} -c postgres -- ls /var/lib/okt-pg/backups`,
    ].join('\n');
  }

  async stop(): Promise<void> {
    this.#logs?.stop();
    await this.transport?.close();
    await this.plane?.stop();
  }

  async #deployApplication(): Promise<void> {
    const kc = this.#kubeconfig();
    const token = randomBytes(32).toString('hex');
    // The same token Secret where the operator runs and where the sidecar runs.
    for (const namespace of [APP_NAMESPACE, OPERATOR_NAMESPACE]) await namespaceWithToken(kc, namespace, TOKEN_SECRET, token);
    for (const service of services()) await applyYaml(kc, JSON.stringify(service));
    const config = await kubectl(kc, [
      '-n', APP_NAMESPACE, 'create', 'configmap', SIDECAR_CONFIGMAP,
      `--from-file=sidecar.yaml=${REPO}sidecar/adapters/postgres/database.sidecar.in-pod.yaml`, '--dry-run=client', '-o', 'yaml',
    ]);
    await applyYaml(kc, config);
    await applyYaml(kc, JSON.stringify(eventsReceiver()));
    const snippet = sidecarSnippetFromCli();
    await applyYaml(kc, JSON.stringify(postgresDeployment(snippet)));
    await rolloutStatus(kc, APP_NAMESPACE, EVENTS_SERVICE);
    await rolloutStatus(kc, APP_NAMESPACE, POSTGRES_SERVICE);
    this.#out.info(`      ${POSTGRES_SERVICE} and ${EVENTS_SERVICE} running in ${APP_NAMESPACE}`);
  }

  async #deployOperator(): Promise<void> {
    const aliases = await this.#hostAliases();
    const yaml = okt(manifestArgs(aliases));
    await applyYaml(this.#kubeconfig(), yaml);
    const kinds = parseAllDocuments(yaml).map((d) => (d.toJS() as { kind?: string } | null)?.kind).filter(Boolean);
    this.#out.info(`      applied ${kinds.join(', ')}${aliases.length ? `; no cluster DNS here: --host-alias ${aliases.join(' --host-alias ')}` : ''}`);
    await rolloutStatus(this.#kubeconfig(), OPERATOR_NAMESPACE, OPERATOR_DEPLOYMENT);
  }

  /** Without cluster DNS, the operator resolves the Services' names through hostAliases to their ClusterIPs. */
  async #hostAliases(): Promise<string[]> {
    if (await this.#clusterHasDns()) return [];
    return Promise.all([POSTGRES_SERVICE, EVENTS_SERVICE].map((service) => serviceHostAlias(this.#kubeconfig(), APP_NAMESPACE, service)));
  }

  async #clusterHasDns(): Promise<boolean> {
    try {
      await kubectl(this.#kubeconfig(), ['-n', 'kube-system', 'get', 'service', 'kube-dns', '-o', 'name']);
      return true;
    } catch {
      return false;
    }
  }

  /** The pg_dump files in the database Pod, read with `kubectl exec` as a user would. */
  async #backups(): Promise<string[]> {
    const dir = '/var/lib/okt-pg/backups';
    const out = await kubectl(this.#kubeconfig(), ['-n', APP_NAMESPACE, 'exec', `deploy/${POSTGRES_SERVICE}`, '-c', 'postgres', '--', 'ls', dir]);
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

/** The operator's `okt manifests` flags, as docs/cli.md shows them, plus host aliases where there is no DNS. */
export function manifestArgs(hostAliases: readonly string[]): string[] {
  return [
    'manifests', 'graphs/database.ts', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind', 'Database', '--short-names', 'odb',
    '--image', OKT_IMAGE, '--namespace', OPERATOR_NAMESPACE, '--watch-namespace', APP_NAMESPACE,
    '--sink', SINK_URL, '--sidecar-url', SIDECAR_URL,
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

