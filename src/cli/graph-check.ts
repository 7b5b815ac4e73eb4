// `okt graph check NEW --against-cluster`: what an operator on NEW would do to every live resource of
// its CRD, asked of the very function the operator acts on (predictMigration), so that CI can refuse
// an upgrade that would strand a resource.
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';
import { parseStatus } from '../controller/lifecycle/parse-status.ts';
import { createLifecycleModel, landing, MIGRATE_ANNOTATION, recordedPosition, servedMigration } from '../controller/lifecycle/model.ts';
import { objectsOutlook, type ObjectsOutlook } from '../controller/lifecycle/objects/inventory.ts';
import type { LifecycleModel } from '../controller/lifecycle/step-types.ts';
import type { Graph, NodeFate } from '../graph/index.ts';
import { desiredStateNames, GRAPH_ANNOTATION, GRAPH_REVISION_ANNOTATION } from '../kube/crd.ts';
import { DEFAULT_STATUS_FORMAT, statusFormatOf, type StatusFormat } from '../kube/status-format.ts';
import { describeIssues, lifecycleSpecSchema, type InventoryEntry, type LifecycleStatus } from '../kube/lifecycle-resource.ts';
import { predictMigration, type MigrationPrediction, type RecordedPosition } from '../plan/index.ts';
import { findCrd, listResources, servedVersion } from './cluster-crds.ts';
import type { CrdFinderFlags } from './crd-names.ts';
import { CliError, EXIT, type ExitCode } from './errors.ts';
import type { LoadedGraph } from './graph-module.ts';
import { loadKubeConfig } from './kubeconfig.ts';
import type { Colors } from './output.ts';
import type { LifecycleResource } from './status-view.ts';

export interface GraphCheckFlags extends CrdFinderFlags {
  namespace?: string;
  export?: string;
  json?: boolean;
}

/**
 * What NEW does to a resource. `ok`: it stays or migrates and can go on toward its desired state;
 * `stranded`: it stalls with no node to be on (the check fails); `unreachable`: it migrates, but its
 * desired state cannot be reached from where it lands; `waits`: its running action lost its node or
 * its action, it migrates once the action ends; `invalid`: its spec or status cannot be read, on any revision.
 */
export type CheckOutcome = 'ok' | 'stranded' | 'unreachable' | 'waits' | 'invalid';
const CHECK_OUTCOMES: readonly CheckOutcome[] = ['ok', 'stranded', 'unreachable', 'waits', 'invalid'];

export interface ResourceCheck {
  namespace: string;
  name: string;
  /** status.graphRevision; null when none is recorded (no status yet, or an okt without revisions wrote it). */
  revision: string | null;
  /** status.state; null when no operator has written a status yet. */
  state: string | null;
  /** spec.desiredState as written (it may be a former name); null when the spec cannot be read. */
  desired: string | null;
  outcome: CheckOutcome;
  /** What happens, in words: `renamed Running -> Serving`, or why not. */
  detail: string;
  /** predictMigration's answer for NEW; absent for an invalid resource. */
  prediction?: MigrationPrediction;
  /**
   * What its objects (status.objects) do under NEW once it stands where the migration puts it; absent
   * when it has none and NEW makes none, or it is invalid. One that has not migrated (kept on its
   * revision, waiting for its action, stranded) keeps them as they are until it does.
   */
  objects?: ObjectsOutlook;
}

export interface CrdCheck {
  name: string;
  /** Its okt.dev/graph-revision annotation; null when it has none. */
  revision: string | null;
  /** Names NEW takes in spec.desiredState that the CRD's enum refuses. */
  missingDesiredStates: string[];
  /** It must be applied again from NEW: another revision, or names missing. */
  reapply: boolean;
  /** The command that does it. */
  command: string;
}

export interface GraphCheck {
  graph: string;
  revision: string;
  /** The namespace checked; null: all of them. */
  namespace: string | null;
  crd: CrdCheck;
  /** By namespace, then name. */
  resources: ResourceCheck[];
  counts: Record<CheckOutcome, number>;
}

