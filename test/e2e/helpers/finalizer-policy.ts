import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { compareVersions } from '../../../src/cluster/kubernetes-version.ts';
import type { LifecycleResourceRef } from '../../../src/controller/lifecycle/index.ts';
import { FINALIZER_POLICY_MIN_KUBERNETES, generateFinalizerPolicy } from '../../../src/kube/finalizer-policy.ts';
import { LIFECYCLE_FINALIZER } from '../../../src/kube/lifecycle-resource.ts';
import { e2eKubernetesVersion, kubectl } from './cluster.ts';
import { waitFor } from './wait.ts';

/** Whether this run's Kubernetes serves okt's finalizer policy (okt manifests --finalizer-policy). */
export const finalizerPolicyServed = (): boolean => compareVersions(e2eKubernetesVersion(), FINALIZER_POLICY_MIN_KUBERNETES) >= 0;

/**
 * okt's finalizer policy for the CRs of `resource` created with `crLabels` (those of an operator run
 * with --label-selector of them), applied with kubectl and in force (a dry-run creation in `namespace`
 * gets the finalizer) when it returns; the function that removes it.
 */
export async function installFinalizerPolicy(kc: KubeConfig, resource: LifecycleResourceRef, namespace: string, crLabels: Record<string, string>): Promise<() => Promise<void>> {
  const name = `okt-e2e-${namespace}`;
  await kubectl(['apply', '-f', '-'], generateFinalizerPolicy([resource], { name, crLabels }).map((doc) => JSON.stringify(doc)).join('\n'));
  const api = kc.makeApiClient(CustomObjectsApi);
  const probe = { apiVersion: `${resource.group}/${resource.version}`, kind: resource.kind, metadata: { name: 'probe', labels: crLabels }, spec: { desiredState: 'Running' } };
  // The API server takes a new policy up from its informer: a moment after it is stored.
  await waitFor('the finalizer policy in force', async () => {
    const created = (await api.createNamespacedCustomObject({ group: resource.group, version: resource.version, plural: resource.plural, namespace, body: probe, dryRun: 'All' })) as { metadata: { finalizers?: string[] } };
    return (created.metadata.finalizers ?? []).includes(LIFECYCLE_FINALIZER) || undefined;
  });
  return () => removeFinalizerPolicy(name);
}

/** Deletes the finalizer policy and binding generateFinalizerPolicy made under base name `name` (`<name>-finalizer`), if there. */
export async function removeFinalizerPolicy(name: string): Promise<void> {
  await kubectl(['delete', 'mutatingadmissionpolicybinding,mutatingadmissionpolicy', `${name}-finalizer`, '--ignore-not-found']);
}
