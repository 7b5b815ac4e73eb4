import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { LIFECYCLE_EVENT_TYPES } from '../../src/events/types.ts';
import { loadGraph } from '../../src/graph/index.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

const caseArb = fc.record({
  deadlineMs: fc.integer({ min: 1, max: 3_600_000 }),
  /** The deadline takes an edge to Expired, or stalls. */
  edge: fc.boolean(),
  /** Reconciles at random times (as fractions of twice the deadline), each with its faults. */
  looks: fc.array(fc.record({ at: fc.double({ min: 0, max: 2, noNaN: true }), finish: fc.boolean(), lostWrite: fc.boolean(), lostStart: fc.boolean() }), { maxLength: 30 }),
});

describe('node deadline properties', () => {
  test('at random reconcile times, with lost writes, lost starts and hanging actions: never before the deadline, exactly once after it', () => {
    fc.assert(
      fc.property(caseArb, ({ deadlineMs, edge, looks }) => {
        const graph = loadGraph({
          name: 'timeout',
          entry: 'Start',
          nodes: {
            Start: { children: ['Waiting'] },
            Waiting: { children: ['Expired', 'Done'], deadline: edge ? { after: deadlineMs, then: 'Expired' } : { after: deadlineMs } },
            Expired: { children: ['Done'] },
            Done: {},
          },
        });
        const sim = new LifecycleSim(graph, 'Waiting');
        sim.tick = 0;
        sim.reconcile({ finishRunning: false }); // enters Waiting at t=0: the deadline's clock
        // Always one look a millisecond before the deadline: the edge case of "never early".
        const lastMoment = { ms: deadlineMs - 1, finish: true, lostWrite: false, lostStart: false };
        const times = [...looks.map((look) => ({ ...look, ms: Math.round(look.at * deadlineMs) })), lastMoment].sort((a, b) => a.ms - b.ms);
        for (const look of times) {
          sim.clock = look.ms / 1000;
          const effects = sim.reconcile({ finishRunning: look.finish, applyWrite: !look.lostWrite, startOperation: !look.lostStart });
          if (look.ms < deadlineMs) {
            expect(sim.status?.state).toBe('Waiting');
            expect(findCondition(sim.status?.conditions ?? [], 'Stalled')?.status).toBe('False');
            // Nothing waits past the deadline: the requeue comes at it at the latest.
            if (!effects.again) expect(effects.requeueAfterMs).toBeLessThanOrEqual(deadlineMs - look.ms);
          }
        }
        // A few fault-free looks after the deadline (and after the last random one).
        const after = Math.max(deadlineMs, times.at(-1)?.ms ?? 0);
        for (let k = 0; k < 3; k++) {
          sim.clock = (after + k) / 1000;
          sim.reconcile({ finishRunning: false });
        }
        const outbox = sim.events;
        const timeouts = outbox.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.transition && e.data.reason === 'DeadlineExceeded');
        const stalls = outbox.filter((e) => e.type === LIFECYCLE_EVENT_TYPES.stalled && e.data.reason === 'DeadlineExceeded');
        if (edge) {
          expect(timeouts).toHaveLength(1);
          expect(stalls).toHaveLength(0);
          expect(sim.status?.path).toEqual(['Start', 'Waiting', 'Expired']);
          expect(Date.parse(timeouts[0]!.time)).toBeGreaterThanOrEqual(Date.parse(sim.time(0)) + deadlineMs);
        } else {
          expect(timeouts).toHaveLength(0);
          expect(stalls).toHaveLength(1);
          expect(sim.status?.state).toBe('Waiting');
          expect(Date.parse(stalls[0]!.time)).toBeGreaterThanOrEqual(Date.parse(sim.time(0)) + deadlineMs);
          expect(findCondition(sim.status?.conditions ?? [], 'Stalled')).toMatchObject({ status: 'True', reason: 'DeadlineExceeded' });
        }
      }),
      { numRuns: fcRuns(300) },
    );
  });
});
