import type { V1Container, V1PodTemplateSpec, V1Volume, V1VolumeMount } from '@kubernetes/client-node';
import { SIDECAR_PORT_NAME, type Graph } from '../graph/index.ts';
import { generateCrd, GRAPH_REVISION_ANNOTATION, resolveCrdNames, type CrdNames } from './crd.ts';
import { generateFinalizerPolicy } from './finalizer-policy.ts';
import { generateRbac, operatorLabels, operatorName } from './rbac.ts';
import { DEFAULT_STATUS_FORMAT } from './status-format.ts';

/** The sidecar's port when its config does not say (sidecar/config.ts). */
export const SIDECAR_PORT = 8479;
export const HEALTH_PORT = 8081;
/** Where the graph's ConfigMap is mounted in the operator, and the file `okt run --graph` reads. */
export const GRAPH_MOUNT = '/etc/okt/graph';
export const GRAPH_FILE = `${GRAPH_MOUNT}/graph.json`;
/** Where the sidecar token Secret is mounted, in the operator and in the sidecar alike. */
export const TOKEN_MOUNT = '/var/run/secrets/okt/sidecar';
export const SIDECAR_CONFIG_MOUNT = '/etc/okt';
/** Where the sidecar's journal volume is mounted, and the journal file its config should name. */
export const SIDECAR_JOURNAL_MOUNT = '/var/lib/okt';
export const SIDECAR_JOURNAL_FILE = `${SIDECAR_JOURNAL_MOUNT}/journal.jsonl`;

export interface SecretKeyRef {
  name: string;
  key: string;
}

export interface OperatorManifestOptions {
  /** The operator's namespace (Deployment, ServiceAccount, Lease). */
  namespace: string;
  /** Emit the Namespace object too. */
  createNamespace: boolean;
  image: string;
  /** Base name of every object; default operatorName(names). */
  name?: string;
  replicas?: number;
  workers?: number;
  /** Watch only this namespace (`okt run --namespace`); default: every namespace. */
  watchNamespace?: string;
  /** CloudEvents sink URL (`okt run --sink`). */
  sink?: string;
  /** The Secret holding the sidecar token, mounted for `okt run --sidecar-token-file`; false: none. */
  sidecarToken: SecretKeyRef | false;
  /** Let the operator read Secrets (spec.sidecar.tokenSecretRef): see OperatorRbacOptions.readSecrets. */
  readSecrets?: boolean;
  /** `okt run --sidecar-url`: the sidecar of CRs that name none. */
  sidecarUrl?: string;
  /** `okt run --sidecar-url-allow`, once per pattern: where else the operator-wide token may go. */
  sidecarUrlAllow?: readonly string[];
  /** `okt run --teardown-grace`, in seconds (default: okt run's own). */
  teardownGraceSeconds?: number;
  /**
   * Names the operator's Pod resolves without cluster DNS (its /etc/hosts): the sink's and sidecars'
   * Service names mapped to their ClusterIPs, on a cluster that has no DNS add-on.
   */
  hostAliases?: readonly HostAlias[];
  /**
   * The graph module's path in the image (`okt run --graph PATH`, with `export`: `--export`), for a
   * graph that declares objects: their render functions are code, which the graph's data (the
   * ConfigMap) does not carry. One kind only; then no graph ConfigMap.
   */
  graphModule?: { path: string; export?: string };
  /**
   * Add a MutatingAdmissionPolicy and its binding that put okt's finalizer on each CR at its creation
   * (generateFinalizerPolicy; Kubernetes 1.36 and later), in the watched namespace when there is one.
   */
  finalizerPolicy?: boolean;
}

/** One kind of custom resource and its graph. */
export interface GraphKind {
  graph: Graph;
  names: CrdNames;
}

export interface HostAlias {
  hostname: string;
  ip: string;
}

