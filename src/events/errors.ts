/** A lifecycle event (or what should be one) that is not valid: `field` names the attribute or data field at fault. */
export class LifecycleEventError extends Error {
  readonly field: string;

  constructor(field: string, reason: string) {
    super(`${field}: ${reason}`);
    this.name = 'LifecycleEventError';
    this.field = field;
  }
}
