import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import { SERVICE_CLUSTER_IP_RANGE, writeKubeconfig, type NodeAccess, type NodeComponent } from './node-access.ts';
import {
  removeKubepodsCgroups,
  removeLink,
  removeNodeFirewallChains,
  removePodLogs,
  removeStalePodNetns,
  restoreHostSettings,
  saveHostSettings,
  unmountUnder,
  writeSysctl,
} from './host.ts';
import { adminGet } from './admin-get.ts';
import { ctr } from './ctr.ts';
import { importPauseImage, PAUSE_IMAGE } from './pause-image.ts';
import { NODE_DATA_DIR, NODE_RUN_DIR, nodeContainerdSocket } from './paths.ts';
import type { NodeBinaries } from './kubernetes-modules.ts';
import { exitStatusOf, isStillOurs, killAndWait, killNow, killPids, launchProcess, pidsWhere, stopProcess, type ProcessRecord } from './processes.ts';
import { waitFor } from '../util/wait-for.ts';
import { tailOf } from './run.ts';

// One real node on this host: containerd + CNI + kubelet + kube-proxy, and the controllers a node needs
// (kube-controller-manager, kube-scheduler). Facts behind each setting: ../shared/reference/real-node.md.

export const NODE_NAME = 'okt-node';
/** The cluster's Pod range; kube-controller-manager gives the (only) node its first /24. */
export const CLUSTER_CIDR = '10.244.0.0/16';
const NODE_POD_CIDR = '10.244.0.0/24';
const BRIDGE = 'okt0';
/** Only one node per host: the kubelet's and kube-proxy's ports and the bridge are fixed. */
const FIXED_PORTS = [10250, 10248, 10249, 10256, 10257, 10259];

export interface NodeLayout {
  dataDir: string;
  runDir: string;
  /** Kept across runs: containerd's image store (so the okt image and the pause image stay). */
  containerdRoot: string;
  containerdState: string;
  containerdConfig: string;
  socket: string;
  runcRoot: string;
  cniConfDir: string;
  cniDataDir: string;
  kubeletRoot: string;
  configDir: string;
  logDir: string;
  hostSettings: string;
}

export function nodeLayout(): NodeLayout {
  const data = NODE_DATA_DIR;
  const run = NODE_RUN_DIR;
  return {
    dataDir: data,
    runDir: run,
    containerdRoot: join(data, 'containerd'),
    containerdState: join(run, 'containerd'),
    containerdConfig: join(data, 'config', 'containerd.toml'),
    socket: nodeContainerdSocket(),
    runcRoot: join(run, 'runc'),
    cniConfDir: join(data, 'cni', 'net.d'),
    cniDataDir: join(data, 'cni', 'ipam'),
    kubeletRoot: join(data, 'kubelet'),
    configDir: join(data, 'config'),
    logDir: join(data, 'logs'),
    hostSettings: join(data, 'host-settings.json'),
  };
}

export interface RunningNode {
  readonly name: string;
  readonly address: string;
  readonly processes: readonly ProcessRecord[];
  /** From launching containerd to the Node's Ready condition. */
  readonly readyAfterMs: number;
  /**
   * SIGKILL one component and start it again with the same arguments after `downMs` (default 0), as a
   * crash and a restart by a supervisor would: for fault-injection tests (the kubelet restarted).
   */
  restart(component: NodeComponent | 'containerd', options?: { downMs?: number }): Promise<void>;
}

export interface NodeStartOptions {
  /** The node's programs, as provisioned for the control plane's release. */
  binaries: NodeBinaries;
  /** The admin kubeconfig's server and token, to watch the Node become Ready. */
  server: string;
  adminToken: string;
  detached: boolean;
  readyTimeoutMs?: number;
  progress?: (line: string) => void;
}

