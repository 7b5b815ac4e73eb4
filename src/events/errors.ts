import type { z } from 'zod';

/** A lifecycle event (or what should be one) that is not valid: `field` names the attribute or data field at fault. */
export class LifecycleEventError extends Error {
  readonly field: string;

  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`);
    this.name = 'LifecycleEventError';
    this.field = field;
  }
}

/** The first problem zod found, its path under `root` as the field (`data.from: Invalid input...`). */
export function fromZodError(root: string, error: z.ZodError): LifecycleEventError {
  const issue = error.issues[0]!;
  // A bad record key hides its reason one level down.
  const reason = issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message;
  return new LifecycleEventError([root, ...issue.path.map(String)].join('.'), reason);
}
