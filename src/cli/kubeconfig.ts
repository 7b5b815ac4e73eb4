import { KubeConfig } from '@kubernetes/client-node';
import { CliError, EXIT } from './errors.ts';

/** The kubeconfig the way kubectl finds it (KUBECONFIG, ~/.kube/config, in-cluster), or a clear error. */
export function loadKubeConfig(): KubeConfig {
  const kc = new KubeConfig();
  try {
    kc.loadFromDefault();
  } catch (error) {
    throw new CliError(EXIT.usage, `cannot read the kubeconfig: ${error instanceof Error ? error.message : String(error)}`, 'Check KUBECONFIG.');
  }
  if (kc.getCurrentCluster() === null) {
    throw new CliError(EXIT.usage, 'no cluster in the kubeconfig', 'Set KUBECONFIG, or start a local one: eval "$(npx okt cluster env)" after npx okt cluster up.');
  }
  return kc;
}
