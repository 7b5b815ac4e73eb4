// The Lease's delivery mark: a new leader skips the events committed before it, so it must never pass
// an event not yet delivered, a write under way, or (until every cached CR was looked at) the mark the
// previous holder left.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DeliveryMark, EVENTS_DELIVERED_BEFORE } from '../../src/controller/lifecycle/delivery-mark.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

type Op =
  | { kind: 'tick'; ms: number }
  | { kind: 'commit'; key: number }
  | { kind: 'deliver'; index: number }
  | { kind: 'write'; key: number }
  | { kind: 'settle'; key: number }
  | { kind: 'look'; key: number }
  | { kind: 'cache'; key: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('tick' as const), ms: fc.integer({ min: 0, max: 5_000 }) }),
  fc.record({ kind: fc.constant('commit' as const), key: fc.integer({ min: 0, max: 5 }) }),
  fc.record({ kind: fc.constant('deliver' as const), index: fc.nat() }),
  fc.record({ kind: fc.constant('write' as const), key: fc.integer({ min: 0, max: 5 }) }),
  fc.record({ kind: fc.constant('settle' as const), key: fc.integer({ min: 0, max: 5 }) }),
  fc.record({ kind: fc.constant('look' as const), key: fc.integer({ min: 0, max: 5 }) }),
  fc.record({ kind: fc.constant('cache' as const), key: fc.integer({ min: 0, max: 5 }) }),
);

describe('the delivery mark in the Lease', () => {
  it('never passes an undelivered event, a write not yet settled (under way, or failed with its outcome unknown), or, before every cached CR was looked at, the previous holder\'s mark; with none of these it is now', () => {
    fc.assert(
      fc.property(
        fc.option(fc.integer({ min: 0, max: 100_000 }), { nil: undefined }),
        fc.uniqueArray(fc.integer({ min: 0, max: 5 }), { maxLength: 4 }),
        fc.array(op, { maxLength: 60 }),
        (inherited, initiallyCached, ops) => {
          let clock = 50_000;
          const undelivered: number[] = [];
          // Per CR, the commit times of reconciles not yet settled (a failed write keeps its CR unsettled).
          const writes = new Map<number, number[]>();
          const cached = new Set(initiallyCached.map(String));
          const looked = new Set<string>();
          const mark = new DeliveryMark({ oldestUndeliveredTime: () => (undelivered.length ? Math.min(...undelivered) : undefined) }, () => clock);
          mark.track('kind', () => cached.keys());
          const previous: Record<string, string> = inherited === undefined ? {} : { [EVENTS_DELIVERED_BEFORE]: new Date(inherited).toISOString() };
          // Acquiring carries the previous holder's mark over unchanged.
          expect(mark.annotations(previous)).toEqual(previous);
          mark.acquired(previous);
          expect(mark.deliveredBefore).toBe(inherited);
          let everLookedAtAll = false;
          for (const step of ops) {
            if (step.kind === 'tick') clock += step.ms;
            else if (step.kind === 'commit') undelivered.push(clock);
            else if (step.kind === 'deliver' && undelivered.length > 0) undelivered.splice(step.index % undelivered.length, 1);
            else if (step.kind === 'write') {
              mark.hold(`kind ${step.key}`, new Date(clock).toISOString());
              writes.set(step.key, [...(writes.get(step.key) ?? []), clock]);
            } else if (step.kind === 'settle') {
              mark.settled(`kind ${step.key}`);
              writes.delete(step.key);
            }
            else if (step.kind === 'look') {
              mark.lookedAt('kind', String(step.key));
              looked.add(String(step.key));
            } else if (step.kind === 'cache') cached.add(String(step.key));
            const written = mark.annotations({})[EVENTS_DELIVERED_BEFORE];
            everLookedAtAll ||= [...cached].every((key) => looked.has(key));
            if (!everLookedAtAll && inherited === undefined) {
              expect(written).toBeUndefined();
              continue;
            }
            const at = Date.parse(written!);
            for (const time of undelivered) expect(at).toBeLessThanOrEqual(time);
            const held = [...writes.values()].flat();
            for (const time of held) expect(at).toBeLessThanOrEqual(time);
            if (!everLookedAtAll) expect(at).toBeLessThanOrEqual(inherited!);
            const bounds = [clock, ...undelivered, ...held, ...(everLookedAtAll ? [] : [inherited!])];
            expect(at).toBe(Math.min(...bounds));
          }
        },
      ),
      { numRuns: fcRuns(300) },
    );
  });
});
