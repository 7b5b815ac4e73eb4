import { freePorts } from '../net/free-ports.ts';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { adminGet } from './admin-get.ts';
import { cleanupOnExit } from './exit-guard.ts';
import { killAndWait, killNow, isStillOurs, launchProcess, stopProcess, type ProcessRecord } from './processes.ts';
import { primaryIPv4 } from './host.ts';
import { NODE_NAME, startNode, stopNode, stopNodeNow, type NodeCleanup, type RunningNode } from './node.ts';
import { KUBERNETES_SERVICE_IP, SERVICE_CLUSTER_IP_RANGE, writeKubeconfig, type NodeAccess } from './node-access.ts';
import { writeClusterPki } from './pki.ts';
import { findBinaries, provision, requestedRelease, type Binaries } from './provision.ts';
import { tailOf } from './run.ts';

/** A running etcd + kube-apiserver on loopback. */
export interface ControlPlane {
  /** A kubeconfig for this server (admin token, system:masters). */
  readonly kubeconfigPath: string;
  /** https://127.0.0.1:PORT */
  readonly server: string;
  readonly token: string;
  /** Temporary directory holding etcd's data, certificates, keys, logs and the kubeconfig. */
  readonly dataDir: string;
  readonly processes: readonly ProcessRecord[];
  /** Present when started for a node: the CA, and a token per node component. */
  readonly forNode?: NodeAccess;
  /** The node, when started with `node: true`. */
  readonly node?: RunningNode;
  /** The Kubernetes release it runs (`1.37.2`). */
  readonly kubernetesVersion: string;
  /** The release's own kubectl when it was built with it (releases from Go modules); else undefined (the kubectl on PATH). */
  readonly kubectl?: string;
  /** From launching etcd to the first 200 from /readyz. */
  readonly readyAfterMs: number;
  /** Stop both processes (only if they are still the ones started) and remove the data dir. */
  stop(): Promise<void>;
  /**
   * The same, synchronously and with SIGKILL. Unless started detached, this already runs by itself
   * when this process exits or gets SIGINT/SIGTERM/SIGHUP before stop().
   */
  stopNow(): void;
  /**
   * SIGKILL kube-apiserver alone and start it again with the same flags (same port, certificates and
   * etcd, so every object survives) after `downMs` (default 0), then wait for /readyz. For fault-injection tests.
   */
  restartApiServer(options?: { downMs?: number }): Promise<void>;
}

export interface StartOptions {
  /** Let the processes outlive this one (for `okt cluster up`). Default false. */
  detached?: boolean;
  /** Provision (install, build) when the binaries are missing. Default true. */
  provision?: boolean;
  /** How long to wait for /readyz. Default 60 s. */
  readyTimeoutMs?: number;
  progress?: (line: string) => void;
  /** The Kubernetes release (`1.37`, `1.37.2`). Default: OKT_KUBERNETES_VERSION, else DEFAULT_KUBERNETES_VERSION. */
  kubernetes?: string;
  /**
   * Start a real node too (containerd, kubelet, kube-proxy, kube-controller-manager, kube-scheduler).
   * The API server then listens on the host's primary address (Pods cannot reach its loopback through
   * the `kubernetes` Service) with a CA-signed certificate, the Node authorizer, and a token per
   * component. It changes the host's kernel settings and firewall: only where asked. Default false.
   */
  node?: boolean;
}


/** Where a control plane started by `startControlPlane` keeps each of its parts. */
export function controlPlaneLayout(dataDir: string) {
  return {
    etcdData: join(dataDir, 'etcd'),
    certs: join(dataDir, 'certs'),
    pki: join(dataDir, 'pki'),
    tokens: join(dataDir, 'tokens.csv'),
    serviceAccountKey: join(dataDir, 'sa.key'),
    serviceAccountPub: join(dataDir, 'sa.pub'),
    kubeconfig: join(dataDir, 'kubeconfig'),
    etcdLog: join(dataDir, 'etcd.log'),
    apiserverLog: join(dataDir, 'kube-apiserver.log'),
  };
}

