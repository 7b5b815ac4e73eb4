// `okt ui` as a person sees it: the command started as a process against the real control plane, CRs
// walked by a real operator, the page opened in a real headless Chromium (Debian's), and a CR moved
// while the page stays open.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { CoreV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { readyGraph } from '../fixtures/ready-graph.ts';
import { applyGraphCrd, e2eKubeConfig, e2eKubeconfigPath, mergePatch, waitFor } from './helpers/index.ts';
import { ensureChromium, launchChromium, type Browser, type Page } from './helpers/chromium.ts';
import { conditionOf, DATABASES, installDatabaseCrd, lifecycleObjects, startLocalOperator, waitForObject, waitForObjectGone, type LifecycleObject, type LocalOperator } from './helpers/lifecycle.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Where the test leaves its screenshots (.okt/ is ignored by git). */
const SHOTS = path.join(ROOT, '.okt');
const kc = e2eKubeConfig();
const databases = lifecycleObjects(kc, DATABASES);
let local: LocalOperator;
/** The operator of the vault CRs, whose graph makes objects (a PVC while at Running). */
let vaultOperator: LocalOperator | undefined;
let ui: ChildProcess & { output: () => string };
let browser: Browser | undefined;

const readyAt = (state: string) => (o: LifecycleObject) => o.status?.state === state && conditionOf(o, 'Ready')?.status === 'True' && o.status.observedGeneration === o.metadata.generation;

beforeAll(async () => {
  // On a fresh machine (CI's) this installs Debian's chromium: a minute or two, within the hook's time.
  ensureChromium();
  await installDatabaseCrd(kc);
  // Stopping's action never ends by itself: a CR there shows a running operation.
  local = await startLocalOperator(kc, { graph: databaseGraph, resource: DATABASES, namespacePrefix: 'okt-ui', hang: ['Stopping'], maxActiveOperations: 8 });
  const { namespace } = local;
  await Promise.all([
    databases.create(namespace, 'orders', { desiredState: 'Running' }),
    databases.create(namespace, 'billing', { desiredState: 'Running' }),
    databases.create(namespace, 'archive', { desiredState: 'End', onLeaf: 'Keep' }),
    databases.create(namespace, 'legacy', { desiredState: 'End', onLeaf: 'Keep' }),
  ]);
  await Promise.all([
    waitForObject(databases, namespace, 'orders', 'Ready at Running', readyAt('Running')),
    waitForObject(databases, namespace, 'billing', 'Ready at Running', readyAt('Running')),
    waitForObject(databases, namespace, 'archive', 'Ready at End', readyAt('End')),
    waitForObject(databases, namespace, 'legacy', 'Ready at End', readyAt('End')),
  ]);
  // End is a leaf: nothing leads back to Running, so legacy stalls there.
  await databases.patchSpec(namespace, 'legacy', { desiredState: 'Running' });
  await waitForObject(databases, namespace, 'legacy', 'Stalled', (o) => conditionOf(o, 'Stalled')?.status === 'True');
}, 600_000);

afterAll(async () => {
  await browser?.close();
  if (ui && ui.exitCode === null && ui.signalCode === null) {
    const exited = new Promise((resolve) => ui.once('exit', resolve));
    ui.kill('SIGKILL');
    await exited;
  }
  await local?.stop();
  await vaultOperator?.stop();
});

