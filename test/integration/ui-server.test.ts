// okt ui's HTTP side on loopback, without a cluster: the page and its assets from okt itself, a
// snapshot, the event stream, and the refusal of a Host that is not localhost.
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import type { LifecycleResource } from '../../src/cli/status-view.ts';
import { startUiServer, type UiServer } from '../../src/ui/server.ts';
import { UiState, type UiSnapshot } from '../../src/ui/state.ts';

const state = new UiState({
  title: { kind: 'Database', crd: 'databases.okt.dev', version: 'v1alpha1', namespace: 'demo' },
  graphs: [databaseGraph],
  defaultRevision: databaseGraph.revision,
});
let server: UiServer;

function database(name: string, state: string): LifecycleResource {
  return {
    kind: 'Database',
    metadata: { name, namespace: 'demo', uid: `uid-${name}` },
    spec: { desiredState: state },
    status: {
      state, observedGeneration: 1, transition: 1, sequence: 1, path: ['Start', state],
      lastTransition: { from: 'Start', to: state, events: [state], time: new Date().toISOString(), generation: 1 },
      conditions: [],
    },
  };
}

beforeAll(async () => {
  state.upsert(database('pg', 'Running'));
  state.goLive();
  server = await startUiServer(state, { port: 0 });
});

afterAll(() => server?.close());

describe('okt ui server', () => {
  it('serves the page, its script and style, with a policy that allows nothing from elsewhere', async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetch(server.url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'; script-src 'self'");
    expect(await page.text()).toContain('<script src="/app.js"></script>');
    for (const [asset, type] of [['app.js', 'text/javascript'], ['app.css', 'text/css']] as const) {
      const response = await fetch(new URL(asset, server.url));
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain(type);
    }
    expect((await fetch(new URL('nope', server.url))).status).toBe(404);
  });

  it('gives a snapshot, then streams each change after it', async () => {
    const snapshot = (await (await fetch(new URL('api/snapshot', server.url))).json()) as UiSnapshot;
    expect(snapshot.resources.map((r) => [r.key, r.state])).toEqual([['demo/pg', 'Running']]);
    expect(snapshot.graphs[databaseGraph.revision]?.columns[0]).toEqual(['Start']);

    const abort = new AbortController();
    const stream = await fetch(new URL('api/stream', server.url), { signal: abort.signal });
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = '';
    const until = async (pattern: RegExp) => {
      while (!pattern.test(text)) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`stream ended before ${pattern}:\n${text}`);
        text += value;
      }
    };
    await until(/event: snapshot\ndata: .*\n\n/);
    state.upsert(database('pg', 'Stopping'));
    await until(/event: event\ndata: .*Running → Stopping.*\n\n/);
    expect(text).toMatch(/event: resource\ndata: \{"type":"resource","resource":\{"key":"demo\/pg".*"state":"Stopping"/);
    abort.abort();
  });

  it('refuses a page of another site that reaches it by a name resolving to loopback', async () => {
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(server.url, { headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await status('evil.example:80')).toBe(403);
    expect(await status(`localhost:${server.port}`)).toBe(200);
    expect(await status(`127.0.0.1:${server.port}`)).toBe(200);
  });
});
