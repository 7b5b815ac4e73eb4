// The graph a resource is driven on: the operator's model of its graph (with the planner), the
// earlier revisions it still serves, and where a resource stands for the migration prediction.
import { fateOf, type Graph } from '../../graph/index.ts';
import { createPlanner, predictMigration, type MigrationPrediction, type RecordedPosition } from '../../plan/index.ts';
import type { LifecycleSpec, LifecycleStatus } from '../../kube/lifecycle-resource.ts';
import { isTerminal } from '../../sidecar-client/index.ts';
import type { LifecycleModel } from './step-types.ts';

/** The annotation that moves a resource to the operator's graph revision under the Manual migration policy. */
export const MIGRATE_ANNOTATION = 'okt.dev/migrate';

/** The model of a graph and of every earlier revision it declares. */
export function createLifecycleModel(graph: Graph): LifecycleModel {
  const earlier = new Map(graph.previous.map((g): [string, LifecycleModel] => [g.revision, { graph: g, planner: createPlanner(g), earlier: new Map() }]));
  return { graph, planner: createPlanner(graph), earlier };
}

/**
 * Where a resource stands, for the migration prediction, read as the operator reads it (no status yet:
 * at the entry of `graph`'s revision, where the operator starts it).
 */
export function recordedPosition(graph: Graph, status: LifecycleStatus | undefined, spec: LifecycleSpec, how: { deleting: boolean; migrateRequested: boolean }): RecordedPosition {
  const operation = status?.operation;
  return {
    revision: status === undefined ? graph.revision : status.graphRevision,
    state: status?.state ?? graph.entry,
    // Deletion drives the resource to a leaf whatever spec.desiredState says: that name does not have to fit.
    desired: how.deleting && status !== undefined ? status.state : spec.desiredState,
    runningAction: operation !== undefined && !isTerminal(operation.phase) ? operation.node : undefined,
    migrateRequested: how.migrateRequested,
  };
}

/**
 * What the operator's model does with a resource at `at`: the revision it is driven on (its own, when
 * the Manual policy keeps it on an earlier one) and the migration prediction there. `okt graph check`
 * asks the same.
 */
export function servedMigration(model: LifecycleModel, at: RecordedPosition): { model: LifecycleModel; migration: MigrationPrediction } {
  const migration = predictMigration(model.graph, model.planner, at);
  if (migration.kind !== 'stays') return { model, migration };
  const earlier = modelOfRevision(model, migration.revision) ?? model;
  return { model: earlier, migration: predictMigration(earlier.graph, earlier.planner, at) };
}

/** The model that drives a resource on `revision`: the operator's own (also for none recorded), or an earlier one it serves. */
export function modelOfRevision(model: LifecycleModel, revision: string | undefined): LifecycleModel | undefined {
  return revision === undefined || revision === model.graph.revision ? model : model.earlier.get(revision);
}

/**
 * The graph whose declarations make the objects of a resource at rest in `status`: that of the
 * revision it is on, when the operator serves it (its own, or an earlier one the Manual policy keeps
 * it on) and it has the resource's node. Undefined (a resource waiting to migrate, or stranded): its
 * objects are left as they are, neither applied nor pruned, until it migrates.
 */
export function objectsGraph(model: LifecycleModel, status: Pick<LifecycleStatus, 'graphRevision' | 'state'>): Graph | undefined {
  const graph = modelOfRevision(model, status.graphRevision)?.graph;
  return graph?.has(status.state) === true ? graph : undefined;
}

/** The node of `graph` the resource is on, or will be once its migration is done. */
export function landing(graph: Graph, state: string, migration: MigrationPrediction): string {
  if (migration.kind === 'migrates') return migration.state.node;
  const fate = fateOf(graph, state);
  return 'node' in fate ? fate.node : state;
}

