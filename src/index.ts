export const version = '0.1.0';

// The lifecycle-graph core: define and validate (graph), decide and trace (machine), plan (plan).
export * from './graph/index.ts';
export * from './machine/index.ts';
export * from './plan/index.ts';
export { databaseGraph } from '../graphs/database.ts';
export { reconciliationGraph } from '../graphs/reconciliation.ts';

// Lifecycle CloudEvents: the types and data schema, the emitter, and the consumer helper and receiver.
export * from './events/index.ts';
