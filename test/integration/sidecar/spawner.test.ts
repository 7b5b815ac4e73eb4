// The spawner process (sidecar/spawner-process.js): one per process, shared by the sidecars in it,
// ended with the last one closed.
import { afterAll, expect, it } from 'vitest';
import { alive, baseConfig, eventually, makeDir, removeDirs, spawnerPids, startInProcess } from './helpers.ts';

afterAll(() => removeDirs());

it('the sidecars of a process share one spawner, which ends when the last of them closes', async () => {
  const config = (dir: string) => baseConfig(dir, { demo: { nodes: { Noop: { command: { argv: ['true'] } } } } });
  const dirA = makeDir();
  const dirB = makeDir();
  const a = await startInProcess(dirA, config(dirA));
  const b = await startInProcess(dirB, config(dirB));
  const [spawner, ...others] = spawnerPids();
  expect(others).toEqual([]);
  for (const { client } of [a, b]) {
    await client.startOperation('noop-1', { node: 'Noop' });
    expect(await client.waitForOperation('noop-1')).toMatchObject({ phase: 'Succeeded' });
  }
  await a.close();
  expect(spawnerPids()).toEqual([spawner]);
  await b.close();
  await eventually(() => !alive(spawner as number), 'the spawner to end');
  expect(spawnerPids()).toEqual([]);
});
