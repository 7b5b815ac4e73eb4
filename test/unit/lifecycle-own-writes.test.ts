// Which updates the watch brings are news to the lifecycle controller, and which are its own writes'
// echoes (src/controller/lifecycle/own-writes.ts).
import { describe, expect, test } from 'vitest';
import { OwnWrites } from '../../src/controller/lifecycle/own-writes.ts';
import type { KubeObject } from '../../src/kube/transport/index.ts';

const KEY = 'ns/db';
const at = (resourceVersion: string, state: string): KubeObject => ({ apiVersion: 'okt.dev/v1alpha1', kind: 'Database', metadata: { namespace: 'ns', name: 'db', resourceVersion }, status: { state } });

/** Own writes whose `lookAgain` records the keys it was asked to look at again. */
function ownWrites(): { writes: OwnWrites<KubeObject>; lookedAgain: string[] } {
  const lookedAgain: string[] = [];
  return { writes: new OwnWrites<KubeObject>((key) => lookedAgain.push(key)), lookedAgain };
}

/** A write whose answer waits until `answer` is called: what the watch brings meanwhile is seen during it. */
function pendingWrite(writes: OwnWrites<KubeObject>, from: KubeObject, answer: KubeObject): { answer: () => Promise<KubeObject> } {
  let resolve!: (obj: KubeObject) => void;
  const written = writes.write(from, () => new Promise((r) => (resolve = r)));
  return { answer: () => (resolve(answer), written) };
}

describe('own writes and their echoes', () => {
  test("a write's echo is no news, before its answer or after it", async () => {
    const { writes, lookedAgain } = ownWrites();
    await writes.write(at('10', 'Running'), async () => at('11', 'Servicing'));
    expect(writes.isNews(at('11', 'Servicing'))).toBe(false);
    const during = pendingWrite(writes, at('11', 'Servicing'), at('12', 'End'));
    expect(writes.isNews(at('12', 'End'))).toBe(false);
    await during.answer();
    expect(lookedAgain).toEqual([]);
  });

  test("an earlier write's echo arriving while the next write is in flight is no news (the next write was made over it)", async () => {
    const { writes, lookedAgain } = ownWrites();
    await writes.write(at('10', 'Running'), async () => at('11', 'Servicing'));
    // The watch is behind: the first write's echo comes during the second write.
    const during = pendingWrite(writes, at('11', 'Servicing'), at('12', 'End'));
    expect(writes.isNews(at('11', 'Servicing'))).toBe(false);
    await during.answer();
    expect(lookedAgain).toEqual([]);
  });

  test("an earlier write's echo arriving after the next write's answer is no news, nor is that write's own echo after it", async () => {
    const { writes } = ownWrites();
    await writes.write(at('10', 'Running'), async () => at('11', 'Servicing'));
    await writes.write(at('11', 'Servicing'), async () => at('12', 'End'));
    expect(writes.isNews(at('11', 'Servicing'))).toBe(false);
    expect(writes.current(KEY, at('11', 'Servicing'))?.metadata.resourceVersion).toBe('12');
    expect(writes.isNews(at('12', 'End'))).toBe(false);
  });

  test("another writer's change is news: after the last write, or during one (looked at once its answer is in)", async () => {
    const { writes, lookedAgain } = ownWrites();
    await writes.write(at('10', 'Running'), async () => at('11', 'Servicing'));
    expect(writes.isNews(at('12', 'Servicing'))).toBe(true);
    // Made after the write (a change before it would have failed it: 409), seen before its answer.
    const during = pendingWrite(writes, at('12', 'Servicing'), at('13', 'End'));
    expect(writes.isNews(at('14', 'End'))).toBe(false);
    await during.answer();
    expect(lookedAgain).toEqual([KEY]);
  });

  test('an update arriving during a write that fails is looked at again', async () => {
    const { writes, lookedAgain } = ownWrites();
    const failing = writes.write(at('10', 'Running'), () => new Promise((_, reject) => setTimeout(() => reject(new Error('409 Conflict')), 10)));
    expect(writes.isNews(at('11', 'Running'))).toBe(false);
    await expect(failing).rejects.toThrow('409');
    expect(lookedAgain).toEqual([KEY]);
  });

  test('with no write of its own, every update is news', () => {
    expect(ownWrites().writes.isNews(at('10', 'Running'))).toBe(true);
  });
});