/** Pod hostAliases: one entry per address, its names in the order given. */
export function podHostAliases(aliases: readonly HostAlias[]): { ip: string; hostnames: string[] }[] {
  const byIp = new Map<string, string[]>();
  for (const { hostname, ip } of aliases) byIp.set(ip, [...(byIp.get(ip) ?? []), hostname]);
  return [...byIp].map(([ip, hostnames]) => ({ ip, hostnames }));
}

/**
 * Everything a cluster needs to run the operator of one graph, or of several kinds each with its graph
 * (in one group and version, as `okt run --kind-graph` takes them), in apply order: the Namespace
 * (optional), RBAC, the CRDs, the finalizer's admission policy (optional), the graphs as a ConfigMap (so any graph file works with the stock
 * image) and the operator Deployment (`okt run`, leader election on, so replicas and rolling
 * updates never reconcile twice at once).
 */
export function generateManifests(graph: Graph, names: CrdNames, options: OperatorManifestOptions): Record<string, unknown>[];
export function generateManifests(kinds: readonly GraphKind[], options: OperatorManifestOptions): Record<string, unknown>[];
export function generateManifests(...given: [Graph, CrdNames, OperatorManifestOptions] | [readonly GraphKind[], OperatorManifestOptions]): Record<string, unknown>[] {
  const [kinds, options] = given.length === 3 ? [[{ graph: given[0], names: given[1] }], given[2]] : given;
  const resolved = kinds.map(({ names }) => resolveCrdNames(names));
  const first = resolved[0];
  if (first === undefined) throw new Error('generateManifests: no kind given');
  const stray = resolved.find((n) => n.group !== first.group || n.version !== first.version);
  if (stray !== undefined) {
    throw new Error(`generateManifests: ${stray.kind} is in ${stray.group}/${stray.version}, ${first.kind} in ${first.group}/${first.version}: okt run serves several kinds of one group and version`);
  }
  const otherFormat = resolved.find((n) => n.statusFormat !== first.statusFormat);
  if (otherFormat !== undefined) {
    throw new Error(`generateManifests: ${otherFormat.kind} has the ${otherFormat.statusFormat} status format, ${first.kind} the ${first.statusFormat} one: okt run writes one format, that of the version it serves`);
  }
  const allNames = kinds.map(({ names }) => names);
  const name = options.name ?? operatorName(allNames);
  const { namespace } = options;
  const labels = operatorLabels(name);
  const selector = { 'app.kubernetes.io/name': labels['app.kubernetes.io/name'], 'app.kubernetes.io/instance': name };
  const configMap = `${name}-graph`;
  // One kind keeps the flags (and the file) of a one-graph operator; several are one --kind-graph each.
  const single = kinds.length === 1;
  const customPlural = (i: number) => (hasDefaultPlural(kinds[i]!.names) ? undefined : resolved[i]!.plural);

  const module = options.graphModule;
  if (module !== undefined && !single) throw new Error('generateManifests: a graph module in the image serves one kind');
  const args = ['run'];
  if (single) {
    args.push('--graph', module?.path ?? GRAPH_FILE, '--group', first.group, '--version', first.version, '--kind', first.kind);
    if (module?.export !== undefined) args.push('--export', module.export);
    const plural = customPlural(0);
    if (plural !== undefined) args.push('--plural', plural);
  } else {
    args.push('--group', first.group, '--version', first.version);
    for (const [i, n] of resolved.entries()) {
      const plural = customPlural(i);
      args.push('--kind-graph', `${n.kind}${plural === undefined ? '' : `:${plural}`}=${GRAPH_MOUNT}/${kindGraphFile(n)}`);
    }
  }
  // Every kind of one operator is in one version, and a version has one status format.
  if (first.statusFormat !== DEFAULT_STATUS_FORMAT) args.push('--status-format', first.statusFormat);
  if (options.watchNamespace !== undefined) args.push('--namespace', options.watchNamespace);
  if (options.sink !== undefined) args.push('--sink', options.sink);
  if (options.sidecarToken !== false) args.push('--sidecar-token-file', `${TOKEN_MOUNT}/token`);
  if (options.sidecarUrl !== undefined) args.push('--sidecar-url', options.sidecarUrl);
  for (const pattern of options.sidecarUrlAllow ?? []) args.push('--sidecar-url-allow', pattern);
  if (options.teardownGraceSeconds !== undefined) args.push('--teardown-grace', String(options.teardownGraceSeconds));
  args.push(
    '--health-port', String(HEALTH_PORT),
    '--leader-elect', '--leader-election-namespace', namespace, '--leader-election-id', name,
    '--workers', String(options.workers ?? 4),
  );

  const volumes: V1Volume[] = module === undefined ? [{ name: 'graph', configMap: { name: configMap } }] : [];
  const volumeMounts: Record<string, unknown>[] = module === undefined ? [{ name: 'graph', mountPath: GRAPH_MOUNT, readOnly: true }] : [];
  if (options.sidecarToken !== false) {
    volumes.push(tokenVolume(options.sidecarToken));
    volumeMounts.push({ name: 'sidecar-token', mountPath: TOKEN_MOUNT, readOnly: true });
  }
  const probe = (path: string) => ({ httpGet: { path, port: 'health' }, periodSeconds: 10 });

  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace, labels },
    spec: {
      replicas: options.replicas ?? 1,
      selector: { matchLabels: selector },
      template: {
        // A new graph revision changes the pod template, so applying the manifests rolls the operator.
        metadata: { labels, annotations: { [GRAPH_REVISION_ANNOTATION]: kinds.map((kind) => kind.graph.revision).join(',') } },
        spec: {
          serviceAccountName: name,
          ...(options.hostAliases?.length ? { hostAliases: podHostAliases(options.hostAliases) } : {}),
          securityContext: { runAsNonRoot: true, runAsUser: 1000, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'operator',
              image: options.image,
              imagePullPolicy: 'IfNotPresent',
              args,
              ports: [{ name: 'health', containerPort: HEALTH_PORT }],
              livenessProbe: probe('/healthz'),
              readinessProbe: probe('/readyz'),
              resources: { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } },
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
              volumeMounts,
            },
          ],
          volumes,
        },
      },
    },
  };

  return [
    ...(options.createNamespace ? [{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: namespace, labels } }] : []),
    ...generateRbac(allNames, { namespace, name, readSecrets: options.readSecrets, objectKinds: kinds.flatMap(({ graph }) => [graph, ...graph.previous].flatMap((served) => served.objects)), ...(options.watchNamespace === undefined ? {} : { watchNamespace: options.watchNamespace }) }),
    ...kinds.map(({ graph, names }) => generateCrd(graph, names)),
    ...(options.finalizerPolicy === true ? generateFinalizerPolicy(allNames, { name, ...(options.watchNamespace === undefined ? {} : { watchNamespace: options.watchNamespace }) }) : []),
    ...(module !== undefined ? [] : [{
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: configMap, namespace, labels },
      data: Object.fromEntries(kinds.map(({ graph, names }) => [single ? 'graph.json' : kindGraphFile(names), `${JSON.stringify(graph.toData(), null, 2)}\n`])),
    }]),
    deployment,
  ];
}

