import type { CrdNames } from './crd.ts';
import { LIFECYCLE_FINALIZER } from './lifecycle-resource.ts';
import { operatorLabels, operatorName, pluralsByGroup } from './rbac.ts';

/** The API of MutatingAdmissionPolicy: GA (and served by default) from Kubernetes 1.36. */
export const FINALIZER_POLICY_API_VERSION = 'admissionregistration.k8s.io/v1';
/** The first Kubernetes release that serves FINALIZER_POLICY_API_VERSION by default. */
export const FINALIZER_POLICY_MIN_KUBERNETES = '1.36.0';

export interface FinalizerPolicyOptions {
  /** Base name of the policy and its binding (`<name>-finalizer`); default operatorName(kinds). */
  name?: string;
  /** The one namespace the operator watches (`okt run --namespace`): only CRs created there get the finalizer. */
  watchNamespace?: string;
  /** Only CRs created in namespaces these labels select: default every namespace (or watchNamespace). */
  namespaceLabels?: Record<string, string>;
  /** Only CRs created with these labels: those of an operator run with `okt run --label-selector` of them. */
  crLabels?: Record<string, string>;
}

/**
 * A MutatingAdmissionPolicy and its binding that put okt's finalizer on each CR of these kinds as the
 * API server creates it, in the namespaces the operator watches. The operator would add it on its first
 * look, with a PATCH of its own that leaves a managedFields entry on the CR for ever (each later write
 * of the CR carries and re-encodes it); put on by admission, the finalizer has no owner entry.
 * `failurePolicy: Ignore`: a CR the policy misses gets the finalizer from the operator as before.
 */
export function generateFinalizerPolicy(kinds: CrdNames | readonly CrdNames[], options: FinalizerPolicyOptions = {}): Record<string, unknown>[] {
  const base = options.name ?? operatorName(kinds);
  const name = `${base}-finalizer`;
  const labels = operatorLabels(base);
  const namespaceSelector = {
    ...(options.namespaceLabels === undefined ? {} : { matchLabels: options.namespaceLabels }),
    ...(options.watchNamespace === undefined ? {} : { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [options.watchNamespace] }] }),
  };
  const matchResources = {
    ...(Object.keys(namespaceSelector).length === 0 ? {} : { namespaceSelector }),
    ...(options.crLabels === undefined ? {} : { objectSelector: { matchLabels: options.crLabels } }),
  };
  return [
    {
      apiVersion: FINALIZER_POLICY_API_VERSION,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name, labels },
      spec: {
        failurePolicy: 'Ignore',
        reinvocationPolicy: 'Never',
        matchConstraints: {
          resourceRules: [...pluralsByGroup(kinds)].map(([group, plurals]) => ({ apiGroups: [group], apiVersions: ['*'], operations: ['CREATE'], resources: plurals })),
        },
        // An apply configuration merges: metadata.finalizers is a set, so the CR's own finalizers stay.
        mutations: [{
          patchType: 'ApplyConfiguration',
          applyConfiguration: { expression: `Object{metadata: Object.metadata{finalizers: [${JSON.stringify(LIFECYCLE_FINALIZER)}]}}` },
        }],
      },
    },
    {
      apiVersion: FINALIZER_POLICY_API_VERSION,
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name, labels },
      spec: { policyName: name, ...(Object.keys(matchResources).length === 0 ? {} : { matchResources }) },
    },
  ];
}
