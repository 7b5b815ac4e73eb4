// The sidecar protocol, version 1: the one set of schemas that the server (sidecar/) and the
// client (src/sidecar-client) both validate against, so that the two cannot drift.
// sidecar/openapi.yaml is generated from these schemas (test/unit/sidecar-openapi.test.ts checks it).
import { z } from 'zod';
import { DEFAULT_STATE, PARAM_NAME, PARAM_NAME_RULE, conditionTypeProblem } from '../graph/index.ts';

/**
 * What the sidecar says of an action that succeeded, by kind: a command that exited 0, a module
 * function that returned. okt's compact status format leaves them out of what it stores.
 */
export const COMMAND_SUCCEEDED_MESSAGE = 'exited with code 0';
export const MODULE_SUCCEEDED_MESSAGE = 'the module returned';

export const PROTOCOL_VERSION = 'v1';
export const API_PREFIX = `/${PROTOCOL_VERSION}`;
/** The special event meaning "go to the default (last) child". */
export const DEFAULT_STATE_EVENT = DEFAULT_STATE;
/** The longest `?wait=` a GET of an operation may ask for, in milliseconds. */
export const MAX_WAIT_MS = 60_000;
/** The header carrying the sidecar's epoch on every HTTP answer. */
export const EPOCH_HEADER = 'okt-sidecar-epoch';

const NAME_PATTERN = /^[A-Za-z][A-Za-z0-9_-]{0,62}$/;
const NAME_RULE = 'a name of 1-63 letters, digits, "_" or "-", starting with a letter';

/** Node names are Kubernetes condition types, the rule of src/graph. */
const conditionType = () =>
  z
    .string()
    .max(316)
    .superRefine((name, ctx) => {
      const problem = conditionTypeProblem(name);
      if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `a node name that ${problem}` });
    });
export const NodeNameSchema = conditionType().describe('The name of a node of a graph (a Kubernetes condition type).');
/** An event is the name of the node to go to, or DefaultState. */
export const EventNameSchema = conditionType().describe('A node name, or DefaultState.');
export const GraphNameSchema = z.string().regex(NAME_PATTERN, NAME_RULE).describe('The name of a graph.');
export const OperationIdSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
    'an operation id of 1-128 letters, digits, ".", "_", ":" or "-", starting with a letter or digit',
  )
  .describe('Chosen by the caller (the operator derives it from the CR uid and transition number).');
export const ParamNameSchema = z.string().regex(PARAM_NAME, PARAM_NAME_RULE);
/** The most a request's params may weigh, as JSON. */
export const MAX_PARAMS_BYTES = 65_536;
/** Parameter name -> any JSON value (a CR's spec.params, checked by the graph's schema). */
export const ParamsSchema = z
  .record(ParamNameSchema, z.unknown())
  .superRefine((params, ctx) => {
    const size = Buffer.byteLength(JSON.stringify(params));
    if (size > MAX_PARAMS_BYTES) ctx.addIssue({ code: 'custom', message: `params weigh ${size} bytes as JSON, more than ${MAX_PARAMS_BYTES}` });
  });
export const TimestampSchema = z.iso.datetime();
export const EpochSchema = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'an epoch of 1-128 letters, digits, ".", "_", ":" or "-"')
  .describe(
    "The identity of the sidecar's memory: created when it starts without a journal, kept as long as its journal is. " +
      'Operations unknown to a sidecar of another epoch may have run on the one that forgot them.',
  );

export const StartOperationRequestSchema = z
  .strictObject({
    node: NodeNameSchema,
    graph: GraphNameSchema.optional().describe('Optional when the sidecar serves exactly one graph.'),
    params: ParamsSchema.optional().describe(
      'JSON values, at most 64 KiB in all. Passed to command actions as environment variables OKT_PARAM_<NAME> ' +
        '(a string as it is, any other value as JSON) and OKT_PARAMS (all of them, as JSON), to http actions in the body, ' +
        'to modules as context.params.',
    ),
    epoch: EpochSchema.optional().describe(
      "A precondition: start only if this is the sidecar's epoch (else 409 epoch-mismatch, nothing recorded).",
    ),
    rerun: z
      .boolean()
      .optional()
      .describe(
        'This operation may already have run on a sidecar that forgot it: refused (409 not-idempotent, nothing recorded) ' +
          'unless the action of the node is declared idempotent.',
      ),
    attempt: z
      .number()
      .int()
      .min(1)
      .optional()
      .describe('Default 1. The operation counts its attempts from this one: its first run reports attempts = attempt.'),
  })
  .describe(
    'Start the action of a node. A retry (200) or a conflict (409 id-conflict) is told by graph, node and params only.',
  );

