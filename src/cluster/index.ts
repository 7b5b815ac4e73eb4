export { startControlPlane, stopControlPlane, readyzStatus, type ControlPlane, type StartOptions } from './control-plane.ts';
export { provision, findBinaries, requestedRelease, type Binaries, type ProvisionOptions } from './provision.ts';
export { ProvisionError } from './steps.ts';
export { DEFAULT_KUBERNETES_VERSION, type KubernetesRelease } from './kubernetes-version.ts';
export {
  localClusterUp,
  localClusterDown,
  readLocalState,
  isLocalClusterUp,
  kubeconfigExport,
  kubectlPathExport,
  localStatePath,
  STATE_WITHOUT_VERSION,
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
export { cacheDir, provisionLogPath, nodeContainerdSocket, buildahDir } from './paths.ts';
export type { ProcessRecord } from './processes.ts';
export { describeCleanup, repairNodeHost, NODE_NAME, type NodeCleanup, type RunningNode } from './node.ts';
