// okt deployed on the real node for the in-cluster fault suite, as a user deploys it: the image built
// from the Dockerfile, `okt manifests ... | kubectl apply -f -` for the operator (its least-privilege
// ServiceAccount), PostgreSQL Pods carrying the `okt manifests --sidecar-only` container, and a
// CloudEvents sink on the host that records every delivery.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { startControlPlane, type ControlPlane } from '../../src/cluster/index.ts';
import { buildImage, loadIntoContainerd } from '../../src/cluster/image.ts';
import { applyYaml, namespaceWithToken, rolloutStatus, serviceHostAlias } from '../../src/demo/in-cluster/kubectl.ts';
import { okt, sidecarSnippetFromCli } from '../../src/demo/in-cluster/demo.ts';
import { OKT_IMAGE, POSTGRES_IMAGE, POSTGRES_SERVICE, SIDECAR_CONFIGMAP, TOKEN_SECRET, postgresDeployment, service, serviceHost } from '../../src/demo/in-cluster/objects.ts';
import { createLifecycleEventReceiver, type LifecycleEvent, type LifecycleEventReceiver } from '../../src/events/index.ts';
import { SidecarPod } from './sidecar-pod.ts';

const REPO = path.resolve(import.meta.dirname, '../..');
export const OPERATOR_NAMESPACE = 'okt-system';
export const OPERATOR = 'okt-database';
/** Where the walks run (the operator's default sidecar), and a namespace that a fault deletes whole. */
export const WALK_NAMESPACE = 'okt-walk';
export const DOOMED_NAMESPACE = 'okt-doomed';
const RUNS_MOUNT = '/var/lib/okt-runs';
const ACTION_SECONDS = 2;

export interface InClusterSystem {
  plane: ControlPlane;
  kubeconfig: string;
  kc: KubeConfig;
  /** Every delivery the sink received, redeliveries included, in arrival order. */
  received: LifecycleEvent[];
  sidecars: Record<typeof WALK_NAMESPACE | typeof DOOMED_NAMESPACE, SidecarPod>;
  /** The operator's `okt manifests` output, as applied. */
  manifests: string;
  stop(): Promise<void>;
}

export async function startSystem(log: (line: string) => void): Promise<InClusterSystem> {
  const plane = await startControlPlane({ node: true, progress: log });
  const work = mkdtempSync(path.join(tmpdir(), 'okt-in-cluster-'));
  let receiver: LifecycleEventReceiver | undefined;
  try {
    for (const [tag, dockerfile] of [[OKT_IMAGE, undefined], [POSTGRES_IMAGE, path.join(REPO, 'sidecar/adapters/postgres/Dockerfile')]] as const) {
      await buildImage({ contextDir: REPO, tag, ...(dockerfile ? { dockerfile } : {}), progress: log });
      await loadIntoContainerd({ image: tag, progress: log });
    }
    const kubeconfig = plane.kubeconfigPath;
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const received: LifecycleEvent[] = [];
    const address = plane.node!.address;
    // dedupe 0: redeliveries reach the checks too.
    receiver = await createLifecycleEventReceiver({ host: address, port: 0, dedupe: 0, onEvent: (event) => void received.push(event) });

    const token = randomBytes(32).toString('hex');
    for (const namespace of [OPERATOR_NAMESPACE, WALK_NAMESPACE, DOOMED_NAMESPACE]) await namespaceWithToken(kubeconfig, namespace, TOKEN_SECRET, token);
    const sidecars = {} as InClusterSystem['sidecars'];
    const snippet = sidecarSnippetFromCli();
    for (const namespace of [WALK_NAMESPACE, DOOMED_NAMESPACE] as const) {
      const runsDir = path.join(work, namespace);
      mkdirSync(runsDir);
      chmodSync(runsDir, 0o777);
      await applyYaml(kubeconfig, JSON.stringify(service(POSTGRES_SERVICE, 8479, 'okt-sidecar', namespace)));
      await applyYaml(kubeconfig, JSON.stringify({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: SIDECAR_CONFIGMAP, namespace },
        data: { 'sidecar.yaml': countingRuns(readFileSync(path.join(REPO, 'sidecar/adapters/postgres/database.sidecar.in-pod.yaml'), 'utf8')) },
      }));
      await applyYaml(kubeconfig, JSON.stringify(postgresDeployment(snippet, {
        namespace,
        sidecarVolumes: [{ volume: { name: 'runs', hostPath: { path: runsDir, type: 'Directory' } }, mount: { name: 'runs', mountPath: RUNS_MOUNT } }],
      })));
      sidecars[namespace] = new SidecarPod({ kubeconfig, namespace, app: POSTGRES_SERVICE, runsLog: path.join(runsDir, 'runs.log'), keepDir: work });
    }
    // No cluster DNS on this node: the operator resolves the Services' names through hostAliases.
    const aliases: string[] = [];
    for (const namespace of [WALK_NAMESPACE, DOOMED_NAMESPACE]) aliases.push('--host-alias', await serviceHostAlias(kubeconfig, namespace, POSTGRES_SERVICE));
    const manifests = okt([
      'manifests', 'graphs/database.ts', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind', 'Database',
      '--image', OKT_IMAGE, '--namespace', OPERATOR_NAMESPACE, '--no-create-namespace',
      '--sink', receiver.url.replace('127.0.0.1', address),
      '--sidecar-url', `http://${serviceHost(POSTGRES_SERVICE, WALK_NAMESPACE)}:8479`,
      '--sidecar-url-allow', `http://${serviceHost(POSTGRES_SERVICE, DOOMED_NAMESPACE)}:8479`,
      '--teardown-grace', '10',
      ...aliases,
    ]);
    await applyYaml(kubeconfig, manifests);
    for (const [namespace, deployment] of [[WALK_NAMESPACE, POSTGRES_SERVICE], [DOOMED_NAMESPACE, POSTGRES_SERVICE], [OPERATOR_NAMESPACE, OPERATOR]] as const) {
      await rolloutStatus(kubeconfig, namespace, deployment);
    }
    const sink = receiver;
    return {
      plane, kubeconfig, kc, received, sidecars, manifests,
      stop: async () => {
        await sink.close();
        await plane.stop();
        rmSync(work, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await receiver?.close();
    await plane.stop();
    rmSync(work, { recursive: true, force: true });
    throw error;
  }
}

/**
 * The in-Pod sidecar config with every action first appending its operation id to the runs log (a
 * hostPath), then taking ACTION_SECONDS more, so that a fault aimed at a running action lands in one.
 */
function countingRuns(configYaml: string): string {
  const config = parse(configYaml) as { graphs: Record<string, { nodes: Record<string, { command: { argv: string[] } }> }> };
  for (const graph of Object.values(config.graphs)) {
    for (const node of Object.values(graph.nodes)) {
      node.command.argv = ['sh', '-c', `echo "$OKT_OPERATION_ID" >> ${RUNS_MOUNT}/runs.log; sleep ${ACTION_SECONDS}; exec "$0" "$@"`, ...node.command.argv];
    }
  }
  return stringify(config);
}
