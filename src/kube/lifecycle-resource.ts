import { z } from 'zod';
import { PhaseSchema } from '../sidecar-client/protocol.ts';
import { conditionSchema } from './conditions.ts';

export { TERMINAL_PHASES } from '../sidecar-client/protocol.ts';

/** The finalizer through which deletion drives the application down to a leaf first. */
export const LIFECYCLE_FINALIZER = 'okt.dev/lifecycle';

/** How many entered nodes status.path keeps: the cache holds every CR, so this bounds memory. */
export const STATUS_PATH_LIMIT = 32;

/** An operation's phase in status is the one its sidecar reports. */
export type { Phase as OperationPhase } from '../sidecar-client/protocol.ts';

/**
 * The type a Secret named by spec.sidecar.tokenSecretRef must have. A Secret's type is fixed at its
 * creation (the API server refuses to change it), so only someone who may create Secrets makes one,
 * deliberately: an ordinary Secret (a database password) can never be sent as a sidecar token.
 */
export const SIDECAR_TOKEN_SECRET_TYPE = 'okt.dev/sidecar-token';

export const onLeafSchema = z.enum(['Delete', 'Keep']);

/**
 * The sidecar URLs a CR may name, as the CRD's `pattern` for spec.sidecar.url: what the WHATWG parser
 * (the operator's) reads as http or https (in any case, the slashes after the colon as it takes them)
 * with a host and no user info. The API server refuses any other, naming the field: okt never calls
 * one. No stricter than the operator: a 1.20 API server checks a CR's whole object on every write, its
 * status too, so a URL an earlier okt called but this refused would freeze that CR. Nor looser: the
 * operator stalls a stored CR (from an earlier CRD) with such a URL, SidecarNotAllowed. Kubernetes
 * matches `pattern` with Go's RE2; this means the same in RE2 and JavaScript (no `\s` nor `.`).
 */
export const SIDECAR_URL_PATTERN = String.raw`^[hH][tT][tT][pP][sS]?:[/\\]*[^/?#@\\]+([/?#\\]|$)`;

/**
 * spec of a lifecycle CR. desiredState is checked against the graph by the CRD's enum and again here;
 * sidecar.url by the CRD's SIDECAR_URL_PATTERN and again by the operator's sidecar policy.
 */
export const lifecycleSpecSchema = z.object({
  desiredState: z.string().min(1),
  sidecar: z
    .object({
      url: z.url(),
      tokenSecretRef: z.object({ name: z.string().min(1), key: z.string().min(1) }).optional(),
    })
    .optional(),
  paused: z.boolean().optional(),
  onLeaf: onLeafSchema.optional(),
  eventSink: z.url().optional(),
  /** A change of this value runs the current node's failed action again, under a new operation id. */
  retry: z.string().max(63).optional(),
  /** The parameters of the nodes' actions; the CRD gives this field the graph's schema (see paramsSchema). */
  params: z.record(z.string(), z.unknown()).optional(),
});
export type LifecycleSpec = z.infer<typeof lifecycleSpecSchema>;

/** The action of the current node: committed in status before it is started on the sidecar. */
export const operationStatusSchema = z.object({
  id: z.string().min(1),
  node: z.string().min(1),
  phase: PhaseSchema,
  message: z.string().optional(),
  events: z.array(z.string()).optional(),
  startedAt: z.iso.datetime().optional(),
  finishedAt: z.iso.datetime().optional(),
  /** Why it ended, as the sidecar says (Interrupted: the sidecar stopped or forgot it while it ran). */
  reason: z.string().optional(),
  /** The epoch of the sidecar that holds it: a sidecar with another epoch has forgotten it. */
  epoch: z.string().optional(),
  /** How many times it was started (a sidecar that forgot it restarts an idempotent action); absent: 1. */
  attempts: z.number().int().positive().optional(),
  /** Runs of this node's action before this one at this transition (failed, then retried); absent: 0. */
  retries: z.number().int().positive().optional(),
  /** spec.retry when it was started: a new value runs a failed action again. */
  retry: z.string().optional(),
  /** spec.desiredState (or the deletion's leaf) when its failure was recorded: another one moves the resource on. */
  desired: z.string().optional(),
  /** The node the resource was driven to when it was started: spec.desiredState naming yet another is a change of mind. */
  desiredAtStart: z.string().optional(),
  /** The node spec.desiredState moved to when its cancellation was asked (its node is cancellable on a change of mind). */
  cancelRequestedFor: z.string().optional(),
  /** The parameters it was started with (its node's and the graph's, defaults filled in), when the graph declares any. */
  params: z.record(z.string(), z.unknown()).optional(),
  /** `retries` of the first run under these parameters (a run for changed parameters): the retry policy counts runs from there. */
  paramsSince: z.number().int().positive().optional(),
  /** The cycle brake holds its start until then (absent: it starts when committed). */
  notBefore: z.iso.datetime().optional(),
});
export type OperationStatus = z.infer<typeof operationStatusSchema>;

