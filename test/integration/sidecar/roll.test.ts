// Changing a sidecar's config as docs/sidecar.md ("Changing its config") says, with real `okt sidecar`
// processes: the new config is checked by a start beside the running one (which it leaves alone),
// the running action is waited for, not interrupted, and the sidecar restarted on its journal with
// the new config keeps its epoch and its operations and runs the new actions. A SIGTERM during an
// action, the thing the steps avoid, leaves it Interrupted.
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { okt } from '../../fixtures/okt-process.ts';
import { baseConfig, eventually, makeDir, sidecarProcesses, type SpawnedSidecar } from './helpers.ts';

const { start, stopAll } = sidecarProcesses();
afterAll(stopAll);

const sh = (script: string) => ({ command: { argv: ['sh', '-c', script] } });
const SLOW = sh('while [ ! -e go ]; do sleep 0.05; done; echo "$OKT_OPERATION_ID" >> slow-runs');

async function stop(sidecar: SpawnedSidecar): Promise<void> {
  sidecar.process.child.kill('SIGTERM');
  expect(await sidecar.process.exited).toBe(0);
}

describe('a sidecar rolled to a new config', () => {
  it('by the documented steps: checked beside the running one, its action waited for, restarted on the journal', async () => {
    const dir = makeDir();
    const oldConfig = path.join(dir, 'old.json');
    const newConfig = path.join(dir, 'new.json');
    const typo = path.join(dir, 'typo.json');
    writeFileSync(oldConfig, JSON.stringify(baseConfig(dir, { demo: { nodes: { Slow: SLOW } } })));
    writeFileSync(newConfig, JSON.stringify(baseConfig(dir, { demo: { nodes: { Slow: SLOW, Added: sh('echo added > added') } } })));
    writeFileSync(typo, JSON.stringify(baseConfig(dir, { demo: { nodes: { Added: { comand: { argv: ['true'] } } } } })));
    const old = await start(oldConfig);
    await old.client.startOperation('slow-1', { node: 'Slow' });

    // 1. Checked beside the running one: a bad config is named; a good one stops at the held journal.
    const bad = await okt(['sidecar', '--config', typo]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^okt sidecar: invalid sidecar config:\n {2}graphs\.demo\.nodes\.Added: needs one of command, http, module\n/);
    const good = await okt(['sidecar', '--config', newConfig]);
    expect(good.code).toBe(2);
    expect(good.stderr).toMatch(/^okt sidecar: journal .* is held by another okt sidecar/);

    // 3. Waited for: it runs until it ends by itself, then none is active.
    expect((await old.client.observe({ graph: 'demo' })).activeOperations).toEqual(['slow-1']);
    writeFileSync(path.join(dir, 'go'), '');
    const slow = await old.client.waitForOperation('slow-1');
    expect(slow).toMatchObject({ phase: 'Succeeded' });
    expect((await old.client.observe({ graph: 'demo' })).activeOperations).toEqual([]);

    // 4. Stopped, then started with the new config on the same journal.
    await stop(old);
    const rolled = await start(newConfig);
    expect(await rolled.client.getOperation('slow-1')).toEqual(slow);
    await rolled.client.startOperation('added-1', { node: 'Added' });
    expect(await rolled.client.waitForOperation('added-1')).toMatchObject({ phase: 'Succeeded', epoch: slow.epoch });
    expect(existsSync(path.join(dir, 'added'))).toBe(true);
    await stop(rolled);
  });

  it('stopped during an action instead, reports it Interrupted after the restart, not run to its end', async () => {
    const dir = makeDir();
    const configFile = path.join(dir, 'sidecar.json');
    writeFileSync(configFile, JSON.stringify(baseConfig(dir, { demo: { nodes: { Slow: SLOW } } })));
    const first = await start(configFile);
    await first.client.startOperation('slow-1', { node: 'Slow' });
    await eventually(async () => (await first.client.getOperation('slow-1')).phase === 'Running', 'the action to run');
    await stop(first);
    writeFileSync(path.join(dir, 'go'), '');
    const again = await start(configFile);
    expect(await again.client.getOperation('slow-1')).toMatchObject({ phase: 'Failed', reason: 'Interrupted' });
    expect(existsSync(path.join(dir, 'slow-runs'))).toBe(false);
    await stop(again);
  });
});
