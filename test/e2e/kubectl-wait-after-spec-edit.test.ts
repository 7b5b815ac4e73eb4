// `kubectl wait`, as the docs show it (README: --for=condition=Running; getting-started: Ready;
// docs/operator.md: Stalled=false), after spec edits that leave the CR on its node: spec.paused on and
// off, spec.retry, spec.params. kubectl ignores a condition whose observedGeneration is older than the
// object's generation, so each of okt's conditions must be brought to the generation it was judged at.
// The real kubectl against the real API server, in every status format.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { StatusFormat } from '../../src/kube/status-format.ts';
import { brokerGraph } from '../fixtures/params-graphs.ts';
import { e2eKubeConfig, kubectl, kubectlWait, applyGraphCrd } from './helpers/index.ts';
import { startLocalOperator, type LifecycleObject, type LocalOperator } from './helpers/lifecycle.ts';

const graph = brokerGraph();
const kc = e2eKubeConfig();

for (const format of ['full', 'lean', 'compact'] as const satisfies readonly StatusFormat[]) {
  describe(`${format} status`, () => {
    // A group per format: each CRD says its own format.
    const BROKERS = { group: `wait-${format}.e2e.okt.dev`, version: 'v1', plural: 'brokers', kind: 'Broker', statusFormat: format } as const;
    const resource = `${BROKERS.plural}.${BROKERS.group}/mq`;
    let local: LocalOperator;

    beforeAll(async () => {
      await applyGraphCrd(kc, graph, BROKERS);
      local = await startLocalOperator(kc, { graph, resource: BROKERS, namespacePrefix: `okt-wait-${format}`, statusFormat: format });
    });

    afterAll(async () => {
      await local?.stop();
    });

    const read = async () => JSON.parse(await kubectl(['get', resource, '-n', local.namespace, '-o', 'json'])) as LifecycleObject;
    const edit = (spec: Record<string, unknown>) => kubectl(['patch', resource, '-n', local.namespace, '--type', 'merge', '-p', JSON.stringify({ spec })]);
    /** Every kubectl wait the docs show that applies to a CR resting Ready at Running in this format. */
    const waitAll = async (what: string) => {
      const conditions = format === 'full' ? ['Running', 'Ready', 'Stalled=false'] : ['Running', 'Ready'];
      for (const condition of conditions) {
        expect(await kubectlWait(resource, condition, local.namespace), `${condition} after ${what}`).toContain('condition met');
      }
    };

    test('after spec.paused on and off, spec.retry and spec.params, kubectl wait for the node, Ready and Stalled=false answers; the node condition keeps its lastTransitionTime', async () => {
      await kubectl(['create', '-n', local.namespace, '-f', '-'], JSON.stringify({ apiVersion: `${BROKERS.group}/${BROKERS.version}`, kind: BROKERS.kind, metadata: { name: 'mq' }, spec: { desiredState: 'Running', onLeaf: 'Keep' } }));
      await waitAll('create');
      const entered = (await read()).status!.conditions.find((c) => c.type === 'Running')!;

      await edit({ paused: true });
      // Paused, the CR stays at Running: the node's condition answers, and (full) Stalled=false.
      for (const condition of format === 'full' ? ['Running', 'Stalled=false'] : ['Running']) {
        expect(await kubectlWait(resource, condition, local.namespace), `${condition} while paused`).toContain('condition met');
      }
      expect((await read()).status!.conditions.find((c) => c.type === 'Ready')).toMatchObject({ status: 'False', reason: 'Paused' });
      await edit({ paused: false });
      await waitAll('spec.paused false');
      await edit({ retry: 'once-more' });
      await waitAll('spec.retry');
      // Running's action runs again for new parameters (onParamsChange: Rerun), on the same node.
      await edit({ params: { replicas: 2 } });
      await waitAll('spec.params');

      const cr = await read();
      expect(cr.status?.observedGeneration).toBe(cr.metadata.generation);
      expect(cr.status?.state).toBe('Running');
      for (const c of cr.status!.conditions) expect(c.observedGeneration, c.type).toBe(cr.metadata.generation);
      expect(cr.status!.conditions.find((c) => c.type === 'Running')?.lastTransitionTime).toBe(entered.lastTransitionTime);
    });
  });
}
