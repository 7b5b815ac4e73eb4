import { z } from 'zod';

// The plain-data form of a graph (JSON/YAML, e.g. from a ConfigMap). Nodes come either as a list
// (the canonical form, what toData() emits) or as a map keyed by node name (handier in YAML).
// Objects are strict so that a misspelt key ("childs") is reported instead of ignored.
const nodeBody = {
  description: z.string().optional(),
  children: z.array(z.string()).optional(),
  triggers: z.array(z.string()).optional(),
  action: z.boolean().optional(),
  retry: z
    .strictObject({
      attempts: z.number().int().min(1).max(100),
      backoffMs: z.number().int().min(0).max(3_600_000).optional(),
    })
    .optional(),
  /** true: both kinds of cancellation; an object: only those it sets. */
  cancellable: z.union([z.boolean(), z.strictObject({ onDelete: z.boolean().optional(), onDesiredChange: z.boolean().optional() })]).optional(),
  onDelete: z.string().optional(),
  /** Names this node had in earlier revisions of the graph: a CR there migrates here, its running action kept. */
  formerly: z.array(z.string()).optional(),
  /** How long a CR may stay on this node: `after` ('10m', '1h30m', '500ms' or milliseconds); then the event `then` (one of its children), or a stall. */
  deadline: z.strictObject({ after: z.union([z.string(), z.number()]), then: z.string().optional() }).optional(),
  /** This node's own parameters (besides the graph's): a zod 4 object schema, or as plain data the JSON Schema it becomes. */
  params: z.unknown().optional(),
  /** A change of the node's parameters while a CR rests on it: NextTransition (default) does nothing now, Rerun runs its action again. */
  onParamsChange: z.enum(['NextTransition', 'Rerun']).optional(),
};

/** Where the CRs on a node that a new revision removed go: another node, or nowhere (`refuse`, with the reason). */
export const removedNodeSchema = z.union([z.string(), z.strictObject({ refuse: z.string().min(1) })]);

/** How CRs on earlier revisions of the graph move to this one. */
export const migrationsSchema = z.strictObject({
  /** Automatic (default): at the CR's next reconcile. Manual: when the CR is annotated okt.dev/migrate=true. */
  policy: z.enum(['Automatic', 'Manual']).optional(),
  removed: z.record(z.string(), removedNodeSchema).optional(),
});

/**
 * An object the graph makes (see objects.ts): its functions (`render`, `ready`) stay code, so a graph
 * as plain data carries the rest; in code they pass through here to be checked.
 */
export const objectDataSchema = z.strictObject({
  id: z.string(),
  apiVersion: z.string(),
  kind: z.string(),
  /** The object is named `<CR name>-<name>`; without it, as the CR. */
  name: z.string().optional(),
  /** A node, or a span `{ from, until }`; absent: the graph's lifetime. */
  during: z.union([z.string(), z.strictObject({ from: z.string(), until: z.string() })]).optional(),
  deletion: z.enum(['Delete', 'Keep']).optional(),
  render: z.unknown().optional(),
  ready: z.unknown().optional(),
});

export const nodeDataSchema = z.strictObject({ name: z.string(), ...nodeBody });

export const graphDataSchema = z
  .strictObject({
    name: z.string().min(1),
    description: z.string().optional(),
    entry: z.string().optional(),
    nodes: z.union([
      z.array(nodeDataSchema),
      z.record(z.string(), z.strictObject(nodeBody)).transform((byName) =>
        Object.entries(byName).map(([name, body]) => ({ name, ...body })),
      ),
    ]),
    migrations: migrationsSchema.optional(),
    /** The parameters every node's action gets (spec.params): a zod 4 object schema, or as plain data the JSON Schema it becomes. */
    params: z.unknown().optional(),
    /** The Kubernetes objects the graph makes, in order of declaration. */
    objects: z.array(objectDataSchema).optional(),
    /** Earlier revisions still served (each a graph of the same name, as plain data), newest first. */
    previous: z.array(z.unknown()).optional(),
  });

/** One node as plain data. `children` are in priority order, the last being the default child. */
export type NodeData = z.output<typeof nodeDataSchema>;

/** One object declaration as plain data; `render` and `ready` are only ever set in code. */
export type ObjectData = z.output<typeof objectDataSchema>;

export type MigrationsData = z.output<typeof migrationsSchema>;

/** A graph as plain data, JSON-able; `loadGraph(graph.toData())` gives the same graph back. */
export type GraphData = z.output<typeof graphDataSchema>;
