import { expect, test } from 'vitest';

test('runs on a supported Node', () => {
  const [major] = process.versions.node.split('.').map(Number);
  expect(major).toBeGreaterThanOrEqual(22);
});