/** Start etcd and kube-apiserver on free loopback ports and wait until the API server is ready. */
export async function startControlPlane(options: StartOptions = {}): Promise<ControlPlane> {
  const withNode = options.node ?? false;
  const wanted = { node: withNode, ...(options.kubernetes === undefined ? {} : { kubernetes: options.kubernetes }) };
  const binaries = options.provision === false ? requireBinaries(options.kubernetes, withNode) : await provision({ progress: options.progress, ...wanted });
  const dataDir = mkdtempSync(join(tmpdir(), 'okt-cluster-'));
  const layout = controlPlaneLayout(dataDir);
  const started: ProcessRecord[] = [];
  let node: RunningNode | undefined;
  const stopNow = () => {
    disarm();
    if (node) stopNodeNow(node.processes);
    for (const record of [...started].reverse()) killNow(record);
    // Retries: a just-killed etcd may still be closing files in there.
    rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 100 });
  };
  // Processes that outlive this one are `okt cluster down`'s to stop; the others must not be orphaned.
  const disarm = options.detached ? () => {} : cleanupOnExit(stopNow);
  try {
    const [etcdPort, etcdPeerPort, apiPort] = await freePorts(3);
    const token = randomBytes(24).toString('hex');
    const address = withNode ? primaryIPv4() : '127.0.0.1';
    const server = `https://${address}:${apiPort}`;
    const forNode = withNode ? nodeAccess({ address, nodeName: NODE_NAME, server }, layout) : undefined;
    writeSecrets(layout, token, forNode);
    writeKubeconfig(layout.kubeconfig, server, { token, caCert: forNode?.pki.caCert });

    const etcdUrl = `http://127.0.0.1:${etcdPort}`;
    const launchedAt = Date.now();
    started.push(
      await launch('etcd', binaries.etcd, [
        `--data-dir=${layout.etcdData}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
        `--initial-cluster=default=http://127.0.0.1:${etcdPeerPort}`,
      ], layout.etcdData, layout.etcdLog, options.detached ?? false),
    );
    const apiserverArgs = [
      `--etcd-servers=${etcdUrl}`,
      `--bind-address=${address}`,
      `--advertise-address=${address}`,
      `--secure-port=${apiPort}`,
      `--cert-dir=${layout.certs}`,
      `--token-auth-file=${layout.tokens}`,
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${layout.serviceAccountPub}`,
      `--service-account-signing-key-file=${layout.serviceAccountKey}`,
      `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
      ...(forNode
        ? [
            `--tls-cert-file=${forNode.pki.apiserverCert}`,
            `--tls-private-key-file=${forNode.pki.apiserverKey}`,
            `--client-ca-file=${forNode.pki.caCert}`,
            `--kubelet-client-certificate=${forNode.pki.kubeletClientCert}`,
            `--kubelet-client-key=${forNode.pki.kubeletClientKey}`,
            // The node's name does not resolve on the host: reach the kubelet (logs, exec) at its address.
            '--kubelet-preferred-address-types=InternalIP,Hostname',
            '--authorization-mode=Node,RBAC',
            '--enable-admission-plugins=NamespaceLifecycle,NodeRestriction',
            '--allow-privileged=true',
          ]
        : [
            '--authorization-mode=RBAC',
            '--enable-admission-plugins=NamespaceLifecycle',
            // The `kubernetes` Service's endpoint would be 127.0.0.1, which no Pod can reach, and a
            // current server (1.37) refuses to start with a loopback address in it: no endpoint then.
            '--endpoint-reconciler-type=none',
          ]),
    ];
    const launchApiServer = () => launch('kube-apiserver', binaries.kubeApiserver, apiserverArgs, layout.certs, layout.apiserverLog, options.detached ?? false);
    started.push(await launchApiServer());
    await waitReady(server, token, started, layout, options.readyTimeoutMs ?? 60_000);
    if (forNode) {
      node = await startNode(forNode, { binaries: binaries.node!, server, adminToken: token, detached: options.detached ?? false, progress: options.progress });
    }
    return {
      kubeconfigPath: layout.kubeconfig,
      server,
      token,
      dataDir,
      processes: started,
      ...(forNode ? { forNode } : {}),
      ...(node ? { node } : {}),
      kubernetesVersion: binaries.kubernetesVersion,
      kubectl: binaries.kubectl,
      readyAfterMs: Date.now() - launchedAt,
      stop: async () => {
        disarm();
        await stopControlPlane({ dataDir, processes: started, ...(node ? { nodeProcesses: node.processes } : {}) });
      },
      stopNow,
      restartApiServer: async ({ downMs = 0 } = {}) => {
        const index = started.findIndex((record) => record.name === 'kube-apiserver');
        await killAndWait(started[index]!);
        await sleep(downMs);
        // Meanwhile a client's loopback connect may have taken the (ephemeral) port as its own source
        // port, connecting to itself; such a socket soon closes, so the launch is tried again.
        for (let attempt = 1; ; attempt++) {
          started[index] = await launchApiServer();
          try {
            await waitReady(server, token, started, layout, options.readyTimeoutMs ?? 60_000);
            return;
          } catch (error) {
            if (attempt === 20 || !/address already in use/.test((error as Error).message)) throw error;
            await sleep(250);
          }
        }
      },
    };
  } catch (error) {
    stopNow();
    throw error;
  }
}

