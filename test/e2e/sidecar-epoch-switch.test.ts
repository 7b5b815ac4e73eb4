// A CR is offered only the sidecar events it had a part in (issue 29, 6): its spec.sidecar.url switched
// to a second `okt sidecar` process whose probe had raised Servicing before the switch, the CR stays at
// Running; an event that sidecar raises after the switch moves it. And the rule for a sidecar that lost
// its memory still holds: the same sidecar restarted without its journal, its probe raising an event at
// start, moves the CR at its next look.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { createLogger } from '../../src/controller/index.ts';
import { startOperator, type RunningOperator } from '../../src/controller/lifecycle/index.ts';
import { freePort } from '../../src/net/free-ports.ts';
import { SidecarClient } from '../../src/sidecar-client/index.ts';
import { spawnSidecarProcess, type SidecarProcess } from '../../sidecar/spawn.ts';
import { createNamespace, e2eKubeConfig, mergePatch, waitFor } from './helpers/index.ts';
import { DATABASES, conditionOf, databases, installDatabaseCrd, waitForObject, type LifecycleObject } from './helpers/lifecycle.ts';

const TOKEN = 'epoch-switch-sidecar-token-0123456789';
const NAME = 'switched';
const kc = e2eKubeConfig();
const objects = databases(kc);
let namespace: string;
let operator: RunningOperator;
const dirs: string[] = [];
const running: SidecarProcess[] = [];

/**
 * `okt sidecar` for the database graph on `port`, in `dir` (its journal there): every action succeeds at
 * once; its probe, every 100 ms, raises what the file `raise` says (`okt-event: <Event>` lines).
 */
async function sidecarIn(dir: string, port: number): Promise<{ url: string; process: SidecarProcess; raise(...events: string[]): void }> {
  const nodes = Object.fromEntries(databaseGraph.nodeNames.filter((n) => databaseGraph.node(n).hasAction).map((n) => [n, { command: { argv: ['true'] } }]));
  const config = {
    listen: { host: '127.0.0.1', port },
    tokenFile: 'token',
    journal: 'journal.jsonl',
    logLevel: 'silent',
    graphs: { [databaseGraph.name]: { probe: { command: { argv: ['sh', '-c', 'cat raise 2>/dev/null; true'] }, intervalMs: 100 }, nodes } },
  };
  writeFileSync(path.join(dir, 'token'), TOKEN);
  writeFileSync(path.join(dir, 'sidecar.json'), JSON.stringify(config));
  const started = await spawnSidecarProcess(path.join(dir, 'sidecar.json'));
  running.push(started);
  return { url: started.url, process: started, raise: (...events) => writeFileSync(path.join(dir, 'raise'), events.map((e) => `okt-event: ${e}\n`).join('')) };
}

function newDir(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'okt-epoch-switch-'));
  dirs.push(dir);
  return dir;
}

/** Until the sidecar at `url` shows `count` probe events; its observation then. */
async function probeEvents(url: string, count: number) {
  const client = new SidecarClient({ baseUrl: url, token: TOKEN, retries: 0 });
  try {
    return await waitFor(`${count} probe event(s) on ${url}`, async () => {
      const seen = await client.observe({ since: 0 });
      return seen.events.length >= count ? seen : undefined;
    }, 15_000, 50);
  } finally {
    await client.close();
  }
}

async function stopSidecar(sidecar: SidecarProcess): Promise<void> {
  sidecar.child.kill('SIGTERM');
  await sidecar.exited;
}

/**
 * The operator looks at a resting CR again on any change of its object (here a label), or at the resync
 * (10 min): the probe's events reach a resting CR at its next look.
 */
let looks = 0;
async function lookAgain(): Promise<void> {
  const body = { metadata: { labels: { 'okt-test-look': String(++looks) } } };
  await kc.makeApiClient(CustomObjectsApi).patchNamespacedCustomObject({ group: DATABASES.group, version: DATABASES.version, plural: DATABASES.plural, namespace, name: NAME, body }, mergePatch);
}

const restingAtRunning = (o: LifecycleObject) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True';

/** The second sidecar's place, known before it starts: the operator allows its URL, and it restarts there. */
let secondDir: string;
let secondPort: number;
let secondUrl: string;
let second: Awaited<ReturnType<typeof sidecarIn>>;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-epoch-switch');
  const first = await sidecarIn(newDir(), 0);
  secondDir = newDir();
  secondPort = await freePort();
  secondUrl = `http://127.0.0.1:${secondPort}`;
  operator = await startOperator({
    kubeConfig: kc,
    graph: databaseGraph,
    resource: DATABASES,
    namespace,
    sidecar: { url: first.url, token: TOKEN, allow: [secondUrl] },
    logger: createLogger({ level: (process.env.OKT_TEST_LOG ?? 'silent') as 'silent' }),
  });
});

afterAll(async () => {
  await operator?.stop();
  await Promise.all(running.filter((p) => p.child.exitCode === null && p.child.signalCode === null).map(stopSidecar));
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

test('spec.sidecar.url switched to a sidecar whose probe raised Servicing before: the CR stays at Running; an event raised after the switch moves it', async () => {
  await objects.create(namespace, NAME, { desiredState: 'Running', onLeaf: 'Keep' });
  const resting = await waitForObject(objects, namespace, NAME, 'Ready at Running on the first sidecar', restingAtRunning);
  const transitions = resting.status!.transition;

  // Started after the CR's last look at the first sidecar, it has a life of its own before the switch.
  second = await sidecarIn(secondDir, secondPort);
  second.raise('Servicing');
  const before = await probeEvents(second.url, 1);

  await objects.patchSpec(namespace, NAME, { sidecar: { url: secondUrl } });
  const met = await waitForObject(objects, namespace, NAME, `reading the second sidecar (epoch ${before.epoch})`, (o) => o.status?.observedEpoch === before.epoch);
  expect(met.status).toMatchObject({ state: 'Running', transition: transitions, observedSequence: before.lastSeq });

  // A new event on the second sidecar (its probe's events change): news, at the CR's next look.
  second.raise('Servicing', 'Servicing');
  await probeEvents(second.url, 3);
  await lookAgain();
  // Servicing's action ends at once, and the CR goes back to its desired Running.
  const moved = await waitForObject(objects, namespace, NAME, 'through Servicing and back at Running', (o) => restingAtRunning(o) && o.status!.transition === transitions + 2);
  expect(moved.status?.path.slice(-3)).toEqual(['Running', 'Servicing', 'Running']);
});

test('the second sidecar restarted without its journal, its probe raising Servicing at start: news at the CR\'s next look', async () => {
  const resting = await waitForObject(objects, namespace, NAME, 'Ready at Running on the second sidecar', restingAtRunning);
  const transitions = resting.status!.transition;
  await stopSidecar(second.process);
  rmSync(path.join(secondDir, 'journal.jsonl'));
  second = await sidecarIn(secondDir, secondPort);
  const restarted = await probeEvents(second.url, 1);
  expect(restarted.epoch).not.toBe(resting.status?.observedEpoch);
  await lookAgain();
  const moved = await waitForObject(objects, namespace, NAME, 'moved by the restarted sidecar\'s event, and back at Running', (o) => restingAtRunning(o) && o.status!.transition === transitions + 2);
  expect(moved.status?.path.slice(-3)).toEqual(['Running', 'Servicing', 'Running']);
  expect(moved.status?.observedEpoch).toBe(restarted.epoch);
});