/**
 * The sidecar to add to the application's Pod: `okt sidecar` with its config from a ConfigMap
 * (`sidecar.yaml`, whose tokenFile should read `${OKT_SIDECAR_TOKEN_FILE}` and journal
 * `${OKT_SIDECAR_JOURNAL}`), or from a file in its image (`configFile`: a project made by `okt init`
 * holds its config and actions there), and the token the operator also holds, listening on every
 * address so that the operator reaches it at `http://<pod>:8479`. The journal lives on a volume of its own
 * (`okt-sidecar-journal`, an emptyDir): it survives restarts of the container, not the Pod's deletion,
 * after which the sidecar starts with a new epoch. Replace it with a PersistentVolumeClaim (one per
 * Pod, never shared by two sidecars) to keep it across Pods.
 */
export function sidecarSnippet(options: SidecarOptions): SidecarSnippet {
  const fromConfigMap = 'configMap' in options;
  return {
    containers: [
      {
        name: 'okt-sidecar',
        image: options.image,
        imagePullPolicy: 'IfNotPresent',
        args: ['sidecar', '--config', fromConfigMap ? `${SIDECAR_CONFIG_MOUNT}/sidecar.yaml` : options.configFile, '--host', '0.0.0.0', '--port', String(SIDECAR_PORT)],
        env: [
          { name: 'OKT_SIDECAR_TOKEN_FILE', value: `${TOKEN_MOUNT}/token` },
          { name: 'OKT_SIDECAR_JOURNAL', value: SIDECAR_JOURNAL_FILE },
        ],
        ports: [{ name: SIDECAR_PORT_NAME, containerPort: SIDECAR_PORT }],
        volumeMounts: [
          ...(fromConfigMap ? [{ name: 'okt-sidecar-config', mountPath: SIDECAR_CONFIG_MOUNT, readOnly: true }] : []),
          { name: 'sidecar-token', mountPath: TOKEN_MOUNT, readOnly: true },
          { name: 'okt-sidecar-journal', mountPath: SIDECAR_JOURNAL_MOUNT },
        ],
      },
    ],
    volumes: [
      ...(fromConfigMap ? [{ name: 'okt-sidecar-config', configMap: { name: options.configMap } }] : []),
      tokenVolume(options.token),
      { name: 'okt-sidecar-journal', emptyDir: {} },
    ],
  };
}

