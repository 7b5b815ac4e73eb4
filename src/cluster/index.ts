export { startControlPlane, stopControlPlane, readyzStatus, type ControlPlane, type StartOptions } from './control-plane.ts';
export { provision, findBinaries, ProvisionError, type Binaries, type ProvisionOptions } from './provision.ts';
export {
  localClusterUp,
  localClusterDown,
  readLocalState,
  isLocalClusterUp,
  kubeconfigExport,
  localStatePath,
  type LocalClusterState,
  type UpResult,
} from './local.ts';
export { cacheDir, apiserverBinaryPath, provisionLogPath } from './paths.ts';
export type { ProcessRecord } from './processes.ts';
export { describeCleanup, repairNodeHost, NODE_NAME, type NodeCleanup, type RunningNode } from './node.ts';
export { nodeContainerdSocket } from './paths.ts';
