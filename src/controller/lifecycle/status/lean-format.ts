// The lean status format: what a reader can tell without it is not written. kstatus reads an absent
// Reconciling or Stalled as False, a node left is lastTransition.from, and a Succeeded operation's
// epoch, start and desired node at start only mattered while it ran. Smaller objects are cheaper for
// the API server on every write (its cost grows with the object), and for every cache of the CRs.
import type { Condition } from '../../../kube/conditions.ts';
import type { LifecycleStatus, OperationStatus } from '../../../kube/lifecycle-resource.ts';
import type { StatusFormat } from '../../../kube/status-format.ts';
import { REASONS, RECONCILING, STALLED } from '../reasons.ts';

/** `status` as `format` writes it (the full format is okt's status as computed). */
export function inStatusFormat<S extends Pick<LifecycleStatus, 'conditions'> & { operation?: OperationStatus }>(status: S, format: StatusFormat): S {
  if (format === 'full') return status;
  const lean: S = { ...status, conditions: leanConditions(status.conditions) };
  if (status.operation !== undefined) lean.operation = leanOperation(status.operation);
  return lean;
}

function leanConditions(conditions: readonly Condition[]): Condition[] {
  return conditions.filter((c) => c.status !== 'False' || (c.type !== RECONCILING && c.type !== STALLED && c.reason !== REASONS.left));
}

function leanOperation(operation: OperationStatus): OperationStatus {
  if (operation.phase !== 'Succeeded') return operation;
  const { epoch: _epoch, startedAt: _startedAt, desiredAtStart: _desiredAtStart, events, ...kept } = operation;
  return events === undefined || events.length === 0 ? kept : { ...kept, events };
}
