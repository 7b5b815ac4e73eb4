// `okt ui`: finds the CRD, loads the graphs it publishes, watches its CRs with the Informer and serves
// the page that shows them (src/ui/server.ts) until stopped.
import type { KubeConfig, V1CustomResourceDefinition } from '@kubernetes/client-node';
import { pino } from 'pino';
import { Informer } from '../controller/informer.ts';
import { createLogger } from '../controller/logger.ts';
import type { Graph } from '../graph/index.ts';
import { loadGraph } from '../graph/index.ts';
import { GRAPH_ANNOTATION, GRAPH_REVISION_ANNOTATION, GRAPH_REVISIONS_ANNOTATION } from '../kube/crd.ts';
import { KubeTransport, objectKey, type KubeObject, type ResourceRef } from '../kube/transport/index.ts';
import { startUiServer, type UiServer } from '../ui/server.ts';
import { UiState } from '../ui/state.ts';
import { bundledGraph } from './bundled.ts';
import { findCrd, servedVersion, type CrdMatch } from './cluster-crds.ts';
import type { CrdFinderFlags } from './crd-names.ts';
import { CliError, EXIT } from './errors.ts';
import { loadGraphFile } from './graph-module.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import { inventoryOf, readObjectViews } from './status-objects.ts';
import { noReadableGraph, typeNames } from './status-read.ts';
import type { LifecycleResource } from './status-view.ts';

export interface UiFlags extends CrdFinderFlags {
  namespace?: string;
  allNamespaces?: boolean;
  graph?: string;
  export?: string;
  port: number;
  address: string;
}

export interface RunningUi {
  readonly url: string;
  readonly state: UiState;
  readonly crd: string;
  stop(): Promise<void>;
}

const CRDS: ResourceRef = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', namespaced: false };

