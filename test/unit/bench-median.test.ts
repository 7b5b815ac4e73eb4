import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { median } from '../../bench/median.ts';

describe('bench median', () => {
  it('is the middle value of an odd number of values', () => {
    expect(median([3, 1, 2])).toBe(2);
  });

  it('is the mean of the two middle values of an even number (not the upper one)', () => {
    expect(median([0.823, 0.992, 0.831, 1.0, 0.866, 1.023])).toBeCloseTo((0.866 + 0.992) / 2, 12);
  });

  it('has as many values at or below it as at or above it, and leaves its input as it was', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ noNaN: true, min: -1e6, max: 1e6 }), { minLength: 1, maxLength: 20 }), (xs) => {
        const copy = [...xs];
        const m = median(xs);
        expect(xs).toEqual(copy);
        expect(xs.filter((x) => x <= m).length).toBeGreaterThanOrEqual(xs.length / 2);
        expect(xs.filter((x) => x >= m).length).toBeGreaterThanOrEqual(xs.length / 2);
      }),
    );
  });

  it('refuses no values', () => {
    expect(() => median([])).toThrow('median of no values');
  });
});