/** `okt ui` as a child process; resolves with the URL it says to open. */
async function startOktUi(args: string[]): Promise<string> {
  ui = Object.assign(
    spawn(path.join(ROOT, 'node_modules/.bin/node'), [path.join(ROOT, 'bin/okt.js'), 'ui', ...args], {
      cwd: ROOT, env: { ...process.env, KUBECONFIG: e2eKubeconfigPath(), NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'],
    }),
    { output: () => output },
  );
  let output = '';
  ui.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  ui.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return waitFor('okt ui to say where its page is', async () => {
    if (ui.exitCode !== null) throw new Error(`okt ui exited (${ui.exitCode}):\n${output}`);
    return /^open (http:\/\/\S+)$/m.exec(output)?.[1];
  }, 30_000, 50);
}

/** The `data-cr` chips drawn on `node`, by name. */
function onNode(page: Page, node: string): Promise<string[]> {
  return page.evaluate<string[]>(`Array.from(document.querySelectorAll('.node[data-node="${node}"] .cr')).map((c) => c.getAttribute('data-cr').split('/')[1]).sort()`);
}

test('okt ui shows every CR on its node and follows a move live, in a real browser', async () => {
  const { namespace } = local;
  const url = await startOktUi(['databases.okt.dev', '-n', namespace, '--port', '0']);
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
  expect(ui.output()).toContain(`okt ui: databases.okt.dev in namespace ${namespace}, live`);

  browser = await launchChromium();
  const page = await browser.open(url, { width: 1280, height: 720 });
  await page.waitFor('the four CRs', `document.querySelectorAll('.node .cr').length === 4`);
  expect(await onNode(page, 'Running')).toEqual(['billing', 'orders']);
  expect(await onNode(page, 'End')).toEqual(['archive', 'legacy']);
  expect(await onNode(page, 'Start')).toEqual([]);
  const health = (name: string) => page.evaluate<string>(`document.querySelector('[data-cr="${namespace}/${name}"]').getAttribute('data-health')`);
  expect(await health('orders')).toBe('ready');
  expect(await health('legacy')).toBe('stalled');
  expect(await page.evaluate<string>(`document.getElementById('live').textContent`)).toBe('live');
  // The graph is drawn: every node of the database graph, and its edges.
  expect(await page.evaluate<string[]>(`Array.from(document.querySelectorAll('.node')).map((n) => n.getAttribute('data-node')).sort()`)).toEqual([...databaseGraph.nodeNames].sort());
  expect(await page.evaluate<number>(`document.querySelectorAll('.graph path.edge').length`)).toBe(6);

  // The page is left as it is (a mark on its window survives only without a reload) while orders moves.
  await page.evaluate(`window.__sameDocument = true`);
  await databases.patchSpec(namespace, 'orders', { desiredState: 'Stopping' });
  await page.waitFor('orders on Stopping', `!!document.querySelector('.node[data-node="Stopping"] [data-cr="${namespace}/orders"]')`);
  expect(await onNode(page, 'Running')).toEqual(['billing']);
  await page.waitFor('its running action', `document.querySelector('[data-cr="${namespace}/orders"]').classList.contains('running')`);
  await page.waitFor('the transition among the events', `Array.from(document.querySelectorAll('#events li')).some((li) => li.textContent.includes('orders') && li.textContent.includes('Running → Stopping on [Stopping]'))`);
  expect(await page.evaluate<boolean>(`window.__sameDocument === true`)).toBe(true);

  // A click shows the CR's details.
  await page.evaluate(`document.querySelector('[data-cr="${namespace}/orders"]').click()`);
  const detail = await page.waitFor<string>('the details of orders', `document.getElementById('detail').getAttribute('data-cr') === '${namespace}/orders' && /action of Stopping/.test(document.getElementById('detail').innerText) && document.getElementById('detail').innerText`);
  expect(detail).toMatch(/desired\s+Stopping/);
  expect(detail).toMatch(/operation\s+(Pending|Running), action of Stopping, started \d+s ago/);
  expect(detail).toMatch(/last transition\s+Running → Stopping on \[Stopping\]/);
  expect(detail).toContain('Conditions');
  expect(await page.evaluate<boolean>(`document.querySelector('.node[data-node="Stopping"]').classList.contains('occupied')`)).toBe(true);

  mkdirSync(SHOTS, { recursive: true });
  const shot = path.join(SHOTS, 'okt-ui.png');
  await page.screenshot(shot);
  process.stderr.write(`okt ui e2e: screenshot in ${shot}\n`);

  // A deleted CR goes off the page (at a leaf, its finalizer comes off at once).
  await databases.remove(namespace, 'archive');
  await waitForObjectGone(databases, namespace, 'archive');
  await page.waitFor('archive gone', `!document.querySelector('[data-cr="${namespace}/archive"]')`);
  await page.waitFor('its deletion among the events', `Array.from(document.querySelectorAll('#events li')).some((li) => li.getAttribute('data-kind') === 'deleted' && li.textContent.includes('archive'))`);

  // Everything the page loaded came from okt ui itself, and nothing failed in it.
  const origin = new URL(url).origin;
  expect(page.requests.length).toBeGreaterThanOrEqual(3);
  expect(page.requests.filter((r) => !r.startsWith(`${origin}/`))).toEqual([]);
  expect(page.errors).toEqual([]);

  // Ctrl-C: it stops cleanly.
  const exited = new Promise<number | null>((resolve) => ui.once('exit', (code) => resolve(code)));
  ui.kill('SIGINT');
  expect(await exited).toBe(0);
});

// A group of its own: no other test's operator of the vault graph looks at these CRs.
const VAULTS = { group: 'ui.okt.dev', version: 'v1alpha1', plural: 'vaults', kind: 'Vault' } as const;

test('okt ui shows each object of a CR with its readiness, and why one is not ready, following it live', async () => {
  await applyGraphCrd(kc, readyGraph, VAULTS);
  vaultOperator = await startLocalOperator(kc, { graph: readyGraph, resource: VAULTS, namespacePrefix: 'okt-ui-objects' });
  const { namespace } = vaultOperator;
  const vaults = lifecycleObjects(kc, VAULTS);
  await vaults.create(namespace, 'safe', { desiredState: 'Running' });
  // Its action waits for the PVC, which no controller binds here.
  await waitForObject(vaults, namespace, 'safe', 'waiting for its PVC', (o) => conditionOf(o, 'Ready')?.reason === 'ObjectsNotReady' && o.status?.objects?.length === 1);

  const url = await startOktUi([`vaults.${VAULTS.group}`, '-n', namespace, '--port', '0']);
  browser ??= await launchChromium();
  const page = await browser.open(url, { width: 1280, height: 720 });
  await page.waitFor('the CR', `!!document.querySelector('[data-cr="${namespace}/safe"]')`);
  await page.evaluate(`document.querySelector('[data-cr="${namespace}/safe"]').click()`);
  const row = `document.querySelector('#detail .objects tr[data-object="data"]')`;
  const waiting = await page.waitFor<string>('the PVC, in progress', `${row} && /InProgress/.test(${row}.innerText) && ${row}.innerText`);
  expect(waiting).toContain('PersistentVolumeClaim safe-data');
  expect(waiting).toContain('object "data"');
  expect(waiting).toContain('PVC is not Bound. phase: Pending');

  // Bound as its controller would: the page, left open, says so.
  await kc.makeApiClient(CoreV1Api).patchNamespacedPersistentVolumeClaimStatus({ namespace, name: 'safe-data', body: { status: { phase: 'Bound' } } }, mergePatch);
  const ready = await page.waitFor<string>('the PVC, ready', `${row} && /Ready/.test(${row}.innerText) && ${row}.innerText`);
  expect(ready).not.toContain('PVC is not Bound');
  expect(page.errors).toEqual([]);

  const exited = new Promise<number | null>((resolve) => ui.once('exit', (code) => resolve(code)));
  ui.kill('SIGINT');
  expect(await exited).toBe(0);
});