/** Starts everything; resolves once the first list is in and the page is served. */
export async function startUi(type: string | undefined, flags: UiFlags): Promise<RunningUi> {
  // A --graph file that cannot be loaded fails before anything is asked of the cluster.
  const given = flags.graph === undefined ? undefined : (await loadGraphFile(flags.graph, { exportName: flags.export })).graph;
  const kc = loadKubeConfig();
  const namespace = flags.allNamespaces ? undefined : (flags.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default');
  const crd = await findCrd(kc, flags, crdMatch(type));
  const crdName = crd.metadata?.name ?? `${crd.spec.names.plural}.${crd.spec.group}`;
  const published = given === undefined ? publishedGraphs(crd) : { graphs: [given], current: given.revision };
  const resource: ResourceRef = { group: crd.spec.group, version: servedVersion(crd), plural: crd.spec.names.plural };
  const transport = await transportFor(kc);
  // Its own lines go to stderr: stdout says where the page is.
  const log = createLogger({ level: 'warn', destination: pino.destination(2) });

  // A CR on a revision the CRD did not publish when okt ui started: the CRD is read again for it.
  const findRevision = (revision: string): void => {
    if (given !== undefined) return;
    transport
      .get(CRDS, undefined, crdName)
      .then((fresh) => {
        for (const graph of publishedGraphs(fresh as unknown as V1CustomResourceDefinition).graphs) state.addGraph(graph);
      })
      .catch((err: unknown) => log.warn({ err, revision }, 'cannot read the CRD again for a new graph revision'));
  };
  const state = new UiState({
    title: { kind: crd.spec.names.kind, crd: crdName, version: resource.version, namespace: namespace ?? null },
    graphs: published.graphs,
    defaultRevision: published.current,
    onUnknownRevision: findRevision,
  });

  const informer = new Informer<KubeObject>({ transport, resource, ...(namespace === undefined ? {} : { namespace }), logger: log });
  informer.addHandler({
    onAdd: (obj) => state.upsert(obj as unknown as LifecycleResource),
    onUpdate: (old, obj) => {
      if (old !== obj) state.upsert(obj as unknown as LifecycleResource);
    },
    onDelete: (obj) => state.remove(obj as unknown as LifecycleResource),
  });
  informer.start();
  const objects = readObjectsEvery(OBJECTS_READ_MS, informer, transport, given, state, log);
  let server: UiServer | undefined;
  try {
    await firstList(informer, resource, namespace);
    state.goLive();
    server = await startUiServer(state, { port: flags.port, host: flags.address }).catch((error: unknown) => {
      const code = (error as { code?: string }).code;
      if (code === 'EADDRINUSE') throw new CliError(EXIT.usage, `${flags.address}:${flags.port} is in use`, 'Pick another port with --port (0: any free one).');
      if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new CliError(EXIT.usage, `--address ${flags.address}: not an address of this machine`);
      throw error;
    });
  } catch (error) {
    objects.stop();
    await informer.stop();
    await transport.close();
    throw error;
  }
  const running = server;
  return {
    url: running.url,
    state,
    crd: crdName,
    async stop() {
      objects.stop();
      await running.close();
      await informer.stop();
      await transport.close();
    },
  };
}

/** How often `okt ui` reads the objects of the CRs that have some (one GET per object). */
const OBJECTS_READ_MS = 2_000;

/**
 * Reads the objects each CR's inventory names, a round every `everyMs` after the last one ended, and
 * hands them to the state (which tells the pages what changed). `graph`: the --graph module, whose
 * declarations' `ready` judge their objects; else kstatus does.
 */
function readObjectsEvery(
  everyMs: number, informer: Informer<KubeObject>, transport: KubeTransport, graph: Graph | undefined, state: UiState, log: ReturnType<typeof createLogger>,
): { stop(): void } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const round = async (): Promise<void> => {
    for (const cr of informer.store.list()) {
      const entries = inventoryOf((cr as { status?: unknown }).status);
      if (entries.length === 0) continue;
      const views = await readObjectViews(transport, graph, cr.metadata.namespace ?? 'default', entries);
      if (stopped) return;
      state.setObjects(objectKey(cr), views);
    }
  };
  const next = (delayMs: number): void => {
    timer = setTimeout(() => {
      round()
        .catch((err: unknown) => log.warn({ err }, 'cannot read the objects of the resources'))
        .finally(() => {
          if (!stopped) next(everyMs);
        });
    }, delayMs);
  };
  next(0);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

async function transportFor(kc: KubeConfig): Promise<KubeTransport> {
  try {
    return await KubeTransport.fromKubeConfig(kc);
  } catch (error) {
    throw new CliError(EXIT.usage, `cannot use the kubeconfig: ${error instanceof Error ? error.message : String(error)}`, 'Check KUBECONFIG.');
  }
}

/** The informer's first list, or why it cannot be had (the informer itself would retry for ever). */
async function firstList(informer: Informer<KubeObject>, resource: ResourceRef, namespace: string | undefined): Promise<void> {
  const deadline = Date.now() + 30_000;
  const synced = informer.waitForSync();
  while (!informer.hasSynced) {
    if (Date.now() > deadline) {
      const where = namespace === undefined ? 'in all namespaces' : `in namespace "${namespace}"`;
      throw new CliError(EXIT.cluster, `cannot list the ${resource.plural}.${resource.group} ${where} (${informer.stats.failures} attempts in 30 s)`, 'Check that the cluster is up and that you may list and watch them.');
    }
    await Promise.race([synced, new Promise((resolve) => setTimeout(resolve, 200))]);
  }
}

/** The CRD named by TYPE (plural, singular, kind or short name, as kubectl takes them), else the one okt CRD. */
function crdMatch(type: string | undefined): CrdMatch {
  if (type !== undefined) {
    const wanted = type.toLowerCase();
    return {
      wanted: `type "${type}"`,
      matches: (crd) => typeNames(crd).includes(wanted),
      ambiguous: { subject: `type "${type}"`, choose: 'Say which one with TYPE.GROUP, --kind/--group or --crd-name.' },
    };
  }
  return {
    wanted: `annotation ${GRAPH_ANNOTATION} (a CRD okt generated)`,
    matches: (crd) => crd.metadata?.annotations?.[GRAPH_ANNOTATION] !== undefined,
    ambiguous: { subject: 'which CRD to show', choose: 'Say which one: okt ui TYPE, or --kind/--group or --crd-name.' },
  };
}

/** Every graph revision the CRD publishes, and its own; a CRD that publishes none: the bundled graph it names. */
export function publishedGraphs(crd: V1CustomResourceDefinition): { graphs: Graph[]; current: string } {
  const annotations = crd.metadata?.annotations ?? {};
  const text = annotations[GRAPH_REVISIONS_ANNOTATION];
  if (text !== undefined) {
    let graphs: Graph[];
    try {
      graphs = Object.values(JSON.parse(text) as Record<string, unknown>).map((data) => loadGraph(data));
    } catch (error) {
      throw noReadableGraph(crd, error);
    }
    const current = annotations[GRAPH_REVISION_ANNOTATION] ?? graphs[0]?.revision;
    if (current !== undefined && graphs.some((g) => g.revision === current)) return { graphs, current };
  }
  const name = annotations[GRAPH_ANNOTATION];
  const bundled = name === undefined ? undefined : bundledGraph(name);
  if (bundled !== undefined) return { graphs: [bundled.graph], current: bundled.graph.revision };
  const said = name === undefined ? `has no ${GRAPH_ANNOTATION} annotation` : `publishes no graph, and names graph "${name}", which is not bundled with okt`;
  throw new CliError(EXIT.usage, `CRD ${crd.metadata?.name} ${said}`, 'Pass the graph with --graph FILE.');
}
