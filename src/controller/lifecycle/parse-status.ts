// What the step may see of a CR's status: only what okt's schema parses (fields okt does not know are
// dropped here and kept on the server by the reconciler's patches: src/kube/unknown-status-fields.ts).
import { conditionSchema } from '../../kube/conditions.ts';
import { describeIssues, lifecycleStatusSchema, type LifecycleStatus } from '../../kube/lifecycle-resource.ts';
import type { InvalidStatus } from './step.ts';
import { expandStatus } from './status/compact-format.ts';

/**
 * The parsed status of the CR of `uid` (one stored compact or packed read as its lean status);
 * undefined on first sight; InvalidStatus naming the field that does not parse.
 */
export function parseStatus(stored: unknown, uid: string): LifecycleStatus | InvalidStatus | undefined {
  return parseReadBackStatus(expandStatus(stored, uid));
}

/** parseStatus of a status already read back (expandStatus): a look reads it once for its decision and its write. */
export function parseReadBackStatus(raw: unknown): LifecycleStatus | InvalidStatus | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw === 'object' && Object.keys(raw).every((key) => key === 'conditions' || !(key in lifecycleStatusSchema.shape))) {
    // Only conditions (an earlier InvalidSpec write) and other writers' fields, no state yet: a first
    // sight. A status that lost its state but kept the rest is not: it is invalid, and the operator does
    // not start over at the entry.
    return undefined;
  }
  const parsed = lifecycleStatusSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const invalid: InvalidStatus = { invalid: describeIssues('status', parsed.error) };
  const conditions = conditionsOf(raw);
  if (conditions.length > 0) invalid.conditions = conditions;
  return invalid;
}

/** The conditions of a status of the CR of `uid` (in any format), or none when they do not parse. */
export function parseConditions(stored: unknown, uid: string): NonNullable<InvalidStatus['conditions']> {
  return conditionsOf(expandStatus(stored, uid));
}

function conditionsOf(raw: unknown): NonNullable<InvalidStatus['conditions']> {
  const parsed = conditionSchema.array().safeParse((raw as { conditions?: unknown } | undefined)?.conditions ?? []);
  return parsed.success ? parsed.data : [];
}
