// The conditions okt writes: each judged anew at every step (judgedAt), the node conditions, the
// status a resource starts with, and the conditions alone when its spec or status cannot be read.
import { nodeConditionType, type Graph } from '../../../graph/index.ts';
import { renderPath } from '../../../machine/index.ts';
import { sameConditions, setCondition, type Condition } from '../../../kube/conditions.ts';
import type { LifecycleStatus } from '../../../kube/lifecycle-resource.ts';
import { DEFAULT_STATUS_FORMAT, type StatusFormat } from '../../../kube/status-format.ts';
import { OKT_CONDITION_TYPES, READY, REASONS, RECONCILING, STALLED } from '../reasons.ts';
import type { StepEffects } from '../step-types.ts';
import { inStatusFormat } from './lean-format.ts';

/** The condition reasons of a node's condition: what tells okt's node conditions from others'. */
export const NODE_CONDITION_REASONS: ReadonlySet<string> = new Set([REASONS.entered, REASONS.left]);

/**
 * `condition` as a write judged at `generation` says it: each of okt's conditions is judged anew by every
 * step, so it carries the generation that step read (kubectl wait ignores a condition of an older one);
 * its status and lastTransitionTime stay. Other writers' conditions keep what they said.
 */
export function judgedAt(condition: Condition, generation: number): Condition {
  return isOktCondition(condition) && condition.observedGeneration !== generation ? { ...condition, observedGeneration: generation } : condition;
}

/** One of okt's conditions (its own types, and its node conditions), not another writer's. */
export function isOktCondition(condition: Pick<Condition, 'type' | 'reason'>): boolean {
  return OKT_CONDITION_TYPES.has(condition.type) || NODE_CONDITION_REASONS.has(condition.reason);
}

export function initialStatus(graph: Graph, generation: number, now: string): LifecycleStatus {
  const entry = graph.entry;
  return {
    state: entry,
    graphRevision: graph.revision,
    observedGeneration: generation,
    transition: 0,
    sequence: 0,
    path: [entry],
    pathSummary: renderPath([entry]),
    conditions: setCondition([], { type: nodeConditionType(entry), status: 'True', reason: REASONS.entered, message: `${entry} is the entry node`, observedGeneration: generation }, now),
  };
}

/**
 * A spec or status the operator cannot read: only conditions say why (the rest of status is left for
 * a person to repair), written once.
 */
export function unreadable(before: readonly Condition[], reason: typeof REASONS.invalidStatus | typeof REASONS.invalidSpec, problem: string, generation: number, now: string, format: StatusFormat = DEFAULT_STATUS_FORMAT): StepEffects {
  let conditions = [...before];
  const what = reason === REASONS.invalidSpec ? 'spec' : 'status';
  const message = `${what} cannot be read: ${problem}; repair it to resume`;
  for (const [type, value] of [[READY, 'False'], [RECONCILING, 'False'], [STALLED, 'True']] as const) {
    conditions = setCondition(conditions, { type, status: value, reason, message, observedGeneration: generation }, now);
  }
  conditions = inStatusFormat({ conditions }, format).conditions;
  return sameConditions(before, conditions) ? {} : { status: { conditions } };
}
