import { execFile } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

test('npm start -- --ci: the whole demo walks Start -> Running -> Servicing -> Running -> Stopping -> End and exits 0', async () => {
  // Its own control plane, PostgreSQL, sidecar, receiver and operator, as on a person's machine.
  const { stdout } = await run(process.execPath, [path.join(REPO, 'bin/okt.js'), 'up', '--ci'], { cwd: REPO, timeout: 600_000, maxBuffer: 16 * 1024 * 1024 });
  for (const step of ['Start -> Running', 'Running -> Servicing', 'Servicing -> Running', 'Running -> Stopping', 'Stopping -> End']) {
    expect(stdout).toMatch(new RegExp(`transition  ${step}  #\\d+`));
  }
  expect(stdout).toMatch(/backup written: \S+\.dump/);
  expect(stdout).toContain('The walk is done.');
  expect(stdout).toContain('npx okt status database/demo');
}, 620_000);
