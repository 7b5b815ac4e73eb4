// docs/getting-started.md's "On a cluster", followed literally on a real node: a project made by
// `okt init` from the packed okt (the guide's first block) and installed, then every block marked
// `<!-- test: cluster -->`, in order, in the project: its image built into the node's containerd, the
// operator installed from k8s/manifests.yaml, the application's Pod with its sidecar, and a resource
// that reaches Running. The one step of the test's own: this node has no cluster DNS, so the
// operator's Pod gets a hostAliases entry for the sidecar's Service before the resource is made.
import { mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../src/cluster/index.ts';
import { kubectl } from '../../src/demo/in-cluster/kubectl.ts';
import { guideBlocks } from '../fixtures/guide.ts';
import { okAsUser, packOkt, projectEnv, runAsUser } from '../fixtures/npm-project.ts';

const log = (line: string) => process.stderr.write(`${line}\n`);
const work = mkdtempSync(path.join(tmpdir(), 'okt-guide-cluster-'));
const project = path.join(work, 'my-app');
let plane: ControlPlane | undefined;
let npxDir: string | undefined;

beforeAll(async () => {
  plane = await startControlPlane({ node: true, progress: log });
}, 600_000);

afterAll(async () => {
  await plane?.stop();
  rmSync(work, { recursive: true, force: true });
  // npx's install of Node 24 and okt from that tarball is this run's alone (a hash of the tarball's path).
  if (npxDir !== undefined && npxDir.startsWith(path.join(homedir(), '.npm/_npx/'))) rmSync(npxDir, { recursive: true, force: true });
});

describe('docs/getting-started.md, On a cluster, on a real node', () => {
  it('the image, the operator, the sidecar beside the application, and a resource Ready at Running; its deletion walks it to the end', async () => {
    const [init] = guideBlocks('run');
    const blocks = guideBlocks('cluster');
    expect(blocks.length).toBe(4);
    await packOkt(work);
    const made = await runAsUser('bash', ['-e', '-o', 'pipefail', '-c', `${init}\ncd my-app\nnpm install`], { cwd: work });
    npxDir = /packing okt [\d.]+ \((.*)\/node_modules\/okt\)/.exec(made.stderr)?.[1];
    expect(made.code, made.stdout + made.stderr).toBe(0);

    const kubeconfig = plane!.kubeconfigPath;
    const env = { ...projectEnv(project), KUBECONFIG: kubeconfig };
    const runBlock = (block: string) => okAsUser('bash', ['-e', '-o', 'pipefail', '-c', block], { cwd: project, env });
    const [image, operator, application, resource] = blocks as [string, string, string, string];
    // okt image build prints the image it put into the node's containerd (its progress goes to stderr).
    expect((await runBlock(image)).trim()).toBe('docker.io/library/my-app:latest');
    await runBlock(operator);
    await runBlock(application);

    // No cluster DNS on this node: the operator reaches the sidecar's Service through hostAliases.
    const serviceIp = await kubectl(kubeconfig, ['get', 'service', 'my-app', '-o', 'jsonpath={.spec.clusterIP}']);
    const hostAliases = [{ ip: serviceIp, hostnames: ['my-app.default.svc'] }];
    await kubectl(kubeconfig, ['-n', 'okt-system', 'patch', 'deployment', 'okt-myapp', '-p', JSON.stringify({ spec: { template: { spec: { hostAliases } } } })]);
    await kubectl(kubeconfig, ['-n', 'okt-system', 'rollout', 'status', 'deployment/okt-myapp', '--timeout=120s']);

    const status = await runBlock(resource);
    expect(status).toMatch(/^myapp\.example\.com\/first condition met$/m);
    expect(status).toMatch(/^ {2}state +Running$/m);
    expect(status).toMatch(/^ {2}ready +True \(DesiredStateReached\)$/m);
    expect(status).toMatch(/^ {2}path +>Start>Running$/m);
    // Running's action is the project's TypeScript module, run by the sidecar in the Pod.
    expect(status).toMatch(/operation +Succeeded, action of Running/);

    // The deletion walks it through Stopping (the project's command action) to End, then it is gone.
    await kubectl(kubeconfig, ['delete', 'myapp/first', '--timeout=120s']);
    const sidecarLog = await kubectl(kubeconfig, ['logs', 'deployment/my-app']);
    expect(sidecarLog).toMatch(/"node":"Stopping"/);
  }, 900_000);
});
