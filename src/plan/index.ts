export { createPlanner } from './planner.ts';
export type { Planner, PlanStep } from './planner.ts';
export { predictMigration, resolveDesired } from './migration.ts';
export type { MigrationPrediction, RecordedPosition } from './migration.ts';
