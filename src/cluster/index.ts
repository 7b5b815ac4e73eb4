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
export {
  buildImage,
  ensureBaseImage,
  loadIntoContainerd,
  normalizeReference,
  ImageError,
  BASE_IMAGE,
  DEFAULT_TAG,
  type BaseImage,
  type BuildOptions,
  type BuiltImage,
  type LoadOptions,
} from './image.ts';
export { cacheDir, apiserverBinaryPath, provisionLogPath, nodeContainerdSocket, buildahDir } from './paths.ts';
export type { ProcessRecord } from './processes.ts';
export { describeCleanup, repairNodeHost, NODE_NAME, type NodeCleanup, type RunningNode } from './node.ts';
