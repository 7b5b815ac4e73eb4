// The whole local demo behind `npm start`: a real control plane, the database CRD, a real PostgreSQL
// behind the sidecar, an event receiver, the operator, and a CR walked through the database graph.
import { chmodSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { KubeConfig } from '@kubernetes/client-node';
import { databaseGraph } from '../../graphs/database.ts';
import { startControlPlane, type ControlPlane } from '../cluster/index.ts';
import { createLogger } from '../controller/index.ts';
import { startOperator, type RunningOperator } from '../controller/lifecycle/index.ts';
import { createLifecycleEventReceiver, type LifecycleEvent, type LifecycleEventReceiver } from '../events/index.ts';
import { generateCrd } from '../kube/crd.ts';
import { findCondition } from '../kube/conditions.ts';
import type { LifecycleStatus } from '../kube/lifecycle-resource.ts';
import { KubeTransport, type KubeObject } from '../kube/transport/index.ts';
import { freePort } from '../net/free-ports.ts';
import { waitFor } from '../util/wait-for.ts';
import { ensurePostgresInstalled } from '../../sidecar/adapters/postgres/install.ts';
import { loadSidecarConfig, startSidecar, type RunningSidecar } from '../../sidecar/index.ts';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CRDS = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', namespaced: false } as const;
export const DEMO_RESOURCE = { group: 'okt.dev', version: 'v1alpha1', plural: 'databases', kind: 'Database' } as const;
export const DEMO_NAME = 'demo';
export const DEMO_NAMESPACE = 'default';
/** The walk of the seed's story, one spec edit per step. */
export const DEMO_WALK = ['Running', 'Servicing', 'Running', 'Stopping', 'End'] as const;

export interface DemoOutput {
  step(line: string): void;
  event(event: LifecycleEvent): void;
  info(line: string): void;
}

type DatabaseObject = KubeObject & { spec: { desiredState: string }; status?: LifecycleStatus };

/** Everything the demo started, stopped in reverse order by `stop()`, whatever step it got to. */
export class DatabaseDemo {
  plane: ControlPlane | undefined;
  transport: KubeTransport | undefined;
  sidecar: RunningSidecar | undefined;
  receiver: LifecycleEventReceiver | undefined;
  operator: RunningOperator | undefined;
  readonly workDir: string;
  readonly #out: DemoOutput;
  #pgEnv: Record<string, string> | undefined;

  constructor(out: DemoOutput) {
    this.#out = out;
    // World-traversable: PostgreSQL runs as the postgres OS user when the demo runs as root.
    this.workDir = mkdtempSync(path.join(tmpdir(), 'okt-demo-'));
    chmodSync(this.workDir, 0o755);
  }

  readonly name = DEMO_NAME;

  get kubeconfigPath(): string | undefined {
    return this.plane?.kubeconfigPath;
  }

  get backupDir(): string {
    return path.join(this.workDir, 'pg', 'backups');
  }

  async start(): Promise<void> {
    this.#out.step('[1/5] control plane: etcd + kube-apiserver on loopback (the first run builds kube-apiserver: about 10 minutes)');
    this.plane = await startControlPlane({ progress: (line) => this.#out.info(`      ${line}`) });
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(this.plane.kubeconfigPath);
    this.transport = await KubeTransport.fromKubeConfig(kubeConfig);
    this.#out.info(`      ready after ${(this.plane.readyAfterMs / 1000).toFixed(1)} s; KUBECONFIG=${this.plane.kubeconfigPath}`);

    this.#out.step('[2/5] CRD databases.okt.dev, generated from graphs/database.ts');
    await this.#applyCrd();

    this.#out.step('[3/5] PostgreSQL 15 behind the okt sidecar (graphs/database.sidecar.yaml)');
    ensurePostgresInstalled((line) => this.#out.info(`      ${line}`));
    const token = randomBytes(24).toString('base64url');
    const tokenFile = path.join(this.workDir, 'sidecar.token');
    writeFileSync(tokenFile, token, { mode: 0o600 });
    this.#pgEnv = { OKT_PG_DIR: path.join(this.workDir, 'pg'), OKT_PG_PORT: String(await freePort()), OKT_SIDECAR_PORT: '0', OKT_SIDECAR_TOKEN_FILE: tokenFile };
    const config = loadSidecarConfig(path.join(REPO, 'graphs/database.sidecar.yaml'), { ...process.env, ...this.#pgEnv });
    this.sidecar = await startSidecar({ ...config, logLevel: 'warn' });
    this.#out.info(`      sidecar ${this.sidecar.url}; data in ${this.#pgEnv.OKT_PG_DIR}`);

    this.#out.step('[4/5] CloudEvents receiver and the operator');
    this.receiver = await createLifecycleEventReceiver({ onEvent: (event) => this.#out.event(event) });
    this.operator = await startOperator({
      kubeConfig,
      graph: databaseGraph,
      resource: DEMO_RESOURCE,
      sidecar: { url: this.sidecar.url, token },
      events: { sink: this.receiver.url },
      health: { port: 0, host: '127.0.0.1' },
      pollIntervalMs: 2_000,
      logger: createLogger({ level: 'warn' }),
    });
    this.#out.info(`      events to ${this.receiver.url}; operator /metrics on 127.0.0.1:${this.operator.manager.healthPort}`);
  }

  /** Creates the CR and walks it, one spec edit per step, waiting for Ready each time. */
  async walk(): Promise<void> {
    const transport = this.#need(this.transport);
    this.#out.step(`[5/5] the walk: ${['Start', ...DEMO_WALK].join(' -> ')}, one spec.desiredState edit per step`);
    for (const [i, desired] of DEMO_WALK.entries()) {
      const started = Date.now();
      if (i === 0) {
        await transport.create(DEMO_RESOURCE, DEMO_NAMESPACE, {
          apiVersion: `${DEMO_RESOURCE.group}/${DEMO_RESOURCE.version}`,
          kind: DEMO_RESOURCE.kind,
          metadata: { name: DEMO_NAME },
          // Keep: at End the CR stays, for kubectl and okt status to show (the default deletes it).
          spec: { desiredState: desired, onLeaf: 'Keep' },
        });
        this.#out.info(`  created database/${DEMO_NAME} with spec.desiredState=${desired}`);
      } else {
        await transport.patch(DEMO_RESOURCE, DEMO_NAMESPACE, DEMO_NAME, { spec: { desiredState: desired } });
        this.#out.info(`  spec.desiredState=${desired}`);
      }
      const db = await waitForReady(transport, DEMO_NAMESPACE, DEMO_NAME, desired);
      this.#out.info(`  ${desired} reached and Ready in ${Date.now() - started} ms; path ${db.status?.pathSummary ?? ''}`);
      if (desired === 'Servicing') this.#out.info(`  backup written: ${this.#backups().join(', ') || '(none found)'}`);
    }
  }

  tryThese(): string {
    return [
      `  export KUBECONFIG=${this.kubeconfigPath}`,
      `  kubectl get databases                       # State, Desired, Ready, Age`,
      `  kubectl get database ${this.name} -o yaml             # status: path, conditions, outbox`,
      `  kubectl wait --for=condition=End database/${this.name}`,
      `  npx okt status database/${this.name}                  # the graph with the path walked`,
      `  ls ${this.backupDir}   # the pg_dump taken in Servicing`,
    ].join('\n');
  }

  async stop(): Promise<void> {
    await this.operator?.stop();
    await this.receiver?.close();
    await this.sidecar?.close();
    if (this.#pgEnv) {
      // In case the walk was cut short before Stopping: the server must not outlive the demo.
      try {
        execFileSync(path.join(REPO, 'sidecar/adapters/postgres/pg.sh'), ['stop'], { env: { ...process.env, ...this.#pgEnv }, stdio: 'ignore' });
      } catch {
        // Never started, or already stopped.
      }
    }
    await this.transport?.close();
    await this.plane?.stop();
    rmSync(this.workDir, { recursive: true, force: true });
  }

  async #applyCrd(): Promise<void> {
    const transport = this.#need(this.transport);
    const crd = generateCrd(databaseGraph, { ...DEMO_RESOURCE, shortNames: ['odb'] }) as KubeObject;
    // Server-side apply: okt owns its CRD (managedFields: `okt`, Apply), and applying it again is a no-op.
    await transport.apply(CRDS, undefined, crd, { force: true });
    await waitFor('the CRD to be Established and served', async () => {
      const current = await transport.get<KubeObject & { status?: { conditions?: { type: string; status: string }[] } }>(CRDS, undefined, crd.metadata.name ?? '');
      if (!current.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return undefined;
      await transport.list(DEMO_RESOURCE, { namespace: DEMO_NAMESPACE, limit: 1 });
      return true;
    }, { timeoutMs: 60_000 });
  }

  #backups(): string[] {
    try {
      return readdirSync(this.backupDir).filter((f) => f.endsWith('.dump')).map((f) => path.join(this.backupDir, f));
    } catch {
      return [];
    }
  }

  #need<T>(value: T | undefined): T {
    if (value === undefined) throw new Error('the demo is not started');
    return value;
  }
}

class DemoStalled extends Error {}

/** Until the CR rests at `desired`, Ready for its current spec; fails at once when it is Stalled. */
export function waitForReady(transport: KubeTransport, namespace: string, name: string, desired: string): Promise<DatabaseObject> {
  return waitFor(`database/${name} to reach ${desired} and be Ready`, async () => {
    const db = await transport.get<DatabaseObject>(DEMO_RESOURCE, namespace, name);
    const conditions = db.status?.conditions ?? [];
    const stalled = findCondition(conditions, 'Stalled');
    if (stalled?.status === 'True') throw new DemoStalled(`database/${name} is Stalled (${stalled.reason}): ${stalled.message}`);
    const ready = findCondition(conditions, 'Ready')?.status === 'True';
    return db.status?.state === desired && ready && db.status.observedGeneration === db.metadata.generation ? db : undefined;
  }, { timeoutMs: 300_000, isFatal: (error) => error instanceof DemoStalled });
}