/** The sidecar's image, its config (a ConfigMap holding `sidecar.yaml`, or a file in the image) and the Secret key of its token. */
export type SidecarOptions = { image: string; token: SecretKeyRef } & ({ configMap: string } | { configFile: string });

/** What `okt manifests --sidecar-only` prints: the sidecar's container and its volumes (config, token, journal). */
export type SidecarSnippet = { containers: V1Container[]; volumes: V1Volume[] };

/**
 * A Pod template (of a Deployment, StatefulSet or Job a graph declares) with okt's sidecar added: its
 * container after the template's own, with `volumeMounts` (the application's volumes it also needs,
 * such as its data) after its own, and its config, token and journal volumes after the template's.
 * The template itself is left unchanged. Throws when the template already has a container or volume
 * of the sidecar's names.
 */
export function withOktSidecar(template: V1PodTemplateSpec, options: SidecarOptions & { volumeMounts?: V1VolumeMount[] }): V1PodTemplateSpec {
  const { containers, volumes } = sidecarSnippet(options);
  const spec = template.spec ?? { containers: [] };
  const clash = [
    ...containers.filter((c) => spec.containers.some((own) => own.name === c.name)).map((c) => `a container named "${c.name}"`),
    ...volumes.filter((v) => (spec.volumes ?? []).some((own) => own.name === v.name)).map((v) => `a volume named "${v.name}"`),
  ];
  if (clash.length > 0) throw new Error(`withOktSidecar: the Pod template already has ${clash.join(' and ')} (the sidecar's)`);
  const sidecars = containers.map((c): V1Container => ({ ...c, volumeMounts: [...(c.volumeMounts ?? []), ...(options.volumeMounts ?? [])] }));
  return { ...template, spec: { ...spec, containers: [...spec.containers, ...sidecars], volumes: [...(spec.volumes ?? []), ...volumes] } };
}

function tokenVolume(token: SecretKeyRef): V1Volume {
  return { name: 'sidecar-token', secret: { secretName: token.name, items: [{ key: token.key, path: 'token' }] } };
}

function hasDefaultPlural(names: CrdNames): boolean {
  return resolveCrdNames(names).plural === resolveCrdNames({ ...names, plural: undefined }).plural;
}

/** The file of one of several kinds' graphs: `database.json`, read by `okt run --kind-graph Database=…`. */
function kindGraphFile(names: CrdNames): string {
  return `${resolveCrdNames(names).singular}.json`;
}
