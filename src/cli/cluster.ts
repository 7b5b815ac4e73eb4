import { Command } from 'commander';
import {
  kubeconfigExport,
  kubectlPathExport,
  DEFAULT_KUBERNETES_VERSION,
  STATE_WITHOUT_VERSION,
  localClusterDown,
  localClusterUp,
  provision,
  readLocalState,
  isLocalClusterUp,
  describeCleanup,
} from '../cluster/index.ts';

const KUBERNETES_OPTION_HELP = `the Kubernetes release, e.g. 1.37 or 1.37.2 (default: $OKT_KUBERNETES_VERSION, else ${DEFAULT_KUBERNETES_VERSION}), built from the Go modules pinned in k8s/ with the machine's Go`;

/** `okt cluster provision|up|env|down`: a local etcd + kube-apiserver for tests and the demo. */
export function clusterCommand(): Command {
  const cluster = new Command('cluster').description('A local Kubernetes control plane (etcd + kube-apiserver) on loopback');

  cluster
    .command('provision')
    .description('Build etcd, kube-apiserver and kubectl once into the okt cache from pinned Go modules (with --node: as root on a Debian-like machine)')
    .option('--node', 'also what a node needs: kubelet, kube-proxy, kube-controller-manager, kube-scheduler, containerd (built), runc, CNI, buildah (apt-get)', false)
    .option('--kubernetes <version>', KUBERNETES_OPTION_HELP)
    .action((flags: { node: boolean; kubernetes?: string }) =>
      fail(async () => {
        const binaries = await provision({ node: flags.node, ...(flags.kubernetes === undefined ? {} : { kubernetes: flags.kubernetes }) });
        process.stdout.write(
          `Kubernetes ${binaries.kubernetesVersion}\netcd: ${binaries.etcd}\nkube-apiserver: ${binaries.kubeApiserver}\nkubectl: ${binaries.kubectl}\n` +
            (binaries.node ? `kubelet: ${binaries.node.kubelet}\ncontainerd: ${binaries.node.containerd}\n` : ''),
        );
      }),
    );

  cluster
    .command('up')
    .description('Start the control plane (provisioning first if needed) and leave it running')
    .option('--node', 'also a real node that runs Pods (containerd, kubelet, kube-proxy, controllers); changes host kernel settings and firewall rules until `down`', false)
    .option('--kubernetes <version>', KUBERNETES_OPTION_HELP)
    .action((flags: { node: boolean; kubernetes?: string }) =>
      fail(async () => {
        const result = await localClusterUp({
          node: flags.node,
          ...(flags.kubernetes === undefined ? {} : { kubernetes: flags.kubernetes }),
          progress: (line) => process.stderr.write(`${line}\n`),
        });
        const { state } = result;
        const pids = [...state.processes, ...(state.node?.processes ?? [])].map((p) => `${p.name} ${p.pid}`).join(', ');
        process.stdout.write(
          (result.kind === 'already-up' ? 'Control plane already up' : `Control plane up (ready ${(result.readyAfterMs / 1000).toFixed(1)} s after start)`) +
            ` (Kubernetes ${state.kubernetesVersion ?? STATE_WITHOUT_VERSION})` +
            ` at ${state.server} (${pids})\n` +
            (state.node ? `Node ${state.node.name} Ready at ${state.node.address} (kubectl get nodes)\n` : '') +
            `kubeconfig: ${state.kubeconfigPath}\n` +
            'Use it with: eval "$(npx okt cluster env)"; stop it with: npx okt cluster down\n',
        );
      }),
    );

  cluster
    .command('env')
    .description('Print `export KUBECONFIG=…` for the running control plane, and PATH with its release\'s own kubectl when built with it (eval "$(npx okt cluster env)")')
    .action(() =>
      fail(async () => {
        const state = readLocalState();
        if (!state || !(await isLocalClusterUp(state))) {
          throw new Error('no control plane is up: run `npx okt cluster up` first');
        }
        process.stdout.write(kubeconfigExport(state.kubeconfigPath) + '\n' + (state.kubectl ? kubectlPathExport(state.kubectl) + '\n' : ''));
      }),
    );

  cluster
    .command('down')
    .description('Stop the processes `okt cluster up` started, remove their data dir, and put back the host settings a node changed')
    .action(() =>
      fail(async () => {
        const { state, cleanup } = await localClusterDown();
        process.stdout.write(state ? `Control plane at ${state.server} stopped; ${state.dataDir} removed\n` : 'No control plane is up\n');
        if (cleanup) process.stdout.write(`Node stopped, host put back: ${describeCleanup(cleanup)}\n`);
      }),
    );

  return cluster;
}

async function fail(action: () => Promise<void>): Promise<void> {
  try {
    await action();
  } catch (error) {
    process.stderr.write(`okt cluster: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
