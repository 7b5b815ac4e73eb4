// Walks a {{kind}} on a real control plane: etcd + kube-apiserver from okt/cluster (downloaded and built
// once, then cached in ~/.cache/okt), the operator in this process driving graph.ts (which makes the
// resource's Deployment and Service: workload.ts), and this project's sidecar run as `okt sidecar --config sidecar.yaml`. Also checks that k8s/ is what `npm run generate`
// writes from graph.ts now.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { ApiextensionsV1Api, AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, loadYaml, PatchStrategy, setHeaderOptions, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { createLogger, SidecarClient, startOperator, statusFormatOf, type LifecycleStatus } from 'okt';
import { startControlPlane } from 'okt/cluster';
import { spawnSidecarProcess } from 'okt/sidecar';
import { graph, type State } from '../graph.ts';

const root = path.resolve(import.meta.dirname, '..');
const npmRun = async (script: string): Promise<string> => (await promisify(execFile)('npm', ['run', '--silent', script], { cwd: root })).stdout;
// What `npm run generate` writes into k8s/, made now from graph.ts.
const generated = { crd: npmRun('crd'), manifests: npmRun('manifests') };
for (const made of Object.values(generated)) made.catch(() => {}); // a failure is the tests' to report, when they await it

test('k8s/crd.yaml and k8s/manifests.yaml are what npm run generate makes of graph.ts', async () => {
  for (const [file, text] of [['k8s/crd.yaml', await generated.crd], ['k8s/manifests.yaml', await generated.manifests]] as const) {
    assert.ok(readFileSync(path.join(root, file), 'utf8') === text, `${file} is out of date with graph.ts: run npm run generate`);
  }
});

const desired: State = 'Running';

test(`a resource walks to ${desired} with this sidecar, then its deletion walks it to the end`, { timeout: 180_000 }, async (t) => {
  const crd = loadYaml<V1CustomResourceDefinition>(await generated.crd);
  const { group, names } = crd.spec;
  const resource = { group, version: crd.spec.versions[0]!.name, plural: names.plural, kind: names.kind };
  const ref = { group, version: resource.version, plural: names.plural, namespace: 'default' };
  const dir = mkdtempSync(path.join(tmpdir(), `${graph.name}-test-`));
  const token = randomBytes(16).toString('hex');
  writeFileSync(path.join(dir, 'token'), token);
  const cleanups: (() => unknown)[] = [];
  try {
    const plane = await startControlPlane();
    cleanups.push(() => plane.stop());
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(plane.kubeconfigPath);
    const crds = kubeConfig.makeApiClient(ApiextensionsV1Api);
    await crds.createCustomResourceDefinition({ body: crd });

    const sidecar = await spawnSidecarProcess(path.join(root, 'sidecar.yaml'), { OKT_SIDECAR_TOKEN_FILE: path.join(dir, 'token'), OKT_SIDECAR_JOURNAL: path.join(dir, 'journal.jsonl') }, ['--port', '0']);
    cleanups.push(() => (sidecar.child.kill('SIGTERM'), sidecar.exited));
    const client = new SidecarClient({ baseUrl: sidecar.url, token });
    cleanups.push(() => client.close());
    // The status format of the CRD's version (npm run crd's --status-format), as okt run takes it in the Deployment.
    const statusFormat = statusFormatOf(crd.metadata?.annotations);
    const operator = await startOperator({ kubeConfig, graph, resource, statusFormat, namespace: 'default', sidecar: { url: sidecar.url, token }, logger: createLogger({ level: 'warn' }) });
    cleanups.push(() => operator.stop());

    const objects = kubeConfig.makeApiClient(CustomObjectsApi);
    // On a cluster the operator finds the sidecar at the Service the resource makes (workload.ts); here it runs on this machine.
    const body = { apiVersion: `${group}/${resource.version}`, kind: names.kind, metadata: { name: 'first' }, spec: { desiredState: desired, sidecar: { url: sidecar.url } } };
    // A CRD is served a moment after it is created: 404 until then.
    await until('the CRD to be served', () => objects.createNamespacedCustomObject({ ...ref, body }).then(() => true, (error) => (status(error) === 404 ? undefined : Promise.reject(error))));
    const get = async () => (await objects.getNamespacedCustomObject({ ...ref, name: 'first' })) as { metadata: { uid: string }; status?: LifecycleStatus };

    // The resource makes its Deployment (the sidecar in its Pod) and Service; Running's action waits until the Deployment is rolled out.
    // This control plane has no node: the test writes the status its controller would once the Pod runs.
    const apps = kubeConfig.makeApiClient(AppsV1Api);
    const deployment = await until('the Deployment first makes', () => apps.readNamespacedDeployment({ name: 'first', namespace: 'default' }).catch((error) => (status(error) === 404 ? undefined : Promise.reject(error))));
    assert.deepEqual(deployment.spec?.template.spec?.containers.map((c) => c.name), ['okt-sidecar']);
    const rolledOut = { observedGeneration: deployment.metadata?.generation, replicas: 1, updatedReplicas: 1, readyReplicas: 1, availableReplicas: 1 };
    await apps.patchNamespacedDeploymentStatus({ name: 'first', namespace: 'default', body: { status: rolledOut } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    const service = await kubeConfig.makeApiClient(CoreV1Api).readNamespacedService({ name: 'first', namespace: 'default' });
    assert.deepEqual(service.spec?.ports?.map((p) => p.name), ['okt-sidecar']);

    const ready = await until(`first to be Ready on ${desired}`, async () => {
      const cr = await get();
      const isReady = cr.status?.conditions.some((c) => c.type === 'Ready' && c.status === 'True');
      return cr.status?.state === desired && isReady ? { uid: cr.metadata.uid, status: cr.status } : undefined;
    });
    const started = await client.getOperation(ready.status.operation!.id);
    assert.equal(started.phase, 'Succeeded');
    t.diagnostic(`${names.kind} first reached ${desired} (Ready): ${ready.status.pathSummary}`);
    t.diagnostic(`${desired}'s action said: ${started.outputTail.join(' | ')}`);

    await objects.deleteNamespacedCustomObject({ ...ref, name: 'first' });
    await until('first to be gone', () => get().then(() => undefined, (error) => (status(error) === 404 ? true : Promise.reject(error))));
    const next = await client.getOperation(`${ready.uid}-${ready.status.transition + 1}`);
    assert.equal(next.phase, 'Succeeded');
    t.diagnostic(`deleted: ${next.node}'s action said: ${next.outputTail.join(' | ')}; then the end, and the resource is gone`);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Calls `check` every 100 ms until it gives a value, for at most a minute. */
async function until<T>(what: string, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function status(error: unknown): number | undefined {
  return (error as { code?: number }).code;
}
