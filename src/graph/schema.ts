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
  cancellable: z.boolean().optional(),
  onDelete: z.string().optional(),
};

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
  });

/** One node as plain data. `children` are in priority order, the last being the default child. */
export type NodeData = z.output<typeof nodeDataSchema>;

/** A graph as plain data, JSON-able; `loadGraph(graph.toData())` gives the same graph back. */
export type GraphData = z.output<typeof graphDataSchema>;
