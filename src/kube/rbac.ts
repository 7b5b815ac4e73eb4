import { resolveCrdNames, type CrdNames } from './crd.ts';
import { kindResource } from './transport/resource.ts';

export interface OperatorRbacOptions {
  /** The namespace the operator runs in: its ServiceAccount and its leader-election Lease live there. */
  namespace: string;
  /** Base name of the ServiceAccount, roles and Lease. Default: operatorName(names). */
  name?: string;
  /**
   * Grant `get` on Secrets, which a CR's spec.sidecar.tokenSecretRef needs: in `watchNamespace` only
   * (a Role) when the operator watches one namespace, else in every namespace (a ClusterRole rule; the
   * operator's code reads only Secrets of a CR's own namespace, and sends only those of type
   * SIDECAR_TOKEN_SECRET_TYPE, which RBAC cannot express). `get` alone: Secrets are read by name, never
   * listed or watched (a list would read every Secret). Off by default: a read of Secrets is a
   * large grant, and one token file mounted into the operator (`okt run --sidecar-token-file`) serves
   * every CR of the operator's own sidecars without it.
   */
  readSecrets?: boolean;
  /** The one namespace the operator watches (`okt run --namespace`): the Secret read is namespaced there. */
  watchNamespace?: string;
  /** The kinds of the objects the graphs make (their `objects`): the operator applies, reads and deletes those, and no others. */
  objectKinds?: readonly { apiVersion: string; kind: string }[];
}

/** The kinds of one operator's CRDs: `database`, or `database-reconciliation` for several. */
export function singulars(kinds: CrdNames | readonly CrdNames[]): string {
  return asList(kinds).map((names) => resolveCrdNames(names).singular).join('-');
}

/** The default name of a graph's operator and of its ServiceAccount, roles and Lease: `okt-database`. */
export function operatorName(kinds: CrdNames | readonly CrdNames[]): string {
  return `okt-${singulars(kinds)}`;
}

/**
 * Least-privilege RBAC for the operator of one CRD, or of several: a ServiceAccount; a ClusterRole on
 * the custom resources (they may live in any namespace), their status and finalizers; a Role on the
 * one Lease of leader election in the operator's namespace; `get` on namespaces (a teardown); and the
 * two bindings; and, for the objects the graphs make, their kinds (objectRules). Nothing else: the operator emits its events as CloudEvents (to the sink, from status.outbox), not as Kubernetes Events.
 */
export function generateRbac(kinds: CrdNames | readonly CrdNames[], options: OperatorRbacOptions): Record<string, unknown>[] {
  const name = options.name ?? operatorName(kinds);
  const { namespace } = options;
  const labels = operatorLabels(name);
  const subject = { kind: 'ServiceAccount', name, namespace };
  // A rule per group, naming only that group's plurals: one rule of two groups would grant each plural in both.
  const byGroup = pluralsByGroup(kinds);
  const rules: Record<string, unknown>[] = [
    ...[...byGroup].flatMap(([group, plurals]) => [
      // Informer (list, watch), the one read on a conflict (get), finalizer and spec patches, the
      // deletion at a leaf reached through the spec (OKT's "on End: delete it").
      { apiGroups: [group], resources: plurals, verbs: ['get', 'list', 'watch', 'patch', 'update', 'delete'] },
      // Status is written whole (PUT): no patch.
      { apiGroups: [group], resources: plurals.map((plural) => `${plural}/status`), verbs: ['get', 'update'] },
      // Setting finalizers needs this where the OwnerReferencesPermissionEnforcement admission is on.
      { apiGroups: [group], resources: plurals.map((plural) => `${plural}/finalizers`), verbs: ['update'] },
    ]),
    // Whether a deleted CR's namespace is terminating, read only while its sidecar does not answer: a
    // namespace teardown that took the sidecar with it must not hold the CR (and the namespace) for ever.
    { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
    ...objectRules(options.objectKinds ?? []),
  ];
  const secretsInOneNamespace = options.readSecrets === true && options.watchNamespace !== undefined;
  if (options.readSecrets === true && !secretsInOneNamespace) rules.push({ apiGroups: [''], resources: ['secrets'], verbs: ['get'] });
  const secretRole = secretsInOneNamespace ? secretReader(name, options.watchNamespace!, labels, subject) : [];
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace, labels } },
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: { name, labels }, rules },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [subject],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: `${name}-leader-election`, namespace, labels },
      rules: [
        // `create` cannot be limited to a name (the object does not exist yet); the rest can.
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
        { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: [name], verbs: ['get', 'update'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${name}-leader-election`, namespace, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `${name}-leader-election` },
      subjects: [subject],
    },
    ...secretRole,
  ];
}

/**
 * The rules for the objects the graphs make, one per API group (naming only its plurals): server-side
 * apply (`patch`, and `create` for an object it makes), `delete` (a prune, the end of the deletion path),
 * `get` and `patch` (a kept object losing the CR's owner reference), `list` and `watch` (one informer
 * per kind, selected by okt's graph label: an object someone deleted or changed is put back).
 */
function objectRules(kinds: readonly { apiVersion: string; kind: string }[]): Record<string, unknown>[] {
  const byGroup = new Map<string, Set<string>>();
  for (const { apiVersion, kind } of kinds) {
    const { group, plural } = kindResource(apiVersion, kind);
    byGroup.set(group, (byGroup.get(group) ?? new Set()).add(plural));
  }
  return [...byGroup].map(([group, plurals]) => ({ apiGroups: [group], resources: [...plurals].sort(), verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] }));
}

/** `get` on Secrets in the one watched namespace: CRs name their token Secret there (spec.sidecar.tokenSecretRef). */
function secretReader(name: string, namespace: string, labels: Record<string, string>, subject: Record<string, string>): Record<string, unknown>[] {
  const role = `${name}-secrets`;
  return [
    { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name: role, namespace, labels }, rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }] },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: role, namespace, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: role },
      subjects: [subject],
    },
  ];
}

/** The labels of everything generated for one operator. */
export function operatorLabels(name: string): Record<string, string> {
  return { 'app.kubernetes.io/name': 'okt', 'app.kubernetes.io/instance': name, 'app.kubernetes.io/managed-by': 'okt' };
}

/** The plurals of the kinds, by API group: a rule per group names only its own. */
export function pluralsByGroup(kinds: CrdNames | readonly CrdNames[]): Map<string, string[]> {
  const byGroup = new Map<string, string[]>();
  for (const { group, plural } of asList(kinds).map(resolveCrdNames)) byGroup.set(group, [...(byGroup.get(group) ?? []), plural]);
  return byGroup;
}

function asList(kinds: CrdNames | readonly CrdNames[]): readonly CrdNames[] {
  return 'kind' in kinds ? [kinds] : kinds;
}
