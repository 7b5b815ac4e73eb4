/** Milliseconds per unit, largest first: the only order a duration may name them in. */
const UNITS = [
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
  ['ms', 1],
] as const;

// Each unit at most once, largest first: '1h30m', '90s', '500ms'. No spaces, no fractions, no days
// (whose length a clock change makes ambiguous).
const DURATION = /^(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$/;

/**
 * A duration in milliseconds, from a number of milliseconds or a string like '1h30m', '90s', '500ms';
 * undefined when it is not one (a definition-time problem), or not positive.
 */
export function parseDuration(value: string | number): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value > 0 ? value : undefined;
  const match = DURATION.exec(value);
  if (match === null || value === '') return undefined;
  const ms = UNITS.reduce((sum, [, unit], i) => sum + Number(match[i + 1] ?? 0) * unit, 0);
  return Number.isSafeInteger(ms) && ms > 0 ? ms : undefined;
}

/** The shortest string parseDuration reads back as `ms`: 5_400_000 is '1h30m', 90_000 is '1m30s'. */
export function formatDuration(ms: number): string {
  let rest = ms;
  let text = '';
  for (const [name, unit] of UNITS) {
    const count = Math.floor(rest / unit);
    if (count > 0) text += `${count}${name}`;
    rest -= count * unit;
  }
  return text === '' ? '0ms' : text;
}