/**
 * Stop what a control plane started (possibly by another process: `okt cluster down`): its node first
 * (which puts the host back as it was), then the API server, so it does not log a storm of etcd errors
 * on its way down, then etcd. Returns what the node's stop cleaned, when there was a node.
 */
export async function stopControlPlane(plane: {
  dataDir: string;
  processes: readonly ProcessRecord[];
  nodeProcesses?: readonly ProcessRecord[] | undefined;
}): Promise<NodeCleanup | undefined> {
  const cleanup = plane.nodeProcesses ? await stopNode(plane.nodeProcesses) : undefined;
  for (const record of [...plane.processes].reverse()) await stopProcess(record);
  rmSync(plane.dataDir, { recursive: true, force: true });
  return cleanup;
}

function requireBinaries(kubernetes: string | undefined, node: boolean): Binaries {
  const release = requestedRelease(kubernetes);
  const binaries = findBinaries(process.env, release, node);
  if (!binaries) throw new Error(`a binary of Kubernetes ${release.version} is missing: run \`npx okt cluster provision${node ? ' --node' : ''} --kubernetes ${release.version}\``);
  return binaries;
}

function launch(name: string, executable: string, args: string[], marker: string, logPath: string, detached: boolean): Promise<ProcessRecord> {
  const markerArg = args.find((a) => a.endsWith(`=${marker}`));
  if (!markerArg) throw new Error(`no argument of ${name} names ${marker}`);
  return launchProcess({ name, executable, args, marker: markerArg, logPath, detached });
}

function nodeAccess(node: { address: string; nodeName: string; server: string }, layout: ReturnType<typeof controlPlaneLayout>): NodeAccess {
  const newToken = () => randomBytes(24).toString('hex');
  return {
    ...node,
    pki: writeClusterPki(layout.pki, { address: node.address, kubernetesServiceIp: KUBERNETES_SERVICE_IP }),
    serviceAccountKey: layout.serviceAccountKey,
    tokens: { 'kube-controller-manager': newToken(), 'kube-scheduler': newToken(), kubelet: newToken(), 'kube-proxy': newToken() },
  };
}

/** token,user,uid,"groups": the identities Kubernetes' bootstrap roles and the Node authorizer know. */
function componentTokenLines(node: NodeAccess): string[] {
  const { tokens } = node;
  return [
    `${tokens['kube-controller-manager']},system:kube-controller-manager,okt-kcm`,
    `${tokens['kube-scheduler']},system:kube-scheduler,okt-scheduler`,
    `${tokens.kubelet},system:node:${node.nodeName},okt-kubelet,"system:nodes"`,
    `${tokens['kube-proxy']},system:kube-proxy,okt-proxy`,
  ];
}

function writeSecrets(layout: ReturnType<typeof controlPlaneLayout>, token: string, node: NodeAccess | undefined): void {
  mkdirSync(layout.certs, { recursive: true, mode: 0o700 });
  mkdirSync(layout.etcdData, { recursive: true, mode: 0o700 });
  const lines = [`${token},admin,1,"system:masters"`, ...(node ? componentTokenLines(node) : [])];
  writeFileSync(layout.tokens, lines.join('\n') + '\n', { mode: 0o600 });
  const { privateKey, publicKey } = generateKeyPairSync('rsa', {
    modulusLength: 2048,
    publicKeyEncoding: { type: 'spki', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  });
  writeFileSync(layout.serviceAccountKey, privateKey, { mode: 0o600 });
  writeFileSync(layout.serviceAccountPub, publicKey);
}



/** GET /readyz with the token: the HTTP status, or undefined when nothing answers yet. */
export async function readyzStatus(server: string, token: string): Promise<number | undefined> {
  return (await adminGet(server, token, '/readyz'))?.status;
}

async function waitReady(
  server: string,
  token: string,
  started: readonly ProcessRecord[],
  layout: ReturnType<typeof controlPlaneLayout>,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const logs: Record<string, string> = { etcd: layout.etcdLog, 'kube-apiserver': layout.apiserverLog };
  for (;;) {
    if ((await readyzStatus(server, token)) === 200) return;
    const dead = started.find((record) => !isStillOurs(record));
    if (dead) {
      const log = logs[dead.name] ?? '';
      throw new Error(`${dead.name} exited before the API server was ready; last lines of its log:\n${tailOf(log, 20)}`);
    }
    if (Date.now() > deadline) {
      throw new Error(
        `kube-apiserver not ready on ${server}/readyz after ${timeoutMs / 1000} s; last lines of its log:\n${tailOf(layout.apiserverLog, 20)}`,
      );
    }
    await sleep(200);
  }
}