export const PhaseSchema = z.enum(['Pending', 'Running', 'Succeeded', 'Failed', 'Cancelled']);
export const TERMINAL_PHASES: ReadonlySet<Phase> = new Set(['Succeeded', 'Failed', 'Cancelled']);

export const ReasonSchema = z
  .enum([
    'Completed', // the action finished and raised its events
    'NonZeroExit', // a command exited with a code other than 0
    'HttpStatus', // an http action got a status it does not map to events
    'ActionError', // the action could not run or threw
    'InvalidEvents', // the action raised something that is not an event name
    'Timeout', // the action ran past its timeout and was killed
    'Cancelled', // cancelled through the API
    'Interrupted', // the sidecar stopped while the action ran
  ])
  .describe(
    'Why the operation ended. A failed action whose node declares onFailure ends Succeeded with that event and this reason.',
  );

export const OperationSchema = z.object({
  id: OperationIdSchema,
  epoch: EpochSchema.describe('The epoch of the sidecar that answers (it remembers this operation).'),
  graph: GraphNameSchema,
  node: NodeNameSchema,
  params: z.record(ParamNameSchema, z.unknown()),
  phase: PhaseSchema,
  events: z.array(EventNameSchema).describe('Events raised by the action; empty until it finishes.'),
  reason: ReasonSchema.optional(),
  message: z.string(),
  createdAt: TimestampSchema,
  startedAt: TimestampSchema.optional(),
  finishedAt: TimestampSchema.optional(),
  exitCode: z.number().int().nullable().optional(),
  attempts: z.number().int().min(0).describe('How many times the action was started (re-runs after a crash count).'),
  outputTail: z.array(z.string()).describe('The last lines of the action output (stdout and stderr).'),
});

export const ObservedEventSchema = z.object({
  seq: z.number().int().min(1),
  event: EventNameSchema,
  at: TimestampSchema,
  message: z.string(),
});

export const ObservationSchema = z.object({
  epoch: EpochSchema.describe('The epoch of the sidecar that answers: seq numbers go on only within one epoch.'),
  epochAgeMs: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      'How long ago this epoch began, in milliseconds by the sidecar\'s own clock (its journal\'s epoch record): ' +
        'a client measures it against its own clock to tell a sidecar that lost its memory since the client last looked ' +
        '(a new epoch: its events are news) from one that already had a life (its older events are not).',
    ),
  graph: GraphNameSchema,
  state: NodeNameSchema.nullable().describe('The node the probe says the application is in; null when unknown.'),
  observedAt: TimestampSchema.nullable(),
  probe: z.object({ ok: z.boolean(), message: z.string() }),
  events: z
    .array(ObservedEventSchema)
    .describe('Events the probe raised outside any action, oldest first, with seq greater than ?since.'),
  lastSeq: z
    .number()
    .int()
    .min(0)
    .describe('Pass it back as ?since to get only newer events (within the same epoch; a new epoch starts at 0).'),
  activeOperations: z.array(OperationIdSchema),
});

export const ProblemSchema = z
  .object({
    type: z.string(),
    title: z.string(),
    status: z.number().int().min(400).max(599),
    detail: z.string(),
    instance: z.string().optional(),
    field: z.string().optional().describe('The first offending field (a JSON path like body.params.x).'),
    reason: z.string().optional().describe('Why that field is wrong.'),
    errors: z.array(z.object({ field: z.string(), reason: z.string() })).optional(),
    activeOperations: z.array(OperationIdSchema).optional(),
    epoch: EpochSchema.optional().describe('The epoch of the sidecar that answers.'),
  })
  .describe('RFC 9457 problem details (application/problem+json).');

export const HealthSchema = z.object({ status: z.enum(['ok', 'starting', 'failed']) });

export const OperationPathParamsSchema = z.strictObject({ id: OperationIdSchema });
export const GetOperationQuerySchema = z.strictObject({
  wait: z.coerce
    .number()
    .int()
    .min(0)
    .max(MAX_WAIT_MS)
    .optional()
    .describe('Long-poll: answer as soon as the operation has finished, or after this many milliseconds.'),
});
export const ObservationQuerySchema = z.strictObject({
  graph: GraphNameSchema.optional(),
  since: z.coerce.number().int().min(0).optional(),
});

export type StartOperationRequest = z.infer<typeof StartOperationRequestSchema>;
export type Phase = z.infer<typeof PhaseSchema>;
export type Reason = z.infer<typeof ReasonSchema>;
export type Operation = z.infer<typeof OperationSchema>;
export type ObservedEvent = z.infer<typeof ObservedEventSchema>;
export type Observation = z.infer<typeof ObservationSchema>;
export type Problem = z.infer<typeof ProblemSchema>;
export type Health = z.infer<typeof HealthSchema>;

export function isTerminal(phase: Phase): boolean {
  return TERMINAL_PHASES.has(phase);
}