/** Finds the CRD of NEW in the cluster KUBECONFIG names, lists its resources and checks NEW against them. */
export async function checkAgainstCluster(loaded: LoadedGraph, flags: GraphCheckFlags): Promise<GraphCheck> {
  const { graph } = loaded;
  const kc = loadKubeConfig();
  const crd = await findCrd(kc, flags, {
    wanted: `annotation ${GRAPH_ANNOTATION}=${graph.name}`,
    matches: (candidate) => candidate.metadata?.annotations?.[GRAPH_ANNOTATION] === graph.name,
    ambiguous: { subject: `graph "${graph.name}"`, choose: 'Say which CRD with --kind/--group or --crd-name.' },
  });
  const named = crd.metadata?.annotations?.[GRAPH_ANNOTATION];
  if (named !== undefined && named !== graph.name) {
    throw new CliError(EXIT.usage, `CRD ${crd.metadata?.name} is the CRD of graph "${named}", not of "${graph.name}"`, 'Name the CRD of this graph with --kind/--group or --crd-name.');
  }
  const resources = await listResources(kc, crd, flags.namespace);
  return checkGraph({ graph, file: loaded.file, exportFlag: flags.export, crd, resources, namespace: flags.namespace });
}

/** NEW checked against a CRD and its resources: a pure function of what was read. */
export function checkGraph(input: {
  graph: Graph;
  /** NEW's file and --export, for the command that applies its CRD. */
  file: string;
  exportFlag: string | undefined;
  crd: V1CustomResourceDefinition;
  resources: readonly LifecycleResource[];
  namespace: string | undefined;
}): GraphCheck {
  const { graph } = input;
  // The operator's model: a planner per revision, its tables built once for all the resources.
  const model = createLifecycleModel(graph);
  const resources = input.resources
    .map((resource) => checkResource(model, resource))
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
  const counts = Object.fromEntries(CHECK_OUTCOMES.map((outcome) => [outcome, resources.filter((r) => r.outcome === outcome).length])) as Record<CheckOutcome, number>;
  return {
    graph: graph.name,
    revision: graph.revision,
    namespace: input.namespace ?? null,
    crd: checkCrd(graph, input.crd, crdCommand(input.file, input.exportFlag, input.crd)),
    resources,
    counts,
  };
}

function checkResource(model: LifecycleModel, resource: LifecycleResource): ResourceCheck {
  const { graph } = model;
  const { name, namespace = 'default', annotations } = resource.metadata;
  // Read as the operator reads them: what it cannot parse stalls the resource whatever the revision.
  const spec = lifecycleSpecSchema.safeParse(resource.spec ?? {});
  const status = parseStatus(resource.status, resource.metadata.uid ?? '');
  const recorded = status !== undefined && !('invalid' in status) ? status : undefined;
  const facts = { namespace, name, revision: recorded?.graphRevision ?? null, state: recorded?.state ?? null, desired: spec.success ? spec.data.desiredState : null };
  if (!spec.success) return { ...facts, outcome: 'invalid', detail: describeIssues('spec', spec.error) };
  if (status !== undefined && 'invalid' in status) return { ...facts, outcome: 'invalid', detail: status.invalid };
  const at = recordedPosition(graph, recorded, spec.data, { deleting: resource.metadata.deletionTimestamp !== undefined, migrateRequested: annotations?.[MIGRATE_ANNOTATION] === 'true' });
  const prediction = predictMigration(graph, model.planner, at);
  if (recorded === undefined && prediction.kind === 'current') return { ...facts, outcome: 'ok', detail: `no status yet: starts at ${graph.entry}`, prediction };
  const objects = recorded === undefined ? undefined : objectsUnder(model, name, recorded, prediction);
  return { ...facts, ...verdict(model, at, prediction), prediction, ...(objects === undefined ? {} : { objects }) };
}

/**
 * What the operator on NEW does with the CR's objects: on this revision or once migrated, those of
 * the node it stands at (a waiting CR's once its action ended and it moved); kept and stranded ones
 * are left as they are.
 */
