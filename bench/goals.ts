// The goals of issue 33 ("the cost of a transition: as cheap as the peer's, measured like for like"):
// each a figure of one `npm run bench -- e2e` run, with the bound it should meet, and the bounds'
// formulas. Pure: the e2e bench measures, this judges.

export interface Goal {
  key: string;
  /** `>=`: the figure should be at least `bound`; `<=`: at most. */
  op: '>=' | '<=';
  bound: number;
}

/** The e2e area's goals, in the order the goal table prints them. */
export const E2E_GOALS: readonly Goal[] = [
  { key: 'e2e.okt_run_vs_cr_peer_ratio', op: '>=', bound: 0.9 },
  { key: 'e2e.operator_cpu_vs_cr_peer_ratio', op: '<=', bound: 1.5 },
  { key: 'e2e.apiserver_cpu_vs_cr_peer_ratio', op: '<=', bound: 1.3 },
  { key: 'e2e.http_requests_vs_cr_peer_delta', op: '<=', bound: 0.5 },
  { key: 'e2e.okt_run_reconciles_per_transition', op: '<=', bound: 1.0 },
  { key: 'e2e.walk_vs_write_bound_ratio', op: '>=', bound: 0.9 },
  { key: 'e2e.cr_stored_bytes_vs_cr_peer_delta', op: '<=', bound: 600 },
  { key: 'e2e.latency_p99_vs_floor_ratio', op: '<=', bound: 1.3 },
  { key: 'operator.bytes_per_cr', op: '<=', bound: 2048 },
];

/** Whether `measured` meets the goal; a figure not measured (undefined, NaN) meets none. */
export function goalMet(goal: Goal, measured: number | undefined): boolean {
  // NaN compares false either way.
  if (measured === undefined) return false;
  return goal.op === '>=' ? measured >= goal.bound : measured <= goal.bound;
}

export interface GoalRow {
  key: string;
  measured: number | string;
  goal: string;
  met: 'yes' | 'no';
}

/** One row per goal: its figure in `figures` ('not measured' if absent), the goal, met or not. */
export function goalTable(goals: readonly Goal[], figures: Readonly<Record<string, number>>): GoalRow[] {
  return goals.map((goal) => {
    const measured = figures[goal.key];
    return {
      key: goal.key,
      measured: measured === undefined ? 'not measured' : measured,
      goal: `${goal.op} ${goal.bound}`,
      met: goalMet(goal, measured) ? 'yes' : 'no',
    };
  });
}

/**
 * The multi-hop walk's write bound (transitions/s): per transition it costs the API server half a
 * spec patch (one edit moves a CR two hops) and one status update, at the raw rates of each.
 */
export function writeBoundPerSecond(rawPatchPerSecond: number, rawUpdatePerSecond: number): number {
  return 1 / (0.5 / rawPatchPerSecond + 1 / rawUpdatePerSecond);
}

/**
 * The floor of the latency of `crs` CRs moved at once (ms): the last one's event waits at least for
 * the `crs` spec patches and the `crs` status updates of their transitions, at the raw rates.
 */
export function latencyFloorMs(crs: number, rawPatchPerSecond: number, rawUpdatePerSecond: number): number {
  return 1000 * (crs / rawPatchPerSecond + crs / rawUpdatePerSecond);
}
