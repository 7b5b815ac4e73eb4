// `okt manifests FILE --group G --version V --kind K` (or --kind-graph KIND=FILE once per kind):
// everything to run the operator on a cluster.
import { Command } from 'commander';
import { stringify } from 'yaml';
import { generateManifests, sidecarSnippet, type GraphKind, type HostAlias, type SecretKeyRef } from '../kube/manifests.ts';
import { operatorName, singulars } from '../kube/rbac.ts';
import { DEFAULT_OPERATOR_NAMESPACE } from './crd.ts';
import { CliError, EXIT, checkFlags, runAction } from './errors.ts';
import { addKindGraphFlags, kindGraphSources, loadKindGraphs, type KindGraphFlags } from './kind-graphs.ts';
import { collectRepeated, toYamlDocuments } from './output.ts';
import { checkedSidecarPolicy } from './run.ts';

export const DEFAULT_IMAGE = 'okt:latest';
export const DEFAULT_TOKEN_SECRET = 'okt-sidecar-token';

interface ManifestFlags extends KindGraphFlags {
  image: string;
  namespace: string;
  createNamespace: boolean;
  name?: string;
  replicas: string;
  workers: string;
  watchNamespace?: string;
  sink?: string;
  sidecarTokenSecret: string | false;
  readSecrets: boolean;
  sidecarUrl?: string;
  sidecarUrlAllow: string[];
  sidecarOnly: boolean;
  hostAlias: string[];
  teardownGrace?: string;
  graphModule?: string;
  finalizerPolicy: boolean;
}

export function manifestsCommand(): Command {
  const command = new Command('manifests')
    .description('Print the operator\'s deployment as multi-document YAML (kubectl apply -f -): Namespace, RBAC, CRD, graph ConfigMap, Deployment, and a sidecar snippet')
    .argument('[file]', 'graph module (.ts/.js) or data (.json/.yaml) of the --kind (or give --kind-graph instead)');
  addKindGraphFlags(command)
    .option('--image <image>', 'the okt container image (build it with the Dockerfile)', DEFAULT_IMAGE)
    .option('-n, --namespace <ns>', 'the operator\'s namespace', DEFAULT_OPERATOR_NAMESPACE)
    .option('--no-create-namespace', 'leave the Namespace object out (it exists already)')
    .option('--name <name>', 'name of the Deployment, ServiceAccount, roles and Lease (default: okt-<kind in lower case>, the kinds joined by "-" for several)')
    .option('--replicas <n>', 'operator replicas (leader election keeps one active)', '1')
    .option('--workers <n>', 'parallel reconciles per operator and kind', '4')
    .option('--watch-namespace <ns>', 'watch custom resources in this namespace only (default: all)')
    .option('--sink <url>', 'CloudEvents sink the operator delivers lifecycle events to')
    .option('--sidecar-token-secret <name[/key]>', 'Secret (in the operator\'s namespace) holding the sidecar token', `${DEFAULT_TOKEN_SECRET}/token`)
    .option('--no-sidecar-token-secret', 'mount no sidecar token (CRs name theirs with spec.sidecar.tokenSecretRef: add --read-secrets)')
    .option('--read-secrets', 'let the operator read Secrets, for CRs that set spec.sidecar.tokenSecretRef (a Role in --watch-namespace when given, else cluster-wide)', false)
    .option('--sidecar-url <url>', 'the sidecar of CRs without spec.sidecar.url (okt run --sidecar-url)')
    .option('--sidecar-url-allow <pattern>', 'okt run --sidecar-url-allow: further URLs the operator-wide token may go to, http[s]://HOST[:PORT][/PATH] (HOST may start with "*.", PORT may be "*"); repeatable', collectRepeated, [] as string[])
    .option('--teardown-grace <seconds>', 'okt run --teardown-grace: how long after its deletion a CR in a terminating namespace whose sidecar does not answer is released')
    .option('--host-alias <name=ip>', 'resolve NAME to IP in the operator\'s Pod (hostAliases), for a cluster without DNS: e.g. the sink\'s Service name to its ClusterIP; repeatable', collectRepeated, [] as string[])
    .option('--graph-module <path>', 'the graph module\'s path in the image: the operator runs okt run --graph PATH (with --export) instead of reading the graph\'s data from a ConfigMap; needed when the graph declares objects (their render functions are code)')
    .option('--finalizer-policy', 'add a MutatingAdmissionPolicy (Kubernetes 1.36 and later) that puts okt\'s finalizer on each CR as it is created, in the watched namespaces: okt\'s CRs then carry no managedFields entry of their own for it', false)
    .option('--sidecar-only', 'print only the sidecar container snippet to add to the application\'s Pod spec', false)
    .action(
      runAction('manifests', async (file: string | undefined, flags: ManifestFlags) => {
        const { sources, replicas, workers, token, hostAliases, teardownGraceSeconds } = await checkFlags({
          sources: () => kindGraphSources(flags, { flag: 'FILE', file }),
          replicas: () => positiveInteger('--replicas', flags.replicas),
          workers: () => positiveInteger('--workers', flags.workers),
          token: () => (flags.sidecarTokenSecret === false ? false : secretKeyRef(flags.sidecarTokenSecret)),
          policy: () => checkedSidecarPolicy(flags),
          hostAliases: () => flags.hostAlias.map(hostAlias),
          teardownGraceSeconds: () => (flags.teardownGrace === undefined ? undefined : positiveInteger('--teardown-grace', flags.teardownGrace)),
        });
        const allNames = sources.map(({ names }) => names);
        const name = flags.name ?? operatorName(allNames);
        const snippet = sidecarSnippet({
          image: flags.image,
          configMap: `${singulars(allNames)}-okt-sidecar`,
          token: token === false ? { name: DEFAULT_TOKEN_SECRET, key: 'token' } : token,
        });
        if (flags.sidecarOnly) {
          process.stdout.write(stringify(snippet, { lineWidth: 0 }));
          return;
        }
        const kinds = await loadKindGraphs(sources);
        const graphModule = graphModuleOf(flags, kinds);
        const documents = generateManifests(kinds, {
          namespace: flags.namespace,
          createNamespace: flags.createNamespace,
          image: flags.image,
          name,
          replicas,
          workers,
          watchNamespace: flags.watchNamespace,
          sink: flags.sink,
          sidecarToken: token,
          readSecrets: flags.readSecrets,
          sidecarUrlAllow: flags.sidecarUrlAllow,
          hostAliases,
          finalizerPolicy: flags.finalizerPolicy,
          ...(teardownGraceSeconds === undefined ? {} : { teardownGraceSeconds }),
          ...(flags.sidecarUrl === undefined ? {} : { sidecarUrl: flags.sidecarUrl }),
          ...(graphModule === undefined ? {} : { graphModule }),
        });
        process.stdout.write(toYamlDocuments(documents) + commentedSnippet(snippet));
      }),
    );
  return command;
}

