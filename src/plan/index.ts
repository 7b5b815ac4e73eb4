export { createPlanner } from './planner.ts';
export type { Planner, PlanStep } from './planner.ts';