function objectsUnder(model: LifecycleModel, name: string, status: LifecycleStatus, prediction: MigrationPrediction): ObjectsOutlook | undefined {
  const inventory: readonly InventoryEntry[] = status.objects ?? [];
  const { graph } = model;
  if (inventory.length === 0 && graph.objects.length === 0) return undefined;
  switch (prediction.kind) {
    case 'current':
    case 'migrates':
    case 'waits':
      return objectsOutlook(graph, name, landing(graph, status.state, prediction), inventory);
    case 'stays':
    case 'stranded':
      return { kept: inventory, pruned: [], made: [] };
  }
}

function verdict(model: LifecycleModel, at: RecordedPosition, prediction: MigrationPrediction): { outcome: CheckOutcome; detail: string } {
  switch (prediction.kind) {
    case 'current':
      return { outcome: 'ok', detail: 'on this revision' };
    case 'stays': {
      // As the operator does: a resource the Manual policy keeps on an earlier revision is driven on that revision's graph.
      const there = servedMigration(model, at).migration;
      const stays = `stays on revision ${prediction.revision} (Manual)`;
      return there.kind === 'stranded' ? { outcome: 'stranded', detail: `${stays}, where ${there.reason}` } : { outcome: 'ok', detail: stays };
    }
    case 'stranded':
    case 'waits':
      return { outcome: prediction.kind, detail: prediction.reason };
    case 'migrates': {
      const parts = [describeLanding(at.state, prediction.state)];
      if (prediction.operation !== undefined) parts.push(`its running action goes on as the action of ${prediction.operation.to}`);
      if (prediction.unreachable !== undefined) return { outcome: 'unreachable', detail: [...parts, prediction.unreachable].join('; ') };
      return { outcome: 'ok', detail: parts.join('; ') };
    }
  }
}

function describeLanding(state: string, fate: Extract<NodeFate, { node: string }>): string {
  switch (fate.kind) {
    case 'kept':
      return `migrates, ${state} kept`;
    case 'renamed':
      return `renamed ${state} -> ${fate.node}`;
    case 'moved':
      return `moves ${state} -> ${fate.node} by a transition`;
  }
}

function checkCrd(graph: Graph, crd: V1CustomResourceDefinition, command: string): CrdCheck {
  const revision = crd.metadata?.annotations?.[GRAPH_REVISION_ANNOTATION] ?? null;
  const enums = crd.spec.versions.filter((v) => v.served).map((v) => v.schema?.openAPIV3Schema?.properties?.spec?.properties?.desiredState?._enum);
  // A version whose schema lists no names accepts any.
  const missing = desiredStateNames(graph).filter((name) => enums.some((names) => names !== undefined && !names.includes(name)));
  return { name: crd.metadata?.name ?? '', revision, missingDesiredStates: missing, reapply: revision !== graph.revision || missing.length > 0, command };
}

/** `okt crd NEW … | kubectl apply -f -` with the CRD's own names and status format, so that applying it changes nothing else. */
function crdCommand(file: string, exportFlag: string | undefined, crd: V1CustomResourceDefinition): string {
  const { group, names } = crd.spec;
  const words = ['okt', 'crd', file, ...(exportFlag === undefined ? [] : ['--export', exportFlag])];
  words.push('--group', group, '--version', servedVersion(crd), '--kind', names.kind);
  if (names.plural !== `${names.kind.toLowerCase()}s`) words.push('--plural', names.plural);
  if (names.shortNames?.length) words.push('--short-names', names.shortNames.join(','));
  const format = crdStatusFormat(crd);
  if (format !== DEFAULT_STATUS_FORMAT) words.push('--status-format', format);
  return `${words.map(shellWord).join(' ')} | kubectl apply -f -`;
}

