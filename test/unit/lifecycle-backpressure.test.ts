import { expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { findCondition } from '../../src/kube/conditions.ts';
import { statusEvents } from '../../src/events/status-events.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';

test('the backpressure message counts the events that wait, not the outbox limit', () => {
  const sim = new LifecycleSim(databaseGraph, 'Running');
  sim.outboxLimit = 20;
  sim.settle();
  // Back and forth without delivery until the outbox is too full for another transition.
  for (let i = 0; findCondition(sim.status!.conditions, 'Ready')?.reason !== 'EventsBackpressure'; i++) {
    if (i > 20) throw new Error('no backpressure');
    sim.setDesired(sim.status!.state === 'Running' ? 'Servicing' : 'Running');
    sim.settle();
  }
  const waiting = statusEvents(sim.status!, databaseGraph.name).length;
  expect(waiting).toBeLessThan(sim.outboxLimit);
  expect(findCondition(sim.status!.conditions, 'Ready')?.message).toBe(`${waiting} events wait in the outbox for the sink, which holds 20: transitions wait too`);
});
