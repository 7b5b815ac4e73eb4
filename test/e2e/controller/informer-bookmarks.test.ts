// What watch bookmarks change for an informer. A watch filtered to a few objects (a namespace, a shard's
// label selector) hears nothing of the writes to the others, so without bookmarks its resume point is
// its last event: once the API server's watch history has moved past it (at least 75 s of events are
// kept, kube-apiserver's watch cache), renewing the watch is refused (410 Gone) and the informer lists
// everything again. With bookmarks the server moves the resume point along: kube-apiserver sends one
// 2 s before the end the watch asked for (and about every minute), carrying its current resourceVersion.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger, Informer } from '../../../src/controller/index.ts';
import { KubeTransport, type ResourceRef, type WatchEvent } from '../../../src/kube/transport/index.ts';
import { createNamespace, e2eKubeConfig, waitFor } from '../helpers/index.ts';
import { gadget, setUpGadgets, type Gadget } from './fixture.ts';

const group = 'bookmarks.controller.okt.dev';
const quiet = createLogger({ level: 'silent' });
let transport: KubeTransport;
let resource: ResourceRef;

beforeAll(async () => {
  ({ transport, resource } = await setUpGadgets(group));
});
afterAll(async () => {
  await transport?.close();
});

/**
 * Each watch asks to end after this long. The server's bookmark is due 2 s before that end, counted
 * from the request's start: a watch registered later than that (a loaded 2-core machine, the whole e2e
 * suite beside it: seen with 3 s) gets none, so the watch is long enough to leave room.
 */
const WATCH_SECONDS = 6;

/** kube-apiserver's resourceVersions are etcd revisions: comparable as numbers on this server (clients must not rely on it). */
const revision = (resourceVersion: string) => BigInt(resourceVersion);

describe('Informer and watch bookmarks (Kubernetes 1.37.2: a bookmark 2 s before the watch ends)', () => {
  it("a quiet watch's resume point follows the writes it never sees, so each renewal needs no LIST", async () => {
    const kc = e2eKubeConfig();
    const [watched, busy] = [await createNamespace(kc, 'bookmarked'), await createNamespace(kc, 'busy')];
    await transport.create(resource, watched, gadget(group, watched, 'quiet'));
    // A transport of its own, to count the informer's requests alone.
    const own = await KubeTransport.fromKubeConfig(kc);
    const informer = new Informer<Gadget>({ transport: own, resource, namespace: watched, logger: quiet, watchTimeoutSeconds: WATCH_SECONDS, watchIdleTimeoutMs: 20_000 });
    const seen: string[] = [];
    informer.addHandler({ onAdd: (o) => seen.push(`add ${o.metadata.name}`), onChange: (o) => seen.push(`change ${o.metadata.name}`), onDelete: (o) => seen.push(`delete ${o.metadata.name}`) });
    informer.start();
    try {
      await informer.waitForSync();
      const listed = informer.resourceVersion;
      // Without bookmarks, a watch of the quiet namespace from the same point hears nothing of what follows.
      const unbookmarked = collect(own.watch<Gadget>(resource, { namespace: watched, resourceVersion: listed, allowWatchBookmarks: false, timeoutSeconds: WATCH_SECONDS }));

      let last = '';
      for (let i = 0; i < 100; i++) last = (await transport.create(resource, busy, gadget(group, busy, `busy-${i}`))).metadata.resourceVersion ?? '';
      await waitFor('a bookmark to carry the informer past the writes it does not watch', async () => (revision(informer.resourceVersion) >= revision(last) ? true : undefined), 40_000, 50);
      const renewals = informer.stats.watches;
      await waitFor('two more renewals of the watch', async () => (informer.stats.watches >= renewals + 2 ? true : undefined), 40_000, 50);

      expect(await unbookmarked, 'a watch without bookmarks: nothing, so its resume point stays where it was').toEqual([]);
      expect(seen).toEqual(['add quiet']);
      expect(informer.stats).toMatchObject({ lists: 1, relists: 0, failures: 0, idleTimeouts: 0 });
      expect(own.counters.byVerb.list).toBe(1);
    } finally {
      await informer.stop();
      await own.close();
    }
  });
});

async function collect(stream: AsyncGenerator<WatchEvent<Gadget>>): Promise<string[]> {
  const events: string[] = [];
  for await (const event of stream) events.push(`${event.type} ${event.object.metadata.resourceVersion ?? ''}`);
  return events;
}
