/**
 * The lifecycle CloudEvent types: reverse-DNS, versioned. These names are an API: consumers match on
 * them, so a change of meaning gets a new version suffix, never an edit.
 */
export const LIFECYCLE_EVENT_TYPES = {
  transition: 'dev.okt.lifecycle.transition.v1',
  actionStarted: 'dev.okt.lifecycle.action.started.v1',
  actionSucceeded: 'dev.okt.lifecycle.action.succeeded.v1',
  actionFailed: 'dev.okt.lifecycle.action.failed.v1',
  converged: 'dev.okt.lifecycle.converged.v1',
  stalled: 'dev.okt.lifecycle.stalled.v1',
} as const;

export type LifecycleEventType = (typeof LIFECYCLE_EVENT_TYPES)[keyof typeof LIFECYCLE_EVENT_TYPES];

/** The `data` of every lifecycle event: where the resource was, went, and why. */
export interface LifecycleEventData {
  graph: string;
  /** The transition number this event belongs to (the count of transitions taken so far). */
  transition: number;
  from: string;
  to: string;
  desired: string;
  /** The collected events the decision was offered (node names or DefaultState). */
  events: string[];
  /** The traversed path, rendered the OKT way: `>Start>Running`. */
  path: string;
  generation: number;
  operation?: { id: string; node: string; phase: string; message?: string };
  reason?: string;
  message?: string;
}
