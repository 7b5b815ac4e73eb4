import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

test('npm start -- --in-cluster --ci: okt deployed with okt manifests | kubectl apply walks the database on a real node and exits 0', async () => {
  // npm start runs `okt up`: the same command, with the arguments after `--`.
  const { stdout } = await run('npm', ['start', '--', '--in-cluster', '--ci'], { cwd: REPO, timeout: 900_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } });
  expect(stdout).toMatch(/node okt-node Ready/);
  expect(stdout).toMatch(/applied Namespace, ServiceAccount, ClusterRole, .*CustomResourceDefinition, ConfigMap, Deployment/);
  expect(stdout).toMatch(/backup written: \/var\/lib\/okt-pg\/backups\/\S+\.dump/);
  expect(stdout).toMatch(/no cluster DNS here: --host-alias postgres\.okt-demo\.svc=10\.0\.0\.\d+/);
  for (const step of ['Start -> Running', 'Running -> Servicing', 'Servicing -> Running', 'Running -> Stopping', 'Stopping -> End']) {
    expect(stdout).toMatch(new RegExp(`okt-demo/demo  transition  ${step}  #\\d+`));
  }
  expect(stdout).toContain('The walk is done.');
}, 920_000);
