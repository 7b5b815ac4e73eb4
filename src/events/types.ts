import { z } from 'zod';

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
  migrated: 'dev.okt.lifecycle.migrated.v1',
  braked: 'dev.okt.lifecycle.braked.v1',
  objectsApplied: 'dev.okt.lifecycle.objects.applied.v1',
  objectsReady: 'dev.okt.lifecycle.objects.ready.v1',
  objectsFailed: 'dev.okt.lifecycle.objects.failed.v1',
} as const;

export type LifecycleEventType = (typeof LIFECYCLE_EVENT_TYPES)[keyof typeof LIFECYCLE_EVENT_TYPES];

export const lifecycleEventTypeSchema = z.enum(Object.values(LIFECYCLE_EVENT_TYPES) as [LifecycleEventType, ...LifecycleEventType[]]);

const nodeName = z.string().min(1);

/**
 * The `data` of every lifecycle event: where the resource was, went, and why. Loose objects: a v1
 * event may gain optional fields, so consumers (and the shipped JSON Schema) accept unknown ones.
 */
export const lifecycleEventDataSchema = z
  .looseObject({
    graph: z.string().min(1).describe('The name of the lifecycle graph.'),
    graphRevision: z.string().min(1).optional().describe('The revision of the graph the resource is on (a hash of what the graph does); absent only in events of an okt without revisions.'),
    transition: z.number().int().nonnegative().describe('The transition number this event belongs to (the count of transitions taken so far).'),
    from: nodeName.describe('The node the resource was in.'),
    to: nodeName.describe('The node the resource is in now (equal to from for events that are no transition).'),
    desired: nodeName.describe('spec.desiredState when the event was recorded.'),
    events: z.array(z.string().min(1)).describe('The collected events the decision was offered (node names or DefaultState).'),
    path: z.string().describe('The traversed path, rendered the OKT way: >Start>Running.'),
    generation: z.number().int().nonnegative().describe('metadata.generation of the resource the event was recorded at.'),
    operation: z
      .looseObject({
        id: z.string().min(1).describe('The operation id: `${uid}-${transition}`.'),
        node: nodeName.describe('The node whose action this is.'),
        phase: z.string().min(1).describe('Pending, Running, Succeeded, Failed or Cancelled.'),
        message: z.string().optional(),
        formerNode: z.string().optional().describe('On migrated events: the name its node had in the earlier revision (the operation id is kept).'),
      })
      .optional()
      .describe('The action of the node, on action.* events and on the transition into a node with an action.'),
    migration: z
      .looseObject({
        fromRevision: z.string().nullable().describe('The revision the resource was on (null: recorded by an okt without revisions).'),
        toRevision: z.string().min(1).describe('The revision it is on now.'),
        fromState: nodeName.describe('Its node in the earlier revision.'),
        toState: nodeName.describe('Its node in this revision (a removed node\'s resources then enter it by a transition event).'),
        kind: z.enum(['kept', 'renamed', 'moved']).describe('kept: same name; renamed: the node lists the old name in formerly; moved: the old node was removed and mapped here.'),
      })
      .optional()
      .describe('On migrated events: from which revision and node to which.'),
    objects: z
      .array(
        z.looseObject({
          id: z.string().min(1).describe('The id of its declaration in the graph.'),
          kind: z.string().min(1),
          name: z.string().min(1),
        }),
      )
      .optional()
      .describe('On objects.* events: the objects of the node (subject) the event is about: those applied, those ready, or the one that failed.'),
    reason: z.string().optional().describe('Why, on converged, stalled, migrated, braked and objects.failed events, and on a transition a deadline took (DeadlineExceeded): a condition reason.'),
    message: z.string().optional().describe('A human explanation, on stalled, braked and objects.failed events and on a transition a deadline took.'),
    cycle: z.array(nodeName).optional().describe('On braked events: the cycle the resource turned, as entered (its first node is its last).'),
    turns: z.number().int().positive().optional().describe('On braked events: the turns of a cycle since the last spec edit (transitions into a node on its path).'),
  })
  .describe('The data of an okt lifecycle CloudEvent (types dev.okt.lifecycle.*.v1).');

export type LifecycleEventData = z.infer<typeof lifecycleEventDataSchema>;
