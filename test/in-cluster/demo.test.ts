import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, test } from 'vitest';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const run = promisify(execFile);

test('npm start -- --in-cluster --ci: one CR makes PostgreSQL with its sidecar, Service, claim and Secret, a backup Job only in Servicing, walks on a real node, and its deletion leaves only the kept claim', async () => {
  // npm start runs `okt up`: the same command, with the arguments after `--`.
  const { stdout } = await run('npm', ['start', '--', '--in-cluster', '--ci'], { cwd: REPO, timeout: 900_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, NO_COLOR: '1' } });
  expect(stdout).toMatch(/node okt-node Ready/);
  // The operator's manifests hold no application object, and no graph ConfigMap: the operator loads the graph module from its image.
  expect(stdout).toMatch(/applied Namespace, ServiceAccount, ClusterRole, .*CustomResourceDefinition, MutatingAdmissionPolicy, MutatingAdmissionPolicyBinding, Deployment;/);
  // okt manifests --finalizer-policy: the finalizer is on as the API server created the CR, and no managedFields entry owns it.
  expect(stdout).toContain('created database/demo with spec.desiredState=Running; finalizers ["okt.dev/lifecycle"], owned by no managedFields entry (the finalizer policy put it on)');
  expect(stdout).toMatch(/no cluster DNS here: --host-alias okt-events\.okt-demo\.svc=10\.0\.0\.\d+\n/);
  // The sidecar's URL is the Service the CR made: no spec.sidecar.url, no --sidecar-url.
  expect(stdout).toMatch(/no cluster DNS here: --host-alias demo\.okt-demo\.svc=10\.0\.0\.\d+ \(the Service database\/demo made\)/);
  const always = 'deployment.apps/demo service/demo configmap/demo-okt-sidecar secret/demo-postgres persistentvolumeclaim/demo-data';
  const made = [...stdout.matchAll(/made by database\/demo at (\w+): (.*)$/gm)].map(([, node, objects]) => `${node}: ${objects}`);
  expect(made).toEqual([
    `Running: ${always}`,
    `Servicing: ${always} job.batch/demo-backup`,
    `Running: ${always}`,
    `Stopping: ${always}`,
    `End: ${always}`,
  ]);
  // The Job's dump, on the claim the server's container mounts (Servicing's action verified it).
  expect(stdout).toMatch(/backup written: \/var\/lib\/okt-pg\/backups\/\S+\.dump/);
  for (const step of ['Start -> Running', 'Running -> Servicing', 'Servicing -> Running', 'Running -> Stopping', 'Stopping -> End']) {
    expect(stdout).toMatch(new RegExp(`okt-demo/demo  transition  ${step}  #\\d+`));
  }
  expect(stdout).toMatch(/database\/demo gone in \d+ ms/);
  expect(stdout).toContain('left behind: persistentvolumeclaim/demo-data; owner references: none; no Pod of it; the claim bound to okt-demo-data');
  expect(stdout).toContain('The walk is done.');
}, 920_000);
