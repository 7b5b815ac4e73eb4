// docs/getting-started.md's "On a cluster", followed literally on a real node: a project made by
// `okt init` from the packed okt (the guide's first block) and installed, then every block marked
// `<!-- test: cluster -->`, in order, in the project: its image built into the node's containerd, the
// operator installed from k8s/manifests.yaml, and one resource that makes its Deployment (the sidecar
// in its Pod) and Service and reaches Running. The one step of the test's own: this node has no cluster
// DNS, so the operator's Pod gets a hostAliases entry for the Service once the resource made it.
import { mkdtempSync, rmSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../src/cluster/index.ts';
import { followLogs, kubectl } from '../../src/demo/in-cluster/kubectl.ts';
import { waitFor } from '../../src/util/wait-for.ts';
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
  it('the image, the operator, one resource that makes its Deployment (the sidecar in its Pod) and Service and is Ready at Running; its deletion walks it to the end and deletes them', async () => {
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
    const [image, operator, resource, look] = blocks as [string, string, string, string];
    // okt image build prints the image it put into the node's containerd (its progress goes to stderr).
    expect((await runBlock(image)).trim()).toBe('docker.io/library/my-app:latest');
    await runBlock(operator);
    await runBlock(resource);

    // No cluster DNS on this node: once the resource made its Service, the operator reaches the sidecar through hostAliases.
    const serviceIp = await waitFor('the Service the resource makes', () => kubectl(kubeconfig, ['get', 'service', 'first', '-o', 'jsonpath={.spec.clusterIP}']).catch(() => undefined), { timeoutMs: 60_000, intervalMs: 500 });
    const hostAliases = [{ ip: serviceIp, hostnames: ['first.default.svc'] }];
    await kubectl(kubeconfig, ['-n', 'okt-system', 'patch', 'deployment', 'okt-myapp', '-p', JSON.stringify({ spec: { template: { spec: { hostAliases } } } })]);
    await kubectl(kubeconfig, ['-n', 'okt-system', 'rollout', 'status', 'deployment/okt-myapp', '--timeout=120s']);

    const status = await runBlock(look);
    expect(status).toMatch(/^deployment\.apps\/first +1\/1 /m);
    expect(status).toMatch(/^service\/first +ClusterIP /m);
    expect(status).toMatch(/^first-\S+ +1\/1 +Running /m);
    expect(status).toMatch(/^myapp\.example\.com\/first condition met$/m);
    expect(status).toMatch(/^ {2}state +Running$/m);
    expect(status).toMatch(/^ {2}ready +True \(DesiredStateReached\)$/m);
    expect(status).toMatch(/^ {2}path +>Start>Running$/m);
    // Running's action is the project's TypeScript module, run by the sidecar in the resource's Pod.
    expect(status).toMatch(/operation +Succeeded, action of Running/);

    // The deletion walks it through Stopping (the project's command action) to End, then deletes what it made.
    const sidecarLog: string[] = [];
    const logs = followLogs(kubeconfig, ['deployment/first'], (line) => sidecarLog.push(line));
    try {
      await kubectl(kubeconfig, ['delete', 'myapp/first', '--timeout=120s']);
      await waitFor('the sidecar\'s log of Stopping\'s action', async () => (sidecarLog.some((line) => line.includes('"node":"Stopping"')) ? true : undefined), { timeoutMs: 10_000 });
    } finally {
      logs.stop();
    }
    await waitFor('the Deployment, its Pod and the Service gone', async () => {
      const left = await kubectl(kubeconfig, ['get', 'deployments,services,pods', '-l', 'okt.dev/graph=my-app', '-o', 'name']);
      const pods = await kubectl(kubeconfig, ['get', 'pods', '-l', 'app=first', '-o', 'name']);
      return left.trim() === '' && pods.trim() === '' ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 1_000 });
  }, 900_000);
});
