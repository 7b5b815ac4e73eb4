import { CoreV1Api } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { createNamespace, e2eKubeConfig, e2eKubeconfigPath } from './helpers/index.ts';
import { okt, run } from '../fixtures/okt-process.ts';

// What `okt manifests` and `okt crd --rbac` print is accepted by a real API server: every object goes
// through admission and validation with `kubectl apply --dry-run=server` (nothing is persisted).

const env = () => ({ KUBECONFIG: e2eKubeconfigPath() });
const database = ['graphs/database.ts', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind', 'Database', '--short-names', 'odb'];
let namespace = '';

beforeAll(async () => {
  // Dry-run objects land in no namespace: the operator's namespace must exist for its namespaced objects.
  const kc = e2eKubeConfig();
  namespace = await createNamespace(kc, 'okt-e2e-manifests');
  // No kube-controller-manager runs here to make the namespace's default ServiceAccount, which a Pod needs.
  await kc.makeApiClient(CoreV1Api).createNamespacedServiceAccount({ namespace, body: { metadata: { name: 'default' } } });
});

async function dryRunApply(yaml: string): Promise<string[]> {
  const applied = await run('kubectl', ['apply', '--dry-run=server', '-f', '-'], { input: yaml, env: env() });
  // kubectl warns (only) that the test's namespace was not made by kubectl apply.
  expect(applied.stderr.split('\n').filter((line) => line !== '' && !line.startsWith('Warning: '))).toEqual([]);
  expect(applied.code).toBe(0);
  return applied.stdout.trim().split('\n');
}

describe('okt manifests | kubectl apply --dry-run=server', () => {
  it('applies the Namespace, RBAC, CRD, graph ConfigMap and operator Deployment', async () => {
    const printed = await okt(
      ['manifests', ...database, '--namespace', namespace, '--image', 'okt:e2e', '--sink', 'http://sink.example:8080', '--read-secrets', '--replicas', '2'],
      { env: env() },
    );
    expect(printed.stderr).toBe('');
    expect(printed.code).toBe(0);
    const kinds = parseAllDocuments(printed.stdout).map((d) => d.toJS()).filter((d) => d !== null).map((d: { kind: string }) => d.kind);
    expect(kinds).toEqual(['Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'CustomResourceDefinition', 'ConfigMap', 'Deployment']);
    const lines = await dryRunApply(printed.stdout);
    expect(lines).toHaveLength(9);
    for (const line of lines) expect(line).toMatch(/ (created|configured|unchanged) \(server dry run\)$/);
    expect(lines.join('\n')).toContain(`deployment.apps/okt-database`);
    expect(lines.join('\n')).toContain('customresourcedefinition.apiextensions.k8s.io/databases.okt.dev');
  });

  it('applies the reconciliation graph\'s manifests without a Namespace object or token', async () => {
    const printed = await okt(
      ['manifests', 'graphs/reconciliation.ts', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind', 'Reconciliation', '--namespace', namespace, '--no-create-namespace', '--no-sidecar-token-secret'],
      { env: env() },
    );
    expect(printed.code).toBe(0);
    const lines = await dryRunApply(printed.stdout);
    expect(lines).toHaveLength(8);
    expect(lines.some((l) => l.startsWith('namespace/'))).toBe(false);
  });

  it('applies the manifests of one operator of two kinds: a CRD each, one Deployment', async () => {
    const printed = await okt(
      ['manifests', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind-graph', 'Database=graphs/database.ts', '--kind-graph', 'Reconciliation=graphs/reconciliation.ts',
        '--namespace', namespace, '--no-create-namespace'],
      { env: env() },
    );
    expect(printed.stderr).toBe('');
    expect(printed.code).toBe(0);
    const lines = await dryRunApply(printed.stdout);
    expect(lines).toHaveLength(9);
    for (const crd of ['databases.okt.dev', 'reconciliations.okt.dev']) expect(lines.join('\n')).toContain(`customresourcedefinition.apiextensions.k8s.io/${crd}`);
    expect(lines).toContain('deployment.apps/okt-database-reconciliation created (server dry run)');
  });

  it('with --watch-namespace and --read-secrets, the Secret read is a Role there; the allow-list reaches okt run', async () => {
    const printed = await okt(
      ['manifests', ...database, '--namespace', namespace, '--no-create-namespace', '--watch-namespace', namespace, '--read-secrets',
        '--sidecar-url', 'http://okt-sidecar.apps:8479', '--sidecar-url-allow', 'http://*.apps.svc.cluster.local:8479'],
      { env: env() },
    );
    expect(printed.stderr).toBe('');
    expect(printed.code).toBe(0);
    const docs = parseAllDocuments(printed.stdout).map((d) => d.toJS()).filter((d) => d !== null) as { kind: string; metadata: { name: string; namespace?: string }; rules?: unknown[]; spec?: any }[];
    const clusterRole = docs.find((d) => d.kind === 'ClusterRole')!;
    expect(JSON.stringify(clusterRole.rules)).not.toContain('secrets');
    expect(docs.find((d) => d.kind === 'Role' && d.metadata.name === 'okt-database-secrets')?.metadata.namespace).toBe(namespace);
    const args = docs.find((d) => d.kind === 'Deployment')!.spec.template.spec.containers[0].args as string[];
    expect(args.join(' ')).toContain('--sidecar-url-allow http://*.apps.svc.cluster.local:8479');
    const lines = await dryRunApply(printed.stdout);
    expect(lines).toContain('role.rbac.authorization.k8s.io/okt-database-secrets created (server dry run)');
    expect(lines).toContain('rolebinding.rbac.authorization.k8s.io/okt-database-secrets created (server dry run)');
  });

  it('refuses an allow-list pattern that does not parse, naming the flag (exit 2)', async () => {
    const printed = await okt(['manifests', ...database, '--sidecar-url-allow', 'okt-sidecar:8479'], { env: env() });
    expect(printed.code).toBe(2);
    expect(printed.stderr).toContain('--sidecar-url-allow');
  });

  it('applies `okt crd --rbac`', async () => {
    const printed = await okt(['crd', ...database, '--rbac', '--namespace', namespace], { env: env() });
    expect(printed.code).toBe(0);
    const lines = await dryRunApply(printed.stdout);
    expect(lines.map((l) => l.split(' ')[0]!.split('/')[0])).toEqual([
      'customresourcedefinition.apiextensions.k8s.io',
      'serviceaccount',
      'clusterrole.rbac.authorization.k8s.io',
      'clusterrolebinding.rbac.authorization.k8s.io',
      'role.rbac.authorization.k8s.io',
      'rolebinding.rbac.authorization.k8s.io',
    ]);
  });

  it('gives a sidecar snippet that makes a valid Pod', async () => {
    const printed = await okt(['manifests', ...database, '--sidecar-only'], { env: env() });
    expect(printed.code).toBe(0);
    const snippet = parseAllDocuments(printed.stdout)[0]!.toJS() as { containers: object[]; volumes: object[] };
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'app-with-sidecar', namespace },
      // The sidecar does not call the API server: no token (this control plane has no token controller either).
      spec: { automountServiceAccountToken: false, containers: [{ name: 'postgres', image: 'postgres:15' }, ...snippet.containers], volumes: snippet.volumes },
    };
    const lines = await dryRunApply(JSON.stringify(pod));
    expect(lines).toEqual(['pod/app-with-sidecar created (server dry run)']);
  });
});
