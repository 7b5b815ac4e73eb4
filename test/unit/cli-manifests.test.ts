import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { databaseGraph } from '../../graphs/database.ts';
import { CliError, EXIT } from '../../src/cli/errors.ts';
import { crdNamesFromFlags } from '../../src/cli/crd-names.ts';
import { runCommand } from '../../src/cli/run.ts';
import { toYamlDocuments } from '../../src/cli/output.ts';
import { generateCrd } from '../../src/kube/crd.ts';
import { generateFinalizerPolicy } from '../../src/kube/finalizer-policy.ts';
import { LIFECYCLE_FINALIZER } from '../../src/kube/lifecycle-resource.ts';
import { generateManifests, sidecarSnippet } from '../../src/kube/manifests.ts';
import { generateRbac } from '../../src/kube/rbac.ts';
import { STATUS_FORMAT_ANNOTATION, statusFormatOf } from '../../src/kube/status-format.ts';

type Doc = Record<string, any>;
const names = { group: 'okt.dev', version: 'v1alpha1', kind: 'Database', shortNames: ['odb'] };

describe('generateRbac', () => {
  it('grants exactly what the operator uses, no Secrets by default', () => {
    const docs = generateRbac(names, { namespace: 'ops' }) as Doc[];
    expect(docs.map((d) => d.kind)).toEqual(['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
    const [account, clusterRole, clusterBinding, role, binding] = docs as [Doc, Doc, Doc, Doc, Doc];
    expect(account.metadata).toMatchObject({ name: 'okt-database', namespace: 'ops' });
    expect(clusterRole.rules).toEqual([
      { apiGroups: ['okt.dev'], resources: ['databases'], verbs: ['get', 'list', 'watch', 'patch', 'update', 'delete'] },
      { apiGroups: ['okt.dev'], resources: ['databases/status'], verbs: ['get', 'update'] },
      { apiGroups: ['okt.dev'], resources: ['databases/finalizers'], verbs: ['update'] },
      { apiGroups: [''], resources: ['namespaces'], verbs: ['get'] },
    ]);
    expect(clusterRole.metadata.namespace).toBeUndefined();
    expect(role.metadata.namespace).toBe('ops');
    expect(role.rules).toEqual([
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['create'] },
      { apiGroups: ['coordination.k8s.io'], resources: ['leases'], resourceNames: ['okt-database'], verbs: ['get', 'update'] },
    ]);
    for (const b of [clusterBinding, binding]) expect(b.subjects).toEqual([{ kind: 'ServiceAccount', name: 'okt-database', namespace: 'ops' }]);
    expect(clusterBinding.roleRef.name).toBe(clusterRole.metadata.name);
    expect(binding.roleRef.name).toBe(role.metadata.name);
  });

  it('adds get on Secrets only when asked (spec.sidecar.tokenSecretRef)', () => {
    const clusterRole = (generateRbac(names, { namespace: 'ops', readSecrets: true }) as Doc[])[1]!;
    expect(clusterRole.rules.at(-1)).toEqual({ apiGroups: [''], resources: ['secrets'], verbs: ['get'] });
  });

  it('with one watched namespace, the Secret read is a Role there, not a cluster-wide grant', () => {
    const docs = generateRbac(names, { namespace: 'ops', readSecrets: true, watchNamespace: 'apps' }) as Doc[];
    const clusterRole = docs.find((d) => d.kind === 'ClusterRole')!;
    expect(JSON.stringify(clusterRole.rules)).not.toContain('secrets');
    const role = docs.find((d) => d.kind === 'Role' && d.metadata.name === 'okt-database-secrets')!;
    expect(role.metadata.namespace).toBe('apps');
    expect(role.rules).toEqual([{ apiGroups: [''], resources: ['secrets'], verbs: ['get'] }]);
    const binding = docs.find((d) => d.kind === 'RoleBinding' && d.metadata.name === 'okt-database-secrets')!;
    expect(binding.metadata.namespace).toBe('apps');
    expect(binding.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'okt-database-secrets' });
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'okt-database', namespace: 'ops' }]);
    // without --read-secrets, no Secret anywhere even with a watched namespace
    expect(JSON.stringify(generateRbac(names, { namespace: 'ops', watchNamespace: 'apps' }))).not.toContain('secrets');
  });
});

