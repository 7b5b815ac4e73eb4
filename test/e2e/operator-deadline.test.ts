import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { loadGraph } from '../../src/graph/index.ts';
import { startNoopSidecar, type NoopSidecar } from '../../sidecar/noop.ts';
import { createNamespace, e2eKubeConfig, applyGraphCrd } from './helpers/index.ts';
import { lifecycleObjects, waitForObject, type LifecycleObject } from './helpers/lifecycle.ts';
import { killHard, spawnOperator } from './helpers/operator-process.ts';

// A node whose action hangs, with a deadline: the real operator cancels the action at the deadline and
// takes the timeout edge within a second of it, also when it was killed and restarted in between.

const DEADLINE_MS = 6_000;
const EXPIRIES = { group: 'okt.dev', version: 'v1alpha1', plural: 'expiries', kind: 'Expiry' } as const;
const graphData = {
  name: 'expiry',
  entry: 'Start',
  nodes: {
    Start: { children: ['Waiting'] },
    Waiting: { children: ['Expired', 'Done'], deadline: { after: DEADLINE_MS, then: 'Expired' } },
    Expired: { children: ['Done'] },
    Done: {},
  },
};
const graph = loadGraph(graphData);
const graphFile = path.join(tmpdir(), `okt-e2e-expiry-${process.pid}.json`);

const kc = e2eKubeConfig();
const expiries = lifecycleObjects(kc, EXPIRIES);
let namespace: string;
let sidecar: NoopSidecar;

beforeAll(async () => {
  writeFileSync(graphFile, JSON.stringify(graphData));
  await applyGraphCrd(kc, graph, EXPIRIES);
  namespace = await createNamespace(kc, 'okt-deadline');
  sidecar = await startNoopSidecar({ graph, hang: ['Waiting'] });
});

afterAll(async () => {
  await sidecar?.close();
  rmSync(graphFile, { force: true });
});

/** The operator, its safety look while an action runs far longer than the deadline: only the deadline's requeue can be on time. */
const operatorOptions = () => ({ namespace, sidecarUrl: sidecar.url, token: sidecar.token, kindGraphs: [`${EXPIRIES.kind}:${EXPIRIES.plural}=${graphFile}`], extra: ['--poll-interval', '120'] });

/** The CR entered Waiting and its action hangs there; returns when it entered (the deadline's clock). */
async function hangingInWaiting(name: string): Promise<{ entered: number; operation: string }> {
  const obj = await waitForObject(expiries, namespace, name, 'its action running in Waiting', (o) => o.status?.state === 'Waiting' && sidecar.sidecar.operations.get(o.status.operation?.id ?? '')?.phase === 'Running');
  return { entered: Date.parse(obj.status!.lastTransition!.time), operation: obj.status!.operation!.id };
}

/** Waits for the timeout edge and checks it was taken once, within a second after the deadline, its action cancelled. */
async function expectTimedOut(name: string, entered: number, operation: string, operator: { output(): string }): Promise<LifecycleObject> {
  let obj: LifecycleObject;
  try {
    obj = await waitForObject(expiries, namespace, name, 'at Done through Expired', (o) => o.status?.state === 'Done', 30_000);
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}\noperator log (tail):\n${operator.output().slice(-4000)}`);
  }
  expect(obj.status?.path).toEqual(['Start', 'Waiting', 'Expired', 'Done']);
  expect(obj.status?.transition).toBe(3);
  expect(sidecar.sidecar.operations.get(operation)?.phase).toBe('Cancelled');
  // Done's transition is the last; Expired's time is in its condition (entered at the timeout).
  const enteredExpired = obj.status!.conditions.find((c) => c.type === 'Expired')?.lastTransitionTime;
  const late = Date.parse(enteredExpired ?? '') - (entered + DEADLINE_MS);
  expect(late).toBeGreaterThanOrEqual(0);
  expect(late).toBeLessThan(1_000);
  return obj;
}

describe('a node deadline on the real control plane', () => {
  test('the hanging action is cancelled at the deadline and the CR takes its timeout edge within a second', async () => {
    const operator = spawnOperator(operatorOptions());
    try {
      await expiries.create(namespace, 'plain', { desiredState: 'Done', onLeaf: 'Keep' });
      const { entered, operation } = await hangingInWaiting('plain');
      await expectTimedOut('plain', entered, operation, operator);
    } finally {
      await killHard(operator);
    }
  });

  test('with the operator killed (SIGKILL) and restarted before the deadline, it is still taken within a second of it, once', async () => {
    let operator = spawnOperator(operatorOptions());
    try {
      await expiries.create(namespace, 'restarted', { desiredState: 'Done', onLeaf: 'Keep' });
      const { entered, operation } = await hangingInWaiting('restarted');
      await killHard(operator);
      await sleep(500);
      operator = spawnOperator(operatorOptions());
      await expectTimedOut('restarted', entered, operation, operator);
    } finally {
      await killHard(operator);
    }
  });
});
