// Where a CR's news begins in a sidecar epoch its status does not record (src/controller/lifecycle/epoch-news.ts).
import { describe, expect, test } from 'vitest';
import { EpochMemory } from '../../src/controller/lifecycle/epoch-news.ts';

const URL_1 = 'http://sidecar-1/';
const recorded = { epoch: 'old', seq: 7 };
/** The CR last heard its recorded epoch at t=1000 ms, at URL_1. */
function memory(): EpochMemory {
  const epochs = new EpochMemory();
  epochs.heard('ns/db', 'old', { epoch: 'old', url: URL_1, atMs: 1000 });
  return epochs;
}
/** An answer of epoch `new` at t=5000 ms, begun `ageMs` before, with 3 events. */
const answer = (ageMs: number | undefined, url = URL_1) => ({ epoch: 'new', url, atMs: 5000, epochAgeMs: ageMs, lastSeq: 3 });

describe('another epoch than the recorded one', () => {
  test('begun after the last answer of the recorded one, at the same URL (a sidecar that lost its memory): from its start', () => {
    expect(memory().newsAfter('ns/db', recorded, answer(3000))).toBe(0);
  });

  test('begun before it (another replica, a rolling update flipping back): from its current end', () => {
    expect(memory().newsAfter('ns/db', recorded, answer(4500))).toBe(3);
  });

  test('at another URL (spec.sidecar.url switched), however young: from its current end', () => {
    expect(memory().newsAfter('ns/db', recorded, answer(10, 'http://sidecar-2/'))).toBe(3);
  });

  test('when it cannot be told (a sidecar that does not say its epoch age; an operator that has not heard the recorded epoch since it started): from its current end', () => {
    expect(memory().newsAfter('ns/db', recorded, answer(undefined))).toBe(3);
    expect(new EpochMemory().newsAfter('ns/db', recorded, answer(10))).toBe(3);
  });

  test('the choice holds until the status records that epoch, and an epoch left is read on from where it was left', () => {
    const epochs = memory();
    expect(epochs.newsAfter('ns/db', recorded, answer(4500))).toBe(3);
    expect(epochs.newsAfter('ns/db', recorded, { ...answer(4600), lastSeq: 5 })).toBe(3);
    epochs.heard('ns/db', 'new', { epoch: 'new', url: URL_1, atMs: 6000 });
    expect(epochs.newsAfter('ns/db', { epoch: 'new', seq: 5 }, { epoch: 'old', url: URL_1, atMs: 7000, epochAgeMs: 99_000, lastSeq: 12 })).toBe(7);
    epochs.forget('ns/db');
    expect(epochs.newsAfter('ns/db', { epoch: 'new', seq: 5 }, { epoch: 'old', url: URL_1, atMs: 7000, epochAgeMs: 99_000, lastSeq: 12 })).toBe(12);
  });
});
