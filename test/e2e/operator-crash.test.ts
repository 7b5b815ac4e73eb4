import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { createNamespace, e2eKubeConfig } from './helpers/index.ts';
import { conditionOf, databases, installDatabaseCrd, startNoopSidecar, waitForDatabase, type DatabaseObject } from './helpers/lifecycle.ts';
import { killHard, spawnOperator } from './helpers/operator-process.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
let namespace: string;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-crash');
});

/** Every transition recorded went along an edge of the graph, and each committed operation ran exactly once. */
function expectConsistent(db: DatabaseObject, attemptsOf: (id: string) => number | undefined): void {
  const path = db.status!.path;
  for (let i = 1; i < path.length; i++) expect(databaseGraph.node(path[i - 1] as never).children).toContain(path[i]);
  expect(path.length).toBe(db.status!.transition + 1);
  for (let n = 1; n <= db.status!.transition; n++) {
    const node = path[n]!;
    const attempts = attemptsOf(`${db.metadata.uid}-${n}`);
    if (databaseGraph.node(node as never).hasAction) expect(attempts, `operation ${n} (${node})`).toBe(1);
  }
}

/** A failed wait says what the operator logged, so that a failure on CI can be understood. */
async function withOutputOf<T>(operator: { output(): string }, wait: Promise<T>): Promise<T> {
  try {
    return await wait;
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}\noperator log (tail):\n${operator.output().slice(-4000)}`);
  }
}

describe('the operator killed with SIGKILL', () => {
  let sidecar: Awaited<ReturnType<typeof startNoopSidecar>> | undefined;
  afterAll(async () => sidecar?.close());

  test('between the status write and the action start: after a restart the action starts once, no transition skipped', async () => {
    // One action at a time, and a blocker's hanging action takes it: the next commit's start is refused.
    const busy = await startNoopSidecar({ hang: ['Servicing'], maxActiveOperations: 1 });
    let operator = spawnOperator({ namespace, sidecarUrl: busy.url, token: busy.token });
    try {
      const blocker = await api.create(namespace, 'blocker', { desiredState: 'Servicing', onLeaf: 'Keep' });
      const blocking = `${blocker.metadata.uid}-2`;
      await waitForDatabase(kc, namespace, 'blocker', 'its hanging action running', () => busy.sidecar.operations.active().includes(blocking), 30_000);
      await api.create(namespace, 'crash', { desiredState: 'Running', onLeaf: 'Keep' });
      // The transition is committed; its start is refused (the sidecar is busy), and that is said on the CR.
      const committed = await waitForDatabase(kc, namespace, 'crash', 'the transition to Running committed, its start refused', (o) => o.status?.operation?.phase === 'Pending' && conditionOf(o, 'Ready')?.reason === 'SidecarBusy');
      expect(committed.status?.state).toBe('Running');
      await killHard(operator);
      await busy.sidecar.operations.cancel(blocking);
      operator = spawnOperator({ namespace, sidecarUrl: busy.url, token: busy.token });
      const db = await withOutputOf(operator, waitForDatabase(kc, namespace, 'crash', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True'));
      expect(db.status?.transition).toBe(1);
      expectConsistent(db, (id) => busy.sidecar.operations.get(id)?.attempts);
    } finally {
      await killHard(operator);
      await busy.close();
    }
  });

  test('at moments fast-check chooses during a walk: every CR still reaches its desired node, nothing runs twice', async () => {
    sidecar ??= await startNoopSidecar();
    const live = sidecar;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.integer({ min: 0, max: 400 }), { minLength: 3, maxLength: 3 }), fc.constantFrom('Servicing', 'Stopping'), async (killDelays, target) => {
        const name = `walk-${Math.random().toString(36).slice(2, 8)}`;
        let operator = spawnOperator({ namespace, sidecarUrl: live.url, token: live.token });
        try {
          await api.create(namespace, name, { desiredState: target, onLeaf: 'Keep' });
          for (const delay of killDelays) {
            await sleep(delay);
            await killHard(operator);
            operator = spawnOperator({ namespace, sidecarUrl: live.url, token: live.token });
          }
          const db = await withOutputOf(operator, waitForDatabase(kc, namespace, name, `Ready at ${target}`, (o) => o.status?.state === target && conditionOf(o, 'Ready')?.status === 'True', 60_000));
          expectConsistent(db, (id) => live.sidecar.operations.get(id)?.attempts);
        } finally {
          await killHard(operator);
        }
      }),
      { numRuns: fcRuns(4) },
    );
  });
});
