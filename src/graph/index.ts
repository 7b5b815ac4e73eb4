export { defineGraph, loadGraph, graphTable } from './graph.ts';
export type { Graph, GraphNode, GraphDefinition, NodeDefinition, GraphTable, StateOf } from './graph.ts';
export { DEFAULT_STATE, RESERVED_NAMES, conditionTypeProblem } from './names.ts';
export { GraphDefinitionError } from './problems.ts';
export type { GraphProblem, GraphProblemCode } from './problems.ts';
export { graphDataSchema } from './schema.ts';
export type { GraphData, NodeData } from './schema.ts';
export { renderMermaid } from './mermaid.ts';