describe('generateManifests', () => {
  const options = { namespace: 'ops', createNamespace: true, image: 'okt:test', sidecarToken: { name: 'tok', key: 'k' } } as const;

  it('emits Namespace, RBAC, CRD, graph ConfigMap and Deployment in apply order', () => {
    const docs = generateManifests(databaseGraph, names, options) as Doc[];
    expect(docs.map((d) => d.kind)).toEqual([
      'Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'CustomResourceDefinition', 'ConfigMap', 'Deployment',
    ]);
    expect(docs[6]).toEqual(generateCrd(databaseGraph, names));
    expect(JSON.parse(docs[7]!.data['graph.json'])).toEqual(databaseGraph.toData());
    expect(generateManifests(databaseGraph, names, { ...options, createNamespace: false }).map((d) => d.kind)).not.toContain('Namespace');
  });

  it('with finalizerPolicy, adds the finalizer\'s MutatingAdmissionPolicy and binding after the CRDs, on CREATE of the kinds only, in the watched namespace', () => {
    const docs = generateManifests(databaseGraph, names, { ...options, finalizerPolicy: true, watchNamespace: 'apps' }) as Doc[];
    expect(docs.map((d) => d.kind)).toEqual([
      'Namespace', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding', 'CustomResourceDefinition',
      'MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding', 'ConfigMap', 'Deployment',
    ]);
    const [policy, binding] = [docs[7]!, docs[8]!];
    expect(policy.apiVersion).toBe('admissionregistration.k8s.io/v1');
    expect(policy.metadata.name).toBe('okt-database-finalizer');
    expect(policy.spec.failurePolicy).toBe('Ignore');
    expect(policy.spec.matchConstraints.resourceRules).toEqual([{ apiGroups: ['okt.dev'], apiVersions: ['*'], operations: ['CREATE'], resources: ['databases'] }]);
    expect(policy.spec.mutations).toEqual([{ patchType: 'ApplyConfiguration', applyConfiguration: { expression: `Object{metadata: Object.metadata{finalizers: ["${LIFECYCLE_FINALIZER}"]}}` } }]);
    expect(binding.spec).toEqual({
      policyName: 'okt-database-finalizer',
      matchResources: { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['apps'] }] } },
    });
    expect(generateManifests(databaseGraph, names, options).map((d) => d.kind)).not.toContain('MutatingAdmissionPolicy');
  });

  it('binds the finalizer policy to every namespace without a watched one, to the CRs of given labels when asked, and names each group\'s plurals in a rule of its own', () => {
    const other = { group: 'ops.example.com', version: 'v1', kind: 'Cache' };
    const [policy, binding] = generateFinalizerPolicy([names, { ...names, kind: 'Reconciliation' }, other], { name: 'ops' }) as Doc[];
    expect(policy!.metadata.name).toBe('ops-finalizer');
    expect(policy!.spec.matchConstraints.resourceRules.map((r: Doc) => [r.apiGroups, r.resources])).toEqual([[['okt.dev'], ['databases', 'reconciliations']], [['ops.example.com'], ['caches']]]);
    expect(binding!.spec).toEqual({ policyName: 'ops-finalizer' });
    const labelled = generateFinalizerPolicy(names, { namespaceLabels: { team: 'a' } })[1] as Doc;
    expect(labelled.spec.matchResources).toEqual({ namespaceSelector: { matchLabels: { team: 'a' } } });
    const selected = generateFinalizerPolicy(names, { watchNamespace: 'apps', crLabels: { shard: 'a' } })[1] as Doc;
    expect(selected.spec.matchResources).toEqual({
      namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['apps'] }] },
      objectSelector: { matchLabels: { shard: 'a' } },
    });
  });

  it('runs `okt run` with the graph from the ConfigMap, leader election and the token file', () => {
    const deployment = (generateManifests(databaseGraph, names, { ...options, watchNamespace: 'apps', sink: 'http://sink:8080', workers: 8 }) as Doc[]).at(-1)!;
    const pod = deployment.spec.template.spec;
    const container = pod.containers[0];
    expect(container.args).toEqual([
      'run', '--graph', '/etc/okt/graph/graph.json', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind', 'Database',
      '--namespace', 'apps', '--sink', 'http://sink:8080', '--sidecar-token-file', '/var/run/secrets/okt/sidecar/token',
      '--health-port', '8081', '--leader-elect', '--leader-election-namespace', 'ops', '--leader-election-id', 'okt-database', '--workers', '8',
    ]);
    expect(container.image).toBe('okt:test');
    expect(pod.serviceAccountName).toBe('okt-database');
    expect(pod.volumes).toEqual([
      { name: 'graph', configMap: { name: 'okt-database-graph' } },
      { name: 'sidecar-token', secret: { secretName: 'tok', items: [{ key: 'k', path: 'token' }] } },
    ]);
    expect(deployment.spec.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'okt', 'app.kubernetes.io/instance': 'okt-database' });
    for (const [key, value] of Object.entries(deployment.spec.selector.matchLabels)) expect(deployment.spec.template.metadata.labels[key]).toBe(value);
  });

  it('passes the sidecar URL and each allow-list pattern to `okt run`, which parses them back', () => {
    const allow = ['http://*.apps.svc:8479', 'https://sidecars.example.com/okt'];
    const deployment = (generateManifests(databaseGraph, names, { ...options, sidecarUrl: 'http://okt-sidecar.ops:8479', sidecarUrlAllow: allow }) as Doc[]).at(-1)!;
    const [, ...args] = deployment.spec.template.spec.containers[0].args as string[];
    expect(args.join(' ')).toContain('--sidecar-url http://okt-sidecar.ops:8479 --sidecar-url-allow http://*.apps.svc:8479 --sidecar-url-allow https://sidecars.example.com/okt');
    const command = runCommand();
    command.parseOptions(args);
    expect(command.opts().sidecarUrlAllow).toEqual(allow);
  });

  it('gives `okt run` only flags it defines', () => {
    const deployment = (generateManifests(databaseGraph, { ...names, plural: 'dbs' }, { ...options, watchNamespace: 'apps', sink: 'http://sink', sidecarUrl: 'http://s:1', sidecarUrlAllow: ['http://*.x:1'] }) as Doc[]).at(-1)!;
    const [subcommand, ...args] = deployment.spec.template.spec.containers[0].args as string[];
    expect(subcommand).toBe('run');
    const parsed = runCommand().parseOptions(args);
    expect(parsed).toEqual({ operands: [], unknown: [] });
  });

  it('passes --plural only when it differs from the default, and no token without a Secret', () => {
    const args = (d: Doc[]) => d.at(-1)!.spec.template.spec.containers[0].args as string[];
    expect(args(generateManifests(databaseGraph, { ...names, plural: 'dbs' }, options) as Doc[])).toContain('dbs');
    expect(args(generateManifests(databaseGraph, { ...names, plural: 'databases' }, options) as Doc[])).not.toContain('--plural');
    const tokenless = generateManifests(databaseGraph, names, { ...options, sidecarToken: false }) as Doc[];
    expect(args(tokenless)).not.toContain('--sidecar-token-file');
    expect(tokenless.at(-1)!.spec.template.spec.volumes).toHaveLength(1);
  });

  it('gives the lean status format to the CRD (its annotation) and to `okt run` (its flag), and refuses kinds of two formats', () => {
    const lean = { ...names, statusFormat: 'lean' as const };
    const docs = generateManifests(databaseGraph, lean, options) as Doc[];
    const crd = docs.find((d) => d.kind === 'CustomResourceDefinition')!;
    expect(statusFormatOf(crd.metadata.annotations)).toBe('lean');
    const [, ...args] = docs.at(-1)!.spec.template.spec.containers[0].args as string[];
    const command = runCommand();
    command.parseOptions(args);
    expect(command.opts().statusFormat).toBe('lean');
    // full is the default: said by neither, as in an earlier okt's CRD and Deployment.
    const full = generateManifests(databaseGraph, names, options) as Doc[];
    expect(full.find((d) => d.kind === 'CustomResourceDefinition')!.metadata.annotations[STATUS_FORMAT_ANNOTATION]).toBeUndefined();
    expect(full.at(-1)!.spec.template.spec.containers[0].args).not.toContain('--status-format');
    expect(() => generateManifests([{ graph: databaseGraph, names: lean }, { graph: databaseGraph, names: { ...names, kind: 'Other' } }], options)).toThrow(/Other has the full status format, Database the lean one/);
    expect(() => statusFormatOf({ [STATUS_FORMAT_ANNOTATION]: 'tiny' })).toThrow('okt.dev/status-format: "tiny" is not a status format okt knows (full, lean, compact, packed)');
  });

  it('gives the compact status format to the CRD and to `okt run`; its CRD does not require what compact leaves out, lean\'s does, and has the marks of compact events', () => {
    const statusSchema = (format: 'lean' | 'compact') => {
      const docs = generateManifests(databaseGraph, { ...names, statusFormat: format }, options) as Doc[];
      const crd = docs.find((d) => d.kind === 'CustomResourceDefinition')!;
      expect(statusFormatOf(crd.metadata.annotations)).toBe(format);
      const command = runCommand();
      command.parseOptions((docs.at(-1)!.spec.template.spec.containers[0].args as string[]).slice(1));
      expect(command.opts().statusFormat).toBe(format);
      return crd.spec.versions[0].schema.openAPIV3Schema.properties.status.properties;
    };
    const compact = statusSchema('compact');
    expect(compact.conditions.items.required).toEqual(['type', 'status', 'reason']);
    expect(compact.operation.required).toEqual(['phase']);
    expect(compact.lastTransition.required).toEqual(['events', 'time']);
    expect(compact.cycleBrake.required).toBeUndefined();
    expect(compact.emitted.required).toEqual(['events']);
    // The marks of compact events are in the schema: the API server prunes what it does not know.
    expect(compact.emitted.properties.events.items.properties.lt).toEqual({ type: 'integer', enum: [1] });
    expect(compact.emitted.properties.events.items.properties.pa).toEqual({ type: 'integer', enum: [1, 2] });
    const lean = statusSchema('lean');
    expect(lean.emitted.properties.events.items.properties).not.toHaveProperty('pa');
    expect(lean.conditions.items.required).toContain('message');
    expect(lean.operation.required).toEqual(['id', 'node', 'phase']);
  });

  it('prints plain YAML documents (no anchors) that parse back to the objects', () => {
    const docs = generateManifests(databaseGraph, names, options);
    const text = toYamlDocuments(docs);
    expect(text).not.toMatch(/[&*]a\d/);
    expect(parseAllDocuments(text).map((d) => d.toJS())).toEqual(JSON.parse(JSON.stringify(docs)));
  });

  it('gives a sidecar container that listens for the operator and reads the shared token', () => {
    const snippet = sidecarSnippet({ image: 'okt:test', configMap: 'db-okt-sidecar', token: { name: 'tok', key: 'k' } }) as Doc;
    const container = snippet.containers[0];
    expect(container.args).toEqual(['sidecar', '--config', '/etc/okt/sidecar.yaml', '--host', '0.0.0.0', '--port', '8479']);
    expect(container.env).toContainEqual({ name: 'OKT_SIDECAR_TOKEN_FILE', value: '/var/run/secrets/okt/sidecar/token' });
    expect(snippet.volumes).toContainEqual({ name: 'okt-sidecar-config', configMap: { name: 'db-okt-sidecar' } });
  });

  it('gives the sidecar a writable journal volume, and names the journal file its config should use', () => {
    const snippet = sidecarSnippet({ image: 'okt:test', configMap: 'db-okt-sidecar', token: { name: 'tok', key: 'k' } }) as Doc;
    const container = snippet.containers[0];
    expect(container.env).toEqual([
      { name: 'OKT_SIDECAR_TOKEN_FILE', value: '/var/run/secrets/okt/sidecar/token' },
      { name: 'OKT_SIDECAR_JOURNAL', value: '/var/lib/okt/journal.jsonl' },
    ]);
    expect(container.volumeMounts).toContainEqual({ name: 'okt-sidecar-journal', mountPath: '/var/lib/okt' });
    const journalMount = (container.volumeMounts as Doc[]).find((m) => m.name === 'okt-sidecar-journal');
    expect(journalMount?.readOnly).toBeUndefined();
    expect(snippet.volumes).toContainEqual({ name: 'okt-sidecar-journal', emptyDir: {} });
    // every mount has its volume, and the journal file lies inside the journal's mount
    const volumes = (snippet.volumes as Doc[]).map((v) => v.name);
    for (const mount of container.volumeMounts as Doc[]) expect(volumes).toContain(mount.name);
    const journal = (container.env as Doc[]).find((e) => e.name === 'OKT_SIDECAR_JOURNAL')?.value as string;
    expect(journal.startsWith(`${journalMount?.mountPath}/`)).toBe(true);
  });
});

