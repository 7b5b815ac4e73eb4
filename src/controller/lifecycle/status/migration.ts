// The migration rewrite: the status of an earlier revision of the graph in the words of the one the
// resource is driven on, written with whatever the step does next.
import { fateOf, nodeConditionType } from '../../../graph/index.ts';
import { renderPath } from '../../../machine/index.ts';
import type { MigrationPrediction } from '../../../plan/index.ts';
import { operationSummary } from '../../../events/status-events.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../../events/types.ts';
import { REASONS } from '../reasons.ts';
import { NODE_CONDITION_REASONS } from './conditions.ts';
import type { StatusDraft } from './draft.ts';

/**
 * Rewrites the status of an earlier revision in this one's words, in the same write as whatever this
 * step does next: the revision, a renamed state, the running action's renamed node (its operation id
 * kept), the path and the node conditions. A removed node's resource keeps its state here: the
 * transition that follows takes it to the node its CRs go to.
 */
export function migrate(work: StatusDraft, migration: Extract<MigrationPrediction, { kind: 'migrates' }>): void {
  const s = work.status;
  const graph = work.graph;
  const from = { revision: work.stored.graphRevision, state: s.state };
  if (migration.state.kind !== 'moved') s.state = migration.state.node;
  s.graphRevision = graph.revision;
  const renamed = (name: string): string => {
    const fate = fateOf(graph, name);
    return fate.kind === 'kept' || fate.kind === 'renamed' ? fate.node : name;
  };
  s.path = s.path.map(renamed);
  s.pathSummary = renderPath(s.path);
  if (s.lastTransition !== undefined) s.lastTransition = { ...s.lastTransition, from: renamed(s.lastTransition.from), to: renamed(s.lastTransition.to) };
  if (s.operation !== undefined) {
    s.operation = { ...s.operation, node: renamed(s.operation.node) };
    if (s.operation.desiredAtStart !== undefined) s.operation.desiredAtStart = renamed(s.operation.desiredAtStart);
  }
  // The condition of the node it is on follows the rename; those of nodes it left go.
  const kept = nodeConditionType(from.state);
  const as = nodeConditionType(migration.state.kind === 'moved' ? from.state : s.state);
  s.conditions = s.conditions.flatMap((c) => (!NODE_CONDITION_REASONS.has(c.reason) ? [c] : c.type === kept ? [{ ...c, type: as }] : []));
  const to = migration.state.node;
  const operation = migration.operation === undefined || s.operation === undefined ? {} : { operation: { ...operationSummary(s.operation), formerNode: migration.operation.from } };
  work.emit(LIFECYCLE_EVENT_TYPES.migrated, to, {
    ...work.data(from.state, to, []),
    reason: REASONS.migrated,
    message: `migrated from revision ${from.revision ?? '(unrecorded)'} at ${from.state} to revision ${graph.revision} at ${to}${migration.state.kind === 'moved' ? ` (${from.state} was removed; its CRs go to ${to})` : ''}`,
    migration: { fromRevision: from.revision ?? null, toRevision: graph.revision, fromState: from.state, toState: to, kind: migration.state.kind },
    ...operation,
  });
}
