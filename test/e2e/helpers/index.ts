export { e2eKubeconfigPath, e2eKubernetesVersion, e2eKubeConfig, createNamespace, mergePatch, httpStatusOf, expectHttpError, kubectlWait, kubectl } from './cluster.ts';
export { applyCrd, applyGraphCrd, deleteCrd, namespacedCrd, toTypedCrd, withoutValidationRules, type CrdManifest } from './crd.ts';
export { waitFor } from './wait.ts';
