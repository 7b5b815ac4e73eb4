// The conditions okt keeps besides the node conditions, and the reasons it gives in conditions and CloudEvents.
import { OWN_CONDITION_TYPES } from '../../graph/index.ts';

export const READY = 'Ready';
export const RECONCILING = 'Reconciling';
export const STALLED = 'Stalled';
/**
 * Every condition type okt keeps besides the node conditions (a new one joins the list in src/graph,
 * where a node of the same name gets a prefixed condition: step() judges each anew at every write).
 */
export const OKT_CONDITION_TYPES: ReadonlySet<string> = new Set(OWN_CONDITION_TYPES);

/** Why a resource is not Ready; each reason is also a CloudEvent `reason` and a condition reason. */
export const REASONS = {
  reached: 'DesiredStateReached',
  progressing: 'Progressing',
  actionRunning: 'ActionRunning',
  actionRetrying: 'ActionRetrying',
  unreachable: 'UnreachableState',
  unknown: 'UnknownState',
  sidecarUnavailable: 'SidecarUnavailable',
  sidecarBusy: 'SidecarBusy',
  sidecarRefused: 'SidecarRefused',
  sidecarNotAllowed: 'SidecarNotAllowed',
  sidecarSecretUnreadable: 'SidecarSecretUnreadable',
  /** spec.sidecar.tokenSecretRef names a Secret not made to be a sidecar token (not of type okt.dev/sidecar-token). */
  sidecarSecretWrongType: 'SidecarSecretWrongType',
  actionFailed: 'ActionFailed',
  /** Not a condition: the reason of an operation cancelled because spec.desiredState moved away. */
  desiredStateChanged: 'DesiredStateChanged',
  interrupted: 'Interrupted',
  deletionAbandoned: 'DeletionAbandoned',
  invalidStatus: 'InvalidStatus',
  invalidSpec: 'InvalidSpec',
  paused: 'Paused',
  backpressure: 'EventsBackpressure',
  migrated: 'Migrated',
  entered: 'Entered',
  left: 'Left',
  deadlineExceeded: 'DeadlineExceeded',
  /** spec.params do not fit the schema of the node whose action would start. */
  invalidParams: 'InvalidParams',
  /** The reason of an action started again because its node's parameters changed (onParamsChange: Rerun). */
  paramsChanged: 'ParamsChanged',
  /** The node's action waits for its objects to be ready (the message names the first that is not, and why). */
  objectsNotReady: 'ObjectsNotReady',
  /** Condition ObjectsReady: every object of the node is ready, its action starts. */
  objectsReady: 'Ready',
  /** The reason of an operation never started because an object of its node failed (a Job failed, a Deployment past its progress deadline). */
  objectFailed: 'ObjectFailed',
  /** The cycle brake holds the action of a node the CR re-entered without a spec edit (condition CycleBrake). */
  cycleBraked: 'CycleBraked',
} as const;