/** Start the node's components against a control plane started `forNode`, and wait until the Node is Ready. */
export async function startNode(access: NodeAccess, options: NodeStartOptions): Promise<RunningNode> {
  const layout = nodeLayout();
  const progress = options.progress ?? (() => {});
  const launchedAt = Date.now();
  const started: ProcessRecord[] = [];
  if (process.getuid?.() !== 0) {
    throw new Error('a node needs root: it sets kernel settings, firewall rules, mounts and cgroups (run `npx okt cluster up --node` as root)');
  }
  try {
    repairAfterCrash(layout, progress);
    refuseBusyPorts();
    for (const dir of [layout.configDir, layout.logDir, layout.cniConfDir, layout.cniDataDir, layout.kubeletRoot, layout.containerdRoot, layout.containerdState, layout.runcRoot]) {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
    }
    saveHostSettings(layout.hostSettings);
    // Pod egress and ClusterIP DNAT route through the host.
    writeSysctl('net.ipv4.ip_forward', '1');
    writeConfigs(layout, access);

    const { binaries } = options;
    const commands = new Map<string, { executable: string; args: string[] }>();
    const launch = async (name: string, executable: string, args: string[]) => {
      commands.set(name, { executable, args });
      started.push(await launchComponent(name, executable, args, layout, options.detached, binaries));
    };
    /** The component with the same arguments, its log appended to. */
    const launchAgain = async (component: string) => {
      const index = started.findIndex((record) => record.name === component);
      const command = commands.get(component);
      if (index < 0 || !command) throw new Error(`no ${component} runs on this node`);
      started[index] = await launchComponent(component, command.executable, command.args, layout, options.detached, binaries, false);
    };
    const components: Components = { started, layout, restarted: new Set(), relaunch: launchAgain, progress };
    await launch('containerd', binaries.containerd, ['--config', layout.containerdConfig]);
    await waitWhileRunning('containerd', () => existsSync(layout.socket) || undefined, components, 20_000);
    importPauseImage(layout.socket, binaries.pause);

    const kubeconfig = (component: NodeComponent) => join(layout.configDir, `${component}.kubeconfig`);
    await launch('kube-controller-manager', binaries.kubeControllerManager, [
      `--kubeconfig=${kubeconfig('kube-controller-manager')}`,
      `--authentication-kubeconfig=${kubeconfig('kube-controller-manager')}`,
      `--authorization-kubeconfig=${kubeconfig('kube-controller-manager')}`,
      '--use-service-account-credentials',
      `--service-account-private-key-file=${access.serviceAccountKey}`,
      `--root-ca-file=${access.pki.caCert}`,
      `--cluster-signing-cert-file=${access.pki.caCert}`,
      `--cluster-signing-key-file=${access.pki.caKey}`,
      '--allocate-node-cidrs',
      `--cluster-cidr=${CLUSTER_CIDR}`,
      '--node-cidr-mask-size=24',
      `--service-cluster-ip-range=${SERVICE_CLUSTER_IP_RANGE}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--cert-dir=${join(layout.configDir, 'kcm-certs')}`,
    ]);
    await launch('kube-scheduler', binaries.kubeScheduler, [
      `--kubeconfig=${kubeconfig('kube-scheduler')}`,
      `--authentication-kubeconfig=${kubeconfig('kube-scheduler')}`,
      `--authorization-kubeconfig=${kubeconfig('kube-scheduler')}`,
      '--leader-elect=false',
      '--bind-address=127.0.0.1',
      `--cert-dir=${join(layout.configDir, 'scheduler-certs')}`,
    ]);
    await launch('kubelet', binaries.kubelet, [
      `--config=${join(layout.configDir, 'kubelet.yaml')}`,
      `--kubeconfig=${kubeconfig('kubelet')}`,
      `--node-ip=${access.address}`,
      `--hostname-override=${access.nodeName}`,
      `--root-dir=${layout.kubeletRoot}`,
      `--cert-dir=${join(layout.kubeletRoot, 'pki')}`,
    ]);
    await launch('kube-proxy', binaries.kubeProxy, [
      `--kubeconfig=${kubeconfig('kube-proxy')}`,
      '--proxy-mode=iptables',
      `--cluster-cidr=${CLUSTER_CIDR}`,
      `--hostname-override=${access.nodeName}`,
      '--healthz-bind-address=127.0.0.1:10256',
      '--metrics-bind-address=127.0.0.1:10249',
      // Leave the host's conntrack settings alone.
      '--conntrack-max-per-core=0',
      '--conntrack-tcp-timeout-established=0',
      '--conntrack-tcp-timeout-close-wait=0',
      `--config-sync-period=15m`,
    ]);
    progress(`okt cluster: node ${access.nodeName} starting (containerd, kubelet, kube-proxy, kube-controller-manager, kube-scheduler; logs in ${layout.logDir})`);
    await waitWhileRunning(`Node ${access.nodeName} Ready`, () => nodeIsReady(options.server, options.adminToken, access.nodeName), components, options.readyTimeoutMs ?? 120_000);
    const restart = async (component: string, { downMs = 0 } = {}) => {
      const record = started.find((r) => r.name === component);
      if (!record) throw new Error(`no ${component} runs on this node`);
      await killAndWait(record);
      await sleep(downMs);
      await launchAgain(component);
    };
    return { name: access.nodeName, address: access.address, processes: started, readyAfterMs: Date.now() - launchedAt, restart };
  } catch (error) {
    stopNodeNow(started);
    throw error;
  }
}

