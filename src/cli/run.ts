// `okt run`: the operator of one graph's custom resources, or of several kinds each with its graph,
// against the cluster KUBECONFIG names.
import { Command, Option } from 'commander';
import { addControllerRuntimeFlags, controllerRuntimeSettings, seconds } from '../controller/flags.ts';
import { parseShard } from '../controller/lifecycle/shard.ts';
import type { SidecarDefaults } from '../controller/lifecycle/sidecar-clients.ts';
import { readTokenFile } from '../sidecar-client/token-file.ts';
import { SidecarUrlPolicy } from '../controller/lifecycle/sidecar-policy.ts';
import { resolveCrdNames } from '../kube/crd.ts';
import { CliError, EXIT, checkFlags, runAction } from './errors.ts';
import { addKindGraphFlags, kindGraphSources, loadKindGraphs, type KindGraphFlags } from './kind-graphs.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import { collectRepeated } from './output.ts';
import { untilSignal } from './signals.ts';

interface RunFlags extends KindGraphFlags {
  graph?: string;
  namespace?: string;
  labelSelector?: string;
  shard?: string;
  sink?: string;
  otlpEndpoint?: string;
  eventMode: 'binary' | 'structured';
  sidecarUrl?: string;
  sidecarTokenFile?: string;
  sidecarUrlAllow: string[];
  pollInterval: string;
  resyncPeriod: string;
  teardownGrace: string;
  [flag: string]: unknown;
}

