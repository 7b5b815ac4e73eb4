import type { z } from 'zod';

export type GraphProblemCode =
  | 'schema'
  | 'unknown-child'
  | 'unknown-entry'
  | 'duplicate-node'
  | 'duplicate-child'
  | 'no-entry'
  | 'several-entries'
  | 'unreachable'
  | 'trap'
  | 'action-on-entry'
  | 'action-on-leaf'
  | 'missing-action'
  | 'triggers-without-default'
  | 'invalid-name'
  | 'reserved-name'
  | 'policy-without-action'
  | 'unknown-delete-child'
  | 'deletion-cycle'
  | 'condition-collision'
  | 'formerly-conflict'
  | 'removed-conflict'
  | 'unknown-migration-target'
  | 'unmapped-node'
  | 'previous-revision'
  | 'invalid-deadline'
  | 'unknown-deadline-child'
  | 'deadline-on-entry'
  | 'deadline-on-leaf'
  | 'invalid-params'
  | 'params-conflict'
  | 'invalid-object'
  | 'duplicate-object-id'
  | 'duplicate-object'
  | 'cluster-scoped-object'
  | 'unknown-object-node'
  | 'unreachable-span';

/** One thing wrong with a graph definition. `path` locates it in the plain-data form. */
export interface GraphProblem {
  readonly code: GraphProblemCode;
  readonly node?: string;
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/** Thrown by defineGraph/loadGraph with every problem found, never only the first. */
export class GraphDefinitionError extends Error {
  readonly graph: string | undefined;
  readonly problems: readonly GraphProblem[];
  /** The zod issues, with their paths, when the data did not even have the shape of a graph. */
  readonly issues: readonly z.core.$ZodIssue[];

  constructor(graph: string | undefined, problems: readonly GraphProblem[], issues: readonly z.core.$ZodIssue[] = []) {
    const title = graph === undefined ? 'graph definition' : `graph "${graph}"`;
    const count = problems.length === 1 ? '1 problem' : `${problems.length} problems`;
    super(`${title} is invalid (${count}):\n${problems.map((p) => `- ${p.message}`).join('\n')}`);
    this.name = 'GraphDefinitionError';
    this.graph = graph;
    this.problems = problems;
    this.issues = issues;
  }
}