function refuseBusyPorts(): void {
  const listening = readFileSync('/proc/net/tcp', 'utf8') + (existsSync('/proc/net/tcp6') ? readFileSync('/proc/net/tcp6', 'utf8') : '');
  const busy = FIXED_PORTS.filter((port) => new RegExp(`:${port.toString(16).toUpperCase().padStart(4, '0')} [0-9A-F:]+ 0A `).test(listening));
  if (busy.length > 0) {
    throw new Error(`ports ${busy.join(', ')} are in use: another kubelet or kube-proxy runs on this host (okt runs one node per host)`);
  }
}

function writeConfigs(layout: NodeLayout, access: NodeAccess): void {
  const { server } = access;
  for (const component of Object.keys(access.tokens) as NodeComponent[]) {
    writeKubeconfig(join(layout.configDir, `${component}.kubeconfig`), server, { token: access.tokens[component], caCert: access.pki.caCert }, component);
  }
  // containerd 2's configuration (version 3): the CRI's image and runtime halves are plugins of their own.
  const images = 'plugins."io.containerd.cri.v1.images"';
  const runtime = 'plugins."io.containerd.cri.v1.runtime"';
  writeFileSync(
    layout.containerdConfig,
    [
      'version = 3',
      `root = "${layout.containerdRoot}"`,
      `state = "${layout.containerdState}"`,
      '[grpc]',
      `  address = "${layout.socket}"`,
      '[plugins."io.containerd.internal.v1.opt"]',
      `  path = "${join(layout.dataDir, 'opt')}"`,
      `[${images}]`,
      '  snapshotter = "overlayfs"',
      `[${images}.pinned_images]`,
      `  sandbox = "${PAUSE_IMAGE}"`,
      `[${runtime}]`,
      // Without CAP_SYS_RESOURCE a negative oom_score_adj (every pause container's -998) fails every sandbox.
      '  restrict_oom_score_adj = true',
      '  tolerate_missing_hugetlb_controller = true',
      `[${runtime}.containerd]`,
      '  default_runtime_name = "runc"',
      `[${runtime}.containerd.runtimes.runc]`,
      '  runtime_type = "io.containerd.runc.v2"',
      `[${runtime}.containerd.runtimes.runc.options]`,
      '  SystemdCgroup = false',
      `  Root = "${layout.runcRoot}"`,
      `[${runtime}.cni]`,
      '  bin_dirs = ["/usr/lib/cni"]',
      `  conf_dir = "${layout.cniConfDir}"`,
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(layout.cniConfDir, '10-okt.conflist'),
    JSON.stringify(
      {
        cniVersion: '0.4.0',
        name: 'okt',
        plugins: [
          {
            type: 'bridge',
            bridge: BRIDGE,
            isGateway: true,
            ipMasq: true,
            hairpinMode: true,
            ipam: { type: 'host-local', ranges: [[{ subnet: NODE_POD_CIDR }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: layout.cniDataDir },
          },
          { type: 'portmap', capabilities: { portMappings: true } },
        ],
      },
      null,
      2,
    ),
  );
  writeFileSync(
    join(layout.configDir, 'kubelet.yaml'),
    stringify({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: access.pki.caCert } },
      authorization: { mode: 'Webhook' },
      cgroupDriver: 'cgroupfs',
      containerRuntimeEndpoint: `unix://${layout.socket}`,
      // This host is cgroup v1 (docs/operations.md "A node on cgroup v1"): a kubelet from 1.35 on refuses it unless told not to.
      failCgroupV1: false,
      readOnlyPort: 0,
      failSwapOn: false,
      clusterDomain: 'cluster.local',
      volumePluginDir: join(layout.dataDir, 'volume-plugins'),
      evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '2%', 'imagefs.available': '2%' },
      // A restarted container is back soon (the fault suite kills them).
      serializeImagePulls: false,
    }),
  );
}

