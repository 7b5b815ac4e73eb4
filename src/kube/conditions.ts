import { z } from 'zod';

/** metav1.Condition, with the API conventions' validation (the server checks only what the CRD schema says). */
export const CONDITION_REASON_PATTERN = '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$';
export const conditionStatusSchema = z.enum(['True', 'False', 'Unknown']);
export const conditionSchema = z.object({
  type: z.string().min(1).max(316),
  status: conditionStatusSchema,
  reason: z.string().min(1).max(1024).regex(new RegExp(CONDITION_REASON_PATTERN)),
  message: z.string().max(32768),
  lastTransitionTime: z.iso.datetime(),
  observedGeneration: z.number().int().nonnegative().optional(),
});
export type Condition = z.infer<typeof conditionSchema>;
export type ConditionStatus = z.infer<typeof conditionStatusSchema>;

/** What a caller says about a condition; lastTransitionTime is derived. */
export type ConditionUpdate = Omit<Condition, 'lastTransitionTime'>;

export function findCondition(conditions: readonly Condition[], type: string): Condition | undefined {
  return conditions.find((c) => c.type === type);
}

export function isConditionTrue(conditions: readonly Condition[], type: string): boolean {
  return findCondition(conditions, type)?.status === 'True';
}

/**
 * Sets one condition, keeping the list's order. lastTransitionTime changes only when the status
 * changes (the API conventions), so re-asserting the same status with a new reason keeps the time.
 */
export function setCondition(conditions: readonly Condition[], update: ConditionUpdate, now: string): Condition[] {
  const previous = findCondition(conditions, update.type);
  const lastTransitionTime =
    previous !== undefined && previous.status === update.status ? previous.lastTransitionTime : now;
  const next: Condition = { ...update, lastTransitionTime };
  if (previous === undefined) return [...conditions, next];
  return conditions.map((c) => (c === previous ? next : c));
}

/** Whether two condition lists say the same thing (order and times included). */
export function sameConditions(a: readonly Condition[], b: readonly Condition[]): boolean {
  return a.length === b.length && a.every((c, i) => sameCondition(c, b[i]));
}

function sameCondition(a: Condition, b: Condition | undefined): boolean {
  return (
    b !== undefined &&
    a.type === b.type &&
    a.status === b.status &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.lastTransitionTime === b.lastTransitionTime &&
    a.observedGeneration === b.observedGeneration
  );
}
