import { setTimeout as sleep } from 'node:timers/promises';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { freePort } from '../../src/net/free-ports.ts';
import { createNamespace, e2eKubeConfig } from './helpers/index.ts';
import { conditionOf, databases, installDatabaseCrd, startNoopSidecar, waitForDatabase, type DatabaseObject } from './helpers/lifecycle.ts';
import { killHard, spawnOperator } from './helpers/operator-process.ts';

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
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const token = 'e2e-sidecar-token-0123456789abcdef';
    let operator = spawnOperator({ namespace, sidecarUrl: url, token });
    try {
      await api.create(namespace, 'crash', { desiredState: 'Running', onLeaf: 'Keep' });
      // The sidecar is not there yet: the transition is committed, its start keeps failing.
      const committed = await waitForDatabase(kc, namespace, 'crash', 'the transition to Running committed', (o) => o.status?.operation?.phase === 'Pending');
      expect(committed.status?.state).toBe('Running');
      await killHard(operator);
      sidecar = await startNoopSidecar({ port, token });
      operator = spawnOperator({ namespace, sidecarUrl: url, token });
      const db = await withOutputOf(operator, waitForDatabase(kc, namespace, 'crash', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True'));
      expect(db.status?.transition).toBe(1);
      expectConsistent(db, (id) => sidecar!.sidecar.operations.get(id)?.attempts);
    } finally {
      await killHard(operator);
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
      { numRuns: 4 },
    );
  });
});