function launchComponent(name: string, executable: string, args: string[], layout: NodeLayout, detached: boolean, binaries: NodeBinaries, freshLog = true): Promise<ProcessRecord> {
  // Every component names a path under the node's directories: that argument identifies it as ours.
  const marker = args.find((a) => a.includes(layout.dataDir) || a.includes(layout.runDir));
  if (!marker) throw new Error(`no argument of ${name} names the node's directories`);
  return launchProcess({
    name,
    executable,
    args,
    marker,
    // A fresh log per start (a crashed run's logs stay until the next start).
    logPath: join(layout.logDir, `${name}.log`),
    freshLog,
    detached,
    // The kubelet and kube-proxy find iptables, mount and the CNI plugins' tools on PATH; containerd finds its runc shim there.
    env: { ...process.env, PATH: `${dirname(binaries.containerdShim)}:/usr/sbin:/usr/bin:/sbin:/bin:${process.env.PATH ?? ''}` },
  });
}

/**
 * Wait for `what`. A component that exits meanwhile is started again once, as its supervisor on a real
 * node would (systemd's Restart=on-failure); a second exit fails at once with how it ended and its log.
 */
function waitWhileRunning<T>(what: string, check: () => T | undefined | Promise<T | undefined>, components: Components, timeoutMs: number): Promise<T> {
  const { started, layout } = components;
  const logTail = (name: string, lines: number) => tailOf(join(layout.logDir, `${name}.log`), lines);
  return waitFor(
    what,
    async () => {
      const dead = started.find((record) => !isStillOurs(record));
      if (dead) {
        const how = `${dead.name} exited (${exitStatusOf(dead) ?? 'how, this process did not see'})`;
        if (components.restarted.has(dead.name)) {
          throw new ComponentExited(`${how} again while waiting for ${what}; last lines of its log:\n${logTail(dead.name, 20) || '(empty)'}`);
        }
        components.restarted.add(dead.name);
        components.progress(`okt cluster: ${how} while waiting for ${what}; starting it again (log: ${join(layout.logDir, `${dead.name}.log`)}): ${logTail(dead.name, 3) || 'its log is empty'}`);
        await components.relaunch(dead.name);
        return undefined;
      }
      return check();
    },
    { timeoutMs, intervalMs: 250, isFatal: (error) => error instanceof ComponentExited },
  ).catch((error: unknown) => {
    if (error instanceof ComponentExited) throw error;
    const logs = started.map((r) => `--- ${r.name}:\n${logTail(r.name, 8)}`).join('\n');
    throw new Error(`${(error as Error).message}; last lines of the logs:\n${logs}`);
  });
}

/** The node's components as started, and how to start one again. */
interface Components {
  readonly started: ProcessRecord[];
  readonly layout: NodeLayout;
  /** Components started again after an exit while waiting (once each). */
  readonly restarted: Set<string>;
  relaunch(name: string): Promise<void>;
  progress(line: string): void;
}

class ComponentExited extends Error {}

/** The Node's Ready condition is True. */
async function nodeIsReady(server: string, token: string, nodeName: string): Promise<true | undefined> {
  const answer = await adminGet(server, token, `/api/v1/nodes/${nodeName}`);
  if (answer?.status !== 200) return undefined;
  const node = JSON.parse(answer.body) as { status?: { conditions?: { type: string; status: string }[] } };
  return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? true : undefined;
}

/** What a stop put back, for the user to read. */
export interface NodeCleanup {
  killedPodProcesses: number;
  unmounted: number;
  firewallRules: number;
  netns: number;
  cgroups: number;
  sysctls: string[];
}

/**
 * Stop the node: its components (SIGTERM, then SIGKILL after a grace), every process left in a Pod,
 * then put the host back (mounts, network namespaces, bridge, firewall chains, cgroups, kernel settings).
 * containerd's image store stays for the next start.
 */
export async function stopNode(processes: readonly ProcessRecord[]): Promise<NodeCleanup> {
  const byName = new Map(processes.map((p) => [p.name, p]));
  // The kubelet first, so it does not restart what is killed next.
  for (const name of ['kubelet', 'kube-proxy', 'kube-scheduler', 'kube-controller-manager']) {
    const record = byName.get(name);
    if (record) await stopProcess(record, 5_000);
  }
  const killedPodProcesses = killPodProcesses();
  removeContainers(nodeLayout().socket);
  const containerd = byName.get('containerd');
  if (containerd) await stopProcess(containerd, 5_000);
  return cleanHost(nodeLayout(), killedPodProcesses);
}