export function runCommand(): Command {
  const command = new Command('run')
    .description('Run the operator: drive every custom resource of a graph (or of several kinds, each with its graph) toward its spec.desiredState')
    .option('--graph <file>', 'the graph module (.ts/.js) or data file (.json/.yaml) of the --kind');
  addKindGraphFlags(command)
    .option('--namespace <ns>', 'watch only this namespace (default: every namespace)')
    .option('-l, --label-selector <selector>', 'only CRs with these labels (to split CRs between operators)')
    .option('--shard <i/N>', 'only shard i of N of the CRs, by a stable hash of their uid; with --leader-elect, each shard has its own Lease')
    .option('--sink <url>', 'CloudEvents sink (default: $K_SINK; with none, events are not sent and count as delivered)')
    .option('--otlp-endpoint <url>', 'send OpenTelemetry traces over OTLP/HTTP to this base URL (traces go to <url>/v1/traces; default: $OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or $OTEL_EXPORTER_OTLP_ENDPOINT; with none, no traces)')
    .addOption(new Option('--event-mode <mode>', 'CloudEvents HTTP content mode').choices(['binary', 'structured']).default('binary'))
    .option('--sidecar-url <url>', 'the sidecar of CRs without spec.sidecar.url')
    .option('--sidecar-token-file <file>', 'the operator-wide bearer token, sent only to --sidecar-url and --sidecar-url-allow URLs (CRs naming another URL must name a Secret of their namespace, of type okt.dev/sidecar-token, in spec.sidecar.tokenSecretRef); read again after a sidecar answers 401 and at most 60 s later, so a rotated Secret mounted here is picked up without a restart')
    .option('--sidecar-url-allow <pattern>', 'the operator-wide token may also go to URLs matching http[s]://HOST[:PORT][/PATH] (HOST may start with "*.", PORT may be "*"); repeatable', collectRepeated, [] as string[])
    .option('--poll-interval <seconds>', 'a safety look at a running action (its end is noticed at once by a long-poll)', '10')
    .option('--resync-period <seconds>', 'look at every CR again this often even when nothing changed (0: never)', '600')
    .option('--teardown-grace <seconds>', 'a deleted CR whose namespace is terminating and whose sidecar does not answer is released (finalizer removed, deletion abandoned) this long after its deletion', '60');
  addControllerRuntimeFlags(command);
  return command.action(
    runAction('run', async (flags: RunFlags) => {
      const { settings, shard, kinds, pollIntervalMs, resyncPeriodMs, teardownGraceMs, allow, tokenFile, otlpEndpoint } = await checkFlags({
        settings: () => controllerRuntimeSettings(flags),
        shard: () => (flags.shard === undefined ? undefined : parseShard(flags.shard)),
        kinds: async () => loadKindGraphs(kindGraphSources(flags, { flag: '--graph', file: flags.graph })),
        pollIntervalMs: () => seconds(flags.pollInterval, '--poll-interval'),
        resyncPeriodMs: () => seconds(flags.resyncPeriod, '--resync-period', 'zero or more'),
        teardownGraceMs: () => seconds(flags.teardownGrace, '--teardown-grace', 'zero or more'),
        allow: () => checkedSidecarPolicy(flags),
        tokenFile: () => (flags.sidecarTokenFile === undefined ? undefined : checkedTokenFile(flags.sidecarTokenFile)),
        otlpEndpoint: () => (flags.otlpEndpoint === undefined ? undefined : httpUrl('--otlp-endpoint', flags.otlpEndpoint)),
      });
      // One Lease per shard: the replicas of a shard elect one leader among themselves.
      if (shard && settings.leaderElection) settings.leaderElection.name = `${settings.leaderElection.name}-shard-${shard.index}-of-${shard.count}`;
      // Loaded here, not at the top: every other okt command starts faster without them.
      const [{ createLogger }, { startOperator }] = await Promise.all([import('../controller/logger.ts'), import('../controller/lifecycle/index.ts')]);
      const logger = createLogger({ level: settings.logLevel });
      const sidecar: SidecarDefaults = { allow };
      if (flags.sidecarUrl !== undefined) sidecar.url = flags.sidecarUrl;
      if (tokenFile !== undefined) sidecar.tokenFile = tokenFile;
      const resources = kinds.map(({ graph, names }) => {
        const { group, version, plural, kind, statusFormat } = resolveCrdNames(names);
        return { graph, resource: { group, version, plural, kind }, statusFormat };
      });
      const operator = await startOperator({
        kubeConfig: loadKubeConfig(),
        kinds: resources,
        workers: settings.workers,
        health: settings.health,
        leaderElection: settings.leaderElection,
        watchIdleTimeoutMs: settings.watchIdleTimeoutMs,
        requestTimeoutMs: settings.requestTimeoutMs,
        sidecar,
        events: { mode: flags.eventMode, ...(flags.sink === undefined ? {} : { sink: flags.sink }) },
        pollIntervalMs,
        resyncPeriodMs,
        teardownGraceMs,
        logger,
        ...(flags.namespace === undefined ? {} : { namespace: flags.namespace }),
        ...(flags.labelSelector === undefined ? {} : { labelSelector: flags.labelSelector }),
        ...(shard === undefined ? {} : { shard }),
        ...(otlpEndpoint === undefined ? {} : { tracing: { endpoint: otlpEndpoint } }),
      });
      const served = resources.map(({ graph, resource: r, statusFormat }) => ({ graph: graph.name, resource: `${r.plural}.${r.group}/${r.version}`, statusFormat }));
      logger.info({ kinds: served, healthPort: operator.manager.healthPort }, 'operator started');
      await untilSignal();
      logger.info('stopping: draining the workers');
      await operator.stop();
    }),
  );
}

/** An http(s) URL, or a usage error naming the flag. */
function httpUrl(flag: string, text: string): string {
  if (URL.canParse(text) && /^https?:$/.test(new URL(text).protocol)) return text;
  throw new CliError(EXIT.usage, `${flag}: expected an http or https URL, got "${text}"`);
}

/** The allow-list, checked at start: a pattern that does not parse is a usage error, not a silent "allow nothing". */
export function checkedSidecarPolicy(flags: { sidecarUrl?: string; sidecarUrlAllow: string[] }): string[] {
  try {
    new SidecarUrlPolicy({ ...(flags.sidecarUrl === undefined ? {} : { defaultUrl: flags.sidecarUrl }), allow: flags.sidecarUrlAllow });
  } catch (error) {
    throw new CliError(EXIT.usage, `--sidecar-url-allow / --sidecar-url: ${error instanceof Error ? error.message : String(error)}`);
  }
  return flags.sidecarUrlAllow;
}

/** The token file, checked at start (a usage error, not a stack trace); the operator reads it again after a 401 and every minute. */
function checkedTokenFile(file: string): string {
  try {
    readTokenFile(file);
  } catch (error) {
    throw new CliError(EXIT.usage, `--sidecar-token-file: ${error instanceof Error ? error.message : String(error)}`);
  }
  return file;
}
