// Which sidecar events are a CR's news (src/controller/lifecycle/epoch-news.ts), in a world of sidecars
// at two URLs (two replicas behind one, a second sidecar at the other), each raising events, restarting
// without its journal (a new epoch), and a CR looking at one of them at a time, as the reconciler and
// the step do: read after the recorded position (or where EpochMemory says in another epoch), record the
// answer's epoch, use the events up unless paused.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { bornAfter, EpochMemory, type EpochPosition } from '../../src/controller/lifecycle/epoch-news.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

const SIDECARS = [
  { url: 'http://db/', name: 'replica A' },
  { url: 'http://db/', name: 'replica B' },
  { url: 'http://other/', name: 'another sidecar' },
] as const;

type Action = { kind: 'raise' | 'restart'; sidecar: number } | { kind: 'look'; sidecar: number; paused: boolean };
const actionArb: fc.Arbitrary<Action> = fc.oneof(
  { arbitrary: fc.record({ kind: fc.constant('raise' as const), sidecar: fc.nat(SIDECARS.length - 1) }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('look' as const), sidecar: fc.nat(SIDECARS.length - 1), paused: fc.boolean() }), weight: 4 },
  { arbitrary: fc.record({ kind: fc.constant('restart' as const), sidecar: fc.nat(SIDECARS.length - 1) }), weight: 1 },
);
/** Restarts after these many do nothing: the world's epochs stay within what EpochMemory keeps per CR. */
const MAX_RESTARTS = 4;

interface Epoch {
  id: string;
  url: string;
  bornAt: number;
  /** Raise times by seq - 1. */
  raisedAt: number[];
  /** When the CR first looked at it (undefined: never), and whether that first look found it begun after the CR's previous look, at the same URL. */
  firstLookAt?: number;
  lostMemory?: boolean;
}

describe('a CR is offered only the sidecar events it had a part in', () => {
  test('no event twice; none raised before the CR met its epoch unless that epoch is a sidecar that lost its memory since the last look; every later one at the next look', () => {
    fc.assert(
      fc.property(fc.array(actionArb, { maxLength: 80 }), (actions) => {
        let now = 0;
        let epochs = 0;
        let restarts = 0;
        const born = (url: string): Epoch => ({ id: `e${++epochs}`, url, bornAt: now, raisedAt: [] });
        const current = SIDECARS.map(({ url }) => born(url));
        const memory = new EpochMemory();
        let recorded: EpochPosition | undefined;
        let previousLook: { at: number; url: string } | undefined;
        const consumed = new Set<string>();
        for (const action of actions) {
          now += 1;
          const epoch = current[action.sidecar]!;
          if (action.kind === 'raise') epoch.raisedAt.push(now);
          if (action.kind === 'restart' && ++restarts <= MAX_RESTARTS) current[action.sidecar] = born(epoch.url);
          if (action.kind !== 'look') continue;
          const answer = { epoch: epoch.id, url: epoch.url, atMs: now, epochAgeMs: now - epoch.bornAt, lastSeq: epoch.raisedAt.length };
          if (epoch.firstLookAt === undefined) {
            epoch.firstLookAt = now;
            epoch.lostMemory = previousLook !== undefined && previousLook.url === epoch.url && epoch.bornAt > previousLook.at;
            expect(bornAfter(answer, previousLook?.url === epoch.url ? previousLook.at : undefined)).toBe(epoch.lostMemory);
          }
          // The step's first sight: the sidecar's current end is the baseline.
          const from = recorded === undefined ? answer.lastSeq : memory.newsAfter('cr', recorded, answer);
          const offered = epoch.raisedAt.map((at, i) => ({ seq: i + 1, at })).filter((e) => e.seq > from);
          for (const event of offered) {
            const id = `${epoch.id}#${event.seq}`;
            expect(consumed.has(id), `${id} offered again after it was used up`).toBe(false);
            if (event.at < epoch.firstLookAt) expect(epoch.lostMemory, `${id}, raised before the CR met ${epoch.id}, offered as news`).toBe(true);
          }
          // Every event raised after the CR met the epoch is offered until used up.
          const owed = epoch.raisedAt.map((at, i) => ({ seq: i + 1, at })).filter((e) => e.at > epoch.firstLookAt! && !consumed.has(`${epoch.id}#${e.seq}`));
          expect(offered.map((e) => e.seq)).toEqual(expect.arrayContaining(owed.map((e) => e.seq)));
          if (epoch.lostMemory) expect(offered.length + epoch.raisedAt.filter((_, i) => consumed.has(`${epoch.id}#${i + 1}`)).length).toBe(epoch.raisedAt.length);
          if (action.paused && recorded !== undefined) {
            recorded = { epoch: epoch.id, seq: from };
          } else {
            for (const event of offered) consumed.add(`${epoch.id}#${event.seq}`);
            recorded = { epoch: epoch.id, seq: answer.lastSeq };
          }
          memory.heard('cr', epoch.id, answer);
          previousLook = { at: now, url: epoch.url };
        }
      }),
      { numRuns: fcRuns(500) },
    );
  });
});
