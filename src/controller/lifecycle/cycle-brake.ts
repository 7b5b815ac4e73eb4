// The cycle brake: a CR its actions' events drive round a cycle, with no spec edit, slows down instead
// of turning at API-server speed (docs/operator.md#the-cycle-brake). Its state is a few fields of
// status.cycleBrake, so it survives an operator restart and a change of leader; a status without them
// (an earlier okt's) has no brake.
import { CYCLE_BRAKE_CONDITION } from '../../graph/index.ts';
import type { CycleBrakeStatus, LifecycleStatus, OperationStatus } from '../../kube/lifecycle-resource.ts';

export { CYCLE_BRAKE_CONDITION };

/** Turns a CR takes at full speed after a spec edit: a failed action's recovery loop may run twice. */
export const FREE_TURNS = 4;
/** The hold of the first braked turn; each further turn doubles it, up to MAX_HOLD_MS. */
export const FIRST_HOLD_MS = 1_000;
/** The longest hold: a CR braked to the full turns about once a minute. */
export const MAX_HOLD_MS = 60_000;
/** A CR that has not turned for this long is at rest: its next turn counts from 1 again. Longer than any hold, so a braked CR never rests. */
export const REST_MS = 2 * MAX_HOLD_MS;

/** How long turn `turn` (counted from 1 since the last spec edit) waits after the turn before it. */
export function turnHoldMs(turn: number): number {
  return turn <= FREE_TURNS ? 0 : Math.min(FIRST_HOLD_MS * 2 ** (turn - FREE_TURNS - 1), MAX_HOLD_MS);
}

/**
 * The most turns a CR makes in any `windowMs` shorter than REST_MS without a spec edit: the free ones,
 * the next (its transition is taken at once, its action waits), and one more for each hold that fits
 * in the window (each turn's action waits its hold after the one before; the count starts again only
 * after a rest, which does not fit in the window).
 */
export function maxTurnsWithin(windowMs: number): number {
  let turns = FREE_TURNS + 1;
  for (let waited = turnHoldMs(turns); waited <= windowMs; waited += turnHoldMs(turns)) turns += 1;
  return turns;
}

/** A transition that turns a cycle: it enters a node the CR was on among its recent path. */
export interface CycleTurn {
  /** The brake's state after this turn. */
  readonly brake: CycleBrakeStatus;
  /** The cycle it closed, as entered: `[Provisioning, Failed, Provisioning]`. */
  readonly cycle: readonly string[];
  /** How long the entered node's action waits (0: it starts at once). */
  readonly holdMs: number;
  /** This is the first hold since the last spec edit: the CR says so in one CloudEvent. */
  readonly engages: boolean;
}

/**
 * Whether entering `next` turns a cycle, and how the brake stands then. Only transitions taken on
 * events count (a deadline's timer turns at its own pace; a migration is none of the CR's doing).
 * A turn waits its hold after the turn before it, so a cycle that turns slower than that never waits.
 * Only an action can wait (`hasAction`): a turn into the entry node is counted and timed, not held.
 */
export function cycleTurn(status: LifecycleStatus, next: string, hasAction: boolean, generation: number, now: string): CycleTurn | undefined {
  const at = status.path.lastIndexOf(next);
  if (at === -1) return undefined;
  const prior = activeBrake(status, generation, now);
  const turns = (prior?.turns ?? 0) + 1;
  const nowMs = Date.parse(now);
  const startsAt = prior === undefined ? nowMs : Math.max(nowMs, Date.parse(prior.at) + turnHoldMs(turns));
  const holdMs = hasAction ? startsAt - nowMs : 0;
  const held = (prior?.held ?? 0) + (holdMs > 0 ? 1 : 0);
  const brake: CycleBrakeStatus = { generation, turns, at: new Date(startsAt).toISOString() };
  if (held > 0) brake.held = held;
  return { brake, cycle: [...status.path.slice(at), next], holdMs, engages: held === 1 && holdMs > 0 };
}

/** What the CycleBrake condition and the brake's CloudEvent say of a held turn. */
export function brakeMessage(turn: CycleTurn, node: string): string {
  const { brake } = turn;
  return `the cycle ${turn.cycle.join(' > ')} turned without a spec edit: ${brake.turns} turns since generation ${brake.generation}, ${brake.held ?? 0} of them held; the action of ${node} starts at ${brake.at}, ${Math.ceil(turn.holdMs / 1000)} s after it was entered (each turn waits twice as long as the one before, up to ${MAX_HOLD_MS / 1000} s); edit the spec or set spec.retry to release the brake`;
}

/** How long the brake still holds a committed operation's start (0: start it now). */
export function heldForMs(operation: OperationStatus, now: string): number {
  return operation.notBefore === undefined ? 0 : Math.max(0, Date.parse(operation.notBefore) - Date.parse(now));
}

/** The brake as it stands now: released by a spec edit (spec.retry is one) or by a rest. */
function activeBrake(status: LifecycleStatus, generation: number, now: string): CycleBrakeStatus | undefined {
  const brake = status.cycleBrake;
  if (brake === undefined || brake.generation !== generation || Date.parse(now) - Date.parse(brake.at) >= REST_MS) return undefined;
  return brake;
}

/** `status` with its brake gone once released (a spec edit, a rest): a held action starts at once, the condition goes. */
export function releasedBrake(status: LifecycleStatus, generation: number, now: string): LifecycleStatus {
  if (status.cycleBrake === undefined || activeBrake(status, generation, now) !== undefined) return status;
  const { cycleBrake: _released, ...released } = status;
  released.conditions = status.conditions.filter((c) => c.type !== CYCLE_BRAKE_CONDITION);
  if (status.operation?.notBefore !== undefined) {
    const { notBefore: _notBefore, ...operation } = status.operation;
    released.operation = operation;
  }
  return released;
}