/**
 * `--graph-module`, checked: one kind only; and required by a graph that declares objects, whose
 * render functions a graph read from data (the ConfigMap) lacks: such an operator could make none.
 */
function graphModuleOf(flags: ManifestFlags, kinds: readonly GraphKind[]): { path: string; export?: string } | undefined {
  if (flags.graphModule !== undefined) {
    if (kinds.length > 1) throw new CliError(EXIT.usage, '--graph-module: serves one kind (give FILE and --kind, not --kind-graph)');
    return { path: flags.graphModule, ...(flags.export === undefined ? {} : { export: flags.export }) };
  }
  const making = kinds.find(({ graph }) => graph.objects.length > 0);
  if (making !== undefined) {
    throw new CliError(EXIT.usage, `--graph-module: missing: graph "${making.graph.name}" declares objects, whose render functions the operator must load from its image: give the graph module's path in the image (okt run --graph PATH), e.g. --graph-module /app/graph.ts`);
  }
  return undefined;
}

function commentedSnippet(snippet: Record<string, unknown>): string {
  const body = stringify(snippet, { lineWidth: 0 }).trimEnd().split('\n').map((line) => `#   ${line}`);
  return [
    '---',
    '# The okt sidecar: add these to the Pod spec of your application (okt manifests ... --sidecar-only prints them alone).',
    '# Its ConfigMap holds sidecar.yaml (tokenFile: ${OKT_SIDECAR_TOKEN_FILE}, journal: ${OKT_SIDECAR_JOURNAL}); the token Secret must exist in that namespace too.',
    ...body,
    '',
  ].join('\n');
}

function hostAlias(value: string): HostAlias {
  const match = /^([A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)=(\d{1,3}(\.\d{1,3}){3}|[0-9a-fA-F:]+)$/.exec(value);
  if (!match) throw new CliError(EXIT.usage, `--host-alias: "${value}" is not NAME=IP (a host name, then an IPv4 or IPv6 address)`);
  return { hostname: match[1]!, ip: match[3]! };
}

function secretKeyRef(value: string): SecretKeyRef {
  const [name, key = 'token', ...rest] = value.split('/');
  if (!name || !key || rest.length > 0) {
    throw new CliError(EXIT.usage, `--sidecar-token-secret: "${value}" is not NAME or NAME/KEY`);
  }
  return { name, key };
}

function positiveInteger(flag: string, value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new CliError(EXIT.usage, `${flag}: expected a positive integer, got "${value}"`);
  return n;
}