/** The status format the CRD records (a CRD of another writer may record one okt does not know: said, naming the CRD). */
function crdStatusFormat(crd: V1CustomResourceDefinition): StatusFormat {
  try {
    return statusFormatOf(crd.metadata?.annotations);
  } catch (error) {
    throw new CliError(EXIT.usage, `CRD ${crd.metadata?.name}: ${(error as Error).message}`, 'Apply its CRD again with okt crd, or correct the annotation.');
  }
}

function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The human form: a headline, one line per resource (`namespace/name  revision  state -> outcome`), the counts, the CRD. */
export function formatGraphCheck(check: GraphCheck, c: Colors): string {
  const where = check.namespace === null ? 'in all namespaces' : `in namespace ${check.namespace}`;
  const lines = [`${c.bold(`graph "${check.graph}"`)} revision ${check.revision} against CRD ${check.crd.name} (revision ${check.crd.revision ?? 'unrecorded'}), ${where}`];
  const paint: Record<CheckOutcome, (text: string) => string> = { ok: c.green, stranded: c.red, unreachable: c.yellow, waits: c.yellow, invalid: c.yellow };
  const rows = check.resources.map((r) => [`${r.namespace}/${r.name}`, r.revision ?? '-', `${r.state ?? '-'} -> ${paint[r.outcome](r.outcome)}: ${r.detail}`]);
  const widths = [0, 1].map((col) => Math.max(0, ...rows.map((row) => row[col]!.length)));
  check.resources.forEach((r, i) => {
    const [resource, revision, outcome] = rows[i]!;
    lines.push(`  ${resource!.padEnd(widths[0]!)}  ${revision!.padEnd(widths[1]!)}  ${outcome}`);
    if (r.objects !== undefined) lines.push(`    objects: ${describeOutlook(r.objects, r.prediction?.kind === 'migrates' || r.prediction?.kind === 'waits', c)}`);
  });
  const total = check.resources.length;
  const counts = CHECK_OUTCOMES.filter((outcome) => outcome === 'ok' || check.counts[outcome] > 0).map((outcome) => paint[outcome](`${check.counts[outcome]} ${outcome}`));
  lines.push(total === 0 ? 'no resources' : `${total === 1 ? '1 resource' : `${total} resources`}: ${counts.join(', ')}`);
  const { crd } = check;
  if (crd.reapply) {
    const why = [
      crd.revision === check.revision ? '' : `is at revision ${crd.revision ?? '(none)'}`,
      crd.missingDesiredStates.length === 0 ? '' : `its desiredState lacks ${crd.missingDesiredStates.join(', ')}`,
    ].filter((reason) => reason !== '');
    lines.push(c.yellow(`CRD ${crd.name} ${why.join(', and ')}: apply it from this graph:`), `  ${crd.command}`);
  } else {
    lines.push(`CRD ${crd.name} is up to date`);
  }
  return `${lines.join('\n')}\n`;
}

/** `kept Service web; pruned ConfigMap web-stop; made ConfigMap web-drain`, or `none`. */
function describeOutlook(outlook: ObjectsOutlook, migrating: boolean, c: Colors): string {
  const list = (entries: readonly InventoryEntry[]) => entries.map((e) => `${e.kind} ${e.name}`).join(', ');
  const parts: string[] = [];
  if (outlook.kept.length > 0) parts.push(`kept ${list(outlook.kept)}${migrating ? ' (applied again only if its render changed)' : ''}`);
  if (outlook.made.length > 0) parts.push(c.green(`made ${list(outlook.made)}`));
  const disowned = outlook.pruned.filter((e) => e.deletion === 'Keep');
  const deleted = outlook.pruned.filter((e) => e.deletion !== 'Keep');
  if (deleted.length > 0) parts.push(c.red(`pruned ${list(deleted)}`));
  if (disowned.length > 0) parts.push(c.yellow(`disowned (kept) ${list(disowned)}`));
  return parts.length > 0 ? parts.join('; ') : 'none';
}

/** Stranded resources fail the check; the rest are printed as warnings. */
export function graphCheckExitCode(check: GraphCheck): ExitCode {
  return check.counts.stranded > 0 ? EXIT.failed : EXIT.ok;
}