/** The same, synchronously and with SIGKILL (exit handlers). */
export function stopNodeNow(processes: readonly ProcessRecord[]): NodeCleanup {
  for (const record of [...processes].reverse()) killNow(record);
  return cleanHost(nodeLayout(), killPodProcesses());
}

/** SIGKILL every process in the kubelet's `kubepods` cgroups (every container of every Pod), and the runtime shims. */
function killPodProcesses(): number {
  const pids = new Set<number>();
  const collect = (dir: string) => {
    if (!existsSync(dir)) return;
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) collect(join(dir, entry.name));
      else if (entry.name === 'cgroup.procs') {
        for (const line of readFileSync(join(dir, entry.name), 'utf8').split('\n')) if (line.trim()) pids.add(Number(line));
      }
    }
  };
  for (const controller of existsSync('/sys/fs/cgroup') ? readdirSync('/sys/fs/cgroup') : []) collect(join('/sys/fs/cgroup', controller, 'kubepods'));
  collect('/sys/fs/cgroup/kubepods');
  // The runtime shims of this node's containerd: their command line names its socket.
  const { socket } = nodeLayout();
  for (const pid of pidsWhere((argv) => argv[0]!.includes('containerd-shim') && argv.includes(socket))) pids.add(pid);
  killPids(pids);
  return pids.size;
}

/** Remove the Pods' containers from containerd's records (images stay), while it still runs. */
function removeContainers(socket: string): void {
  if (!existsSync(socket)) return;
  const inNode = (args: string[]) => ctr(socket, args, { timeoutMs: 20_000 });
  try {
    const ids = inNode(['containers', 'list', '--quiet']).split('\n').filter(Boolean);
    for (const id of ids) {
      try {
        inNode(['tasks', 'delete', '--force', id]);
      } catch {
        // no task
      }
      try {
        inNode(['containers', 'delete', id]);
      } catch {
        // removed meanwhile
      }
    }
  } catch {
    // containerd does not answer: its state directory goes below
  }
}

function cleanHost(layout: NodeLayout, killedPodProcesses: number): NodeCleanup {
  const unmounted = unmountUnder([layout.kubeletRoot, layout.runDir, layout.containerdRoot, '/run/netns']);
  const netns = removeStalePodNetns();
  removeLink(BRIDGE);
  const firewallRules = removeNodeFirewallChains();
  const cgroups = removeKubepodsCgroups();
  removePodLogs();
  const sysctls = restoreHostSettings(layout.hostSettings);
  for (const dir of [layout.runDir, layout.kubeletRoot, layout.cniDataDir, layout.configDir, join(layout.containerdRoot, 'io.containerd.grpc.v1.cri', 'sandboxes')]) {
    rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 100 });
  }
  return { killedPodProcesses, unmounted, firewallRules, netns, cgroups, sysctls };
}

/**
 * A node that was not stopped (a crash, a reboot) leaves its processes, mounts, chains and changed
 * settings: kill what still runs of it and put the host back before starting again.
 */
function repairAfterCrash(layout: NodeLayout, progress: (line: string) => void): void {
  const report = repairNodeHost();
  if (!report) return;
  progress(`okt cluster: repaired what a previous node left: ${describeCleanup(report)}`);
}

/** Kill what still runs of a node nobody stopped and put the host back; undefined when nothing was left. */
export function repairNodeHost(): NodeCleanup | undefined {
  const layout = nodeLayout();
  // Components and shims of an earlier run: their command lines name the node's directories.
  const leftovers = pidsWhere((argv) => argv.some((arg) => arg.includes(layout.dataDir) || arg.includes(layout.runDir)));
  const dirty = leftovers.length > 0 || existsSync(layout.hostSettings) || existsSync(layout.runDir);
  if (!dirty) return undefined;
  killPids(leftovers);
  const report = cleanHost(layout, killPodProcesses());
  return { ...report, killedPodProcesses: report.killedPodProcesses + leftovers.length };
}

export function describeCleanup(report: NodeCleanup): string {
  return (
    `${report.killedPodProcesses} processes killed, ${report.unmounted} mounts, ${report.firewallRules} firewall rules, ` +
    `${report.netns} network namespaces, ${report.cgroups} cgroups removed; settings restored: ${report.sysctls.join(' ') || 'none changed'}`
  );
}
