// A sidecar crash in the middle of an action that is NOT declared idempotent: the sidecar must not run
// it again, so the CR must say so (Stalled, Interrupted, naming the operation) and the sink must hear
// it, never a silent loss; a change of the spec then moves the CR on.
import { afterAll, beforeAll, expect, test } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { LIFECYCLE_EVENT_TYPES } from '../../../src/events/index.ts';
import { createNamespace, e2eKubeConfig, waitFor } from '../helpers/index.ts';
import { conditionOf, databases, installDatabaseCrd, waitForDatabase } from '../helpers/lifecycle.ts';
import { checkEvents, eventsByUid, hasAllEvents, isSettledAt } from './checks.ts';
import { OperatorsUnderTest, SidecarUnderTest, SinkUnderTest } from './system.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
let namespace: string;
let sidecar: SidecarUnderTest;
let sink: SinkUnderTest;
let operators: OperatorsUnderTest;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-interrupted');
  // Servicing's first run hangs (its pid noted, to see it end with the sidecar); every other action is a no-op.
  sidecar = await SidecarUnderTest.start({
    idempotent: false,
    script: 'if [ "$OKT_NODE" = Servicing ] && [ ! -e hung.pid ]; then echo $$ > hung.pid; exec sleep 120; fi; sleep 0.05',
  });
  sink = await SinkUnderTest.start();
  operators = new OperatorsUnderTest({ kc, namespace, sidecar, sink, replicas: 1 });
});
afterAll(async () => {
  await operators?.stop();
  await sidecar?.stop();
  await sink?.close();
});

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('a non-idempotent action interrupted by a sidecar crash: Stalled/Interrupted naming the operation, a stalled event, then the spec moves it on', async () => {
  const created = await api.create(namespace, 'fragile', { desiredState: 'Servicing', onLeaf: 'Keep' });
  const id = `${created.metadata.uid}-2`;
  const pidFile = path.join(sidecar.dir, 'hung.pid');
  await waitFor('the action of Servicing to run', async () => (existsSync(pidFile) && sidecar.unfinished().includes(id) ? true : undefined), 60_000);
  const hungPid = Number(readFileSync(pidFile, 'utf8'));

  expect(await sidecar.kill()).toEqual([id]);
  // The sidecar's spawner process kills what it started when the sidecar dies: no action outlives it.
  await waitFor('the hung action to end with the sidecar', async () => (isRunning(hungPid) ? undefined : true), 10_000);
  await sidecar.restart();

  const stalled = await waitForDatabase(kc, namespace, 'fragile', 'Stalled', (o) => conditionOf(o, 'Stalled')?.status === 'True', 60_000);
  expect(stalled.status?.state).toBe('Servicing');
  expect(stalled.status?.operation).toMatchObject({ id, node: 'Servicing', phase: 'Failed' });
  const condition = conditionOf(stalled, 'Stalled')!;
  expect(condition.reason).toBe('Interrupted');
  expect(condition.message).toContain(`operation ${id}`);
  expect(condition.message).toContain('the sidecar stopped while the action ran');
  expect(condition.message).toContain('spec.retry');
  expect(conditionOf(stalled, 'Ready')).toMatchObject({ status: 'False', reason: 'Interrupted' });
  expect(stalled.status?.operation).toMatchObject({ reason: 'Interrupted', desired: 'Servicing' });

  const operation = sidecar.operations().get(id);
  expect(operation).toMatchObject({ phase: 'Failed', reason: 'Interrupted', attempts: 1 });
  expect(sidecar.runs().get(id)).toBe(1);

  await waitFor('the stalled event at the sink', async () => (hasAllEvents(stalled, eventsByUid(sink.received)) ? true : undefined), 30_000);
  const stream = eventsByUid(sink.received).get(created.metadata.uid) ?? [];
  expect(stream.find((e) => e.type === LIFECYCLE_EVENT_TYPES.actionFailed)?.data.operation).toMatchObject({ id, phase: 'Failed' });
  expect(stream.find((e) => e.type === LIFECYCLE_EVENT_TYPES.stalled)?.data).toMatchObject({ reason: 'Interrupted', to: 'Servicing', desired: 'Servicing' });

  // The user decides: back to Running. The failed operation is not retried; the CR moves on from it.
  await api.patchSpec(namespace, 'fragile', { desiredState: 'Running' });
  const moved = await waitForDatabase(kc, namespace, 'fragile', 'Ready at Running', (o) => isSettledAt(o, 'Running'), 60_000);
  expect(moved.status?.path).toEqual(['Start', 'Running', 'Servicing', 'Running']);
  expect(conditionOf(moved, 'Stalled')?.status).toBe('False');
  expect(sidecar.operations().get(`${created.metadata.uid}-3`)).toMatchObject({ phase: 'Succeeded', attempts: 1 });
  await waitFor('every event at the sink', async () => (hasAllEvents(moved, eventsByUid(sink.received)) ? true : undefined), 30_000);
  checkEvents(moved, eventsByUid(sink.received).get(created.metadata.uid)!);
});