describe('crdNamesFromFlags', () => {
  it('accepts good names and rejects each bad one naming its flag', () => {
    expect(crdNamesFromFlags({ ...names, plural: 'dbs' })).toEqual({ ...names, plural: 'dbs' });
    const bad: [Partial<typeof names> & { plural?: string }, string][] = [
      [{ group: 'okt' }, '--group'],
      [{ group: 'Okt.dev' }, '--group'],
      [{ version: 'V1' }, '--version'],
      [{ kind: 'database' }, '--kind'],
      [{ plural: 'Data_bases' }, '--plural'],
      [{ shortNames: ['ok', 'O K'] }, '--short-names'],
    ];
    for (const [override, flag] of bad) {
      let error: unknown;
      try {
        crdNamesFromFlags({ ...names, ...override });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(CliError);
      expect((error as CliError).exitCode).toBe(EXIT.usage);
      expect((error as CliError).message.startsWith(`${flag}: `)).toBe(true);
    }
  });
});

describe('host aliases (a cluster without DNS)', () => {
  it('resolves each name in the operator Pod, one entry per address', () => {
    const docs = generateManifests(databaseGraph, names, {
      namespace: 'ops', createNamespace: false, image: 'okt:latest', sidecarToken: false,
      hostAliases: [{ hostname: 'postgres.a.svc', ip: '10.0.0.20' }, { hostname: 'events.a.svc', ip: '10.0.0.17' }, { hostname: 'pg', ip: '10.0.0.20' }],
    }) as Doc[];
    const pod = docs.find((d) => d.kind === 'Deployment')!.spec.template.spec;
    expect(pod.hostAliases).toEqual([
      { ip: '10.0.0.20', hostnames: ['postgres.a.svc', 'pg'] },
      { ip: '10.0.0.17', hostnames: ['events.a.svc'] },
    ]);
  });

  it('adds none unless asked', () => {
    const docs = generateManifests(databaseGraph, names, { namespace: 'ops', createNamespace: false, image: 'okt:latest', sidecarToken: false }) as Doc[];
    expect(docs.find((d) => d.kind === 'Deployment')!.spec.template.spec.hostAliases).toBeUndefined();
  });
});
