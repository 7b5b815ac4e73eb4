// How long after a CRD is created the API server refuses to create its CRs under okt's finalizer
// policy (503 "Resource kind ... not found": the policy's plugin reads CRDs' schemas from /openapi/v3
// every 5 s), on a control plane started here: ROUNDS fresh CRDs (default 4), each created after its
// policy, then a dry-run creation every 100 ms. A tool, not part of `npm run bench`.
//   node bench/finalizer-policy-window.ts [ROUNDS]
import { KubeConfig } from '@kubernetes/client-node';
import { databaseGraph } from '../graphs/database.ts';
import { startControlPlane } from '../src/cluster/index.ts';
import { generateCrd } from '../src/kube/crd.ts';
import { generateFinalizerPolicy } from '../src/kube/finalizer-policy.ts';
import { LIFECYCLE_FINALIZER } from '../src/kube/lifecycle-resource.ts';
import { resourcePath } from '../src/kube/transport/index.ts';
import { CRDS, RawApi, createFinalizerPolicy, createNamespace } from './e2e.bench.ts';

const ROUNDS = Number(process.argv[2] ?? 4);
const NAMESPACE = 'policy-window';

const plane = await startControlPlane({ progress: (line) => process.stderr.write(`${line}\n`) });
const kc = new KubeConfig();
kc.loadFromFile(plane.kubeconfigPath);
const raw = await RawApi.open(kc, 4);
try {
  await createNamespace(raw, NAMESPACE);
  for (let round = 0; round < ROUNDS; round++) {
    const resource = { group: `w${round}.okt.dev`, version: 'v1', plural: 'databases', kind: 'Database' } as const;
    await createFinalizerPolicy(raw, generateFinalizerPolicy([resource], { name: `window-${round}` }));
    // The policy in force before its CRD exists: what is measured is the CRD's delay alone.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const created = performance.now();
    await raw.send('POST', resourcePath(CRDS, undefined), generateCrd(databaseGraph, resource));
    let servedMs: number | undefined;
    let refusals = 0;
    for (;;) {
      try {
        const cr = await raw.post(`${resourcePath({ ...resource, namespaced: true }, NAMESPACE)}?dryRun=All`, { apiVersion: `${resource.group}/${resource.version}`, kind: resource.kind, metadata: { name: 'probe' }, spec: { desiredState: 'Running' } });
        servedMs ??= performance.now() - created;
        if ((cr.metadata.finalizers ?? []).includes(LIFECYCLE_FINALIZER)) break;
      } catch (error) {
        // 404 until the CRD is served; 503 while the policy's plugin does not know the kind.
        if (String(error).includes(': 503 ')) {
          servedMs ??= performance.now() - created;
          refusals += 1;
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const admittedMs = performance.now() - created;
    console.log(`CRD ${round}: served ${(servedMs! / 1000).toFixed(1)} s after its creation; a CR created with the finalizer ${(admittedMs / 1000).toFixed(1)} s after it, ${((admittedMs - servedMs!) / 1000).toFixed(1)} s after it was served (${refusals} refusals with 503)`);
  }
} finally {
  await raw.close();
  await plane.stop();
}