export const lastTransitionSchema = z.object({
  from: z.string(),
  to: z.string(),
  events: z.array(z.string()),
  time: z.iso.datetime(),
  generation: z.number().int().nonnegative(),
});
export type LastTransition = z.infer<typeof lastTransitionSchema>;

/** A lifecycle event committed with the status write that caused it, kept until it is delivered. */
export const outboxEntrySchema = z.object({
  sequence: z.number().int().positive(),
  type: z.string().min(1),
  time: z.iso.datetime(),
  subject: z.string(),
  data: z.record(z.string(), z.unknown()),
});
export type OutboxEntry = z.infer<typeof outboxEntrySchema>;

/** The events of the status write that holds them, as what each adds to that status (src/events/status-events.ts). */
export const emittedEventsSchema = z.object({
  time: z.iso.datetime(),
  /** The node the resource was driven to when they were emitted (their data's `desired`). */
  desired: z.string().min(1),
  events: z
    .array(
      z.object({
        /** The event's type without `dev.okt.lifecycle.`. */
        type: z.string().min(1),
        /** Absent: the status's state. */
        subject: z.string().optional(),
        /** The fields of the event's data that the status does not say. */
        data: z.record(z.string(), z.unknown()).optional(),
      }),
    )
    .min(1),
});
export type EmittedEvents = z.infer<typeof emittedEventsSchema>;

/** The cycle brake (docs/operator.md#the-cycle-brake): absent, as in a status of an earlier okt, it has not turned since the last spec edit. */
export const cycleBrakeStatusSchema = z.object({
  /** The spec generation the turns are counted at: another one releases the brake. */
  generation: z.number().int().nonnegative(),
  /** Transitions into a node on the path (turns of a cycle) at that generation. */
  turns: z.number().int().positive(),
  /** When the last turn's action could start: the next turn waits its hold after it. */
  at: z.iso.datetime(),
  /** How many of the turns the brake held. */
  held: z.number().int().positive().optional(),
});
export type CycleBrakeStatus = z.infer<typeof cycleBrakeStatusSchema>;

/**
 * One object okt made for the CR (the inventory, status.objects): recorded before the object is first
 * created, so an operator stopped between the two finds it again. `hash`: of the object as last
 * applied (absent: recorded, not applied yet); the same render is not applied again. `deletion`:
 * `Keep` when its declaration keeps it (absent: Delete), so that a revision that drops the
 * declaration still lets go of the object as it was declared.
 */
export const inventoryEntrySchema = z.object({
  id: z.string().min(1),
  apiVersion: z.string().min(1),
  kind: z.string().min(1),
  name: z.string().min(1),
  hash: z.string().optional(),
  deletion: z.literal('Keep').optional(),
  /** The hash of the fields okt's last apply owns in it (its managedFields entry): someone taking one of them changes it. */
  fields: z.string().optional(),
});
export type InventoryEntry = z.infer<typeof inventoryEntrySchema>;

export const lifecycleStatusSchema = z.object({
  state: z.string().min(1),
  /** The revision of the graph the resource is on: written with every status write. */
  graphRevision: z.string().optional(),
  observedGeneration: z.number().int().nonnegative(),
  transition: z.number().int().nonnegative(),
  sequence: z.number().int().nonnegative(),
  path: z.array(z.string()),
  pathSummary: z.string().optional(),
  lastTransition: lastTransitionSchema.optional(),
  operation: operationStatusSchema.optional(),
  /** Events of earlier writes, not yet delivered when the next write was made. */
  outbox: z.array(outboxEntrySchema).optional(),
  /** The events this write emitted: numbered up to `sequence`. */
  emitted: emittedEventsSchema.optional(),
  /** The last sidecar-observed event offered to a decision (the sidecar's own sequence). */
  observedSequence: z.number().int().nonnegative().optional(),
  /** The sidecar epoch observedSequence counts in: another epoch restarts the count. */
  observedEpoch: z.string().optional(),
  cycleBrake: cycleBrakeStatusSchema.optional(),
  /** The objects the graph declares that okt made for this CR and has not deleted (absent, as in a status of an earlier okt: none). */
  objects: z.array(inventoryEntrySchema).optional(),
  conditions: z.array(conditionSchema),
});
export type LifecycleStatus = z.infer<typeof lifecycleStatusSchema>;

/** A zod failure as one line per problem, each naming the field: `spec.desiredState: Required`. */
export function describeIssues(root: string, error: z.ZodError): string {
  return error.issues.map((issue) => `${[root, ...issue.path.map(String)].join('.')}: ${issue.message}`).join('; ');
}
