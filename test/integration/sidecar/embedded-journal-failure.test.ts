// An embedded sidecar (startSidecar, the public API) whose journal fails while an action runs: it
// stops that action, answers 503 journal-failed (never a Running operation at once, which a
// long-poll would ask again and again) and fails its health checks until closed; started again on
// the journal, it reports the operation Interrupted.
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { parseSidecarConfig, startSidecar, type JournalIOError } from '../../../sidecar/index.ts';
import { isRunning } from '../../../src/util/processes.ts';
import { SidecarClient } from '../../../src/sidecar-client/index.ts';
import { TOKEN, baseConfig, eventually, makeDir, removeDirs } from './helpers.ts';

afterAll(removeDirs);

const sh = (script: string) => ({ command: { argv: ['sh', '-c', script] } });

async function get(url: string): Promise<{ status: number; body: { type?: string; status?: string; phase?: string } }> {
  const response = await request(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: response.statusCode, body: (await response.body.json()) as { type?: string; status?: string } };
}

describe('an embedded sidecar whose journal fails', () => {
  it('stops its running action and answers 503 journal-failed until closed; started again, the operation is Interrupted', async () => {
    const dir = makeDir();
    const journal = path.join(dir, 'journal.jsonl');
    const config = parseSidecarConfig(
      baseConfig(
        dir,
        {
          demo: {
            nodes: {
              Slow: sh('echo $$ > slow.pid; while [ ! -e go ]; do sleep 0.05; done'),
              Fill: sh('printf "%0300d\\n" 0'),
            },
          },
        },
        // Rewritten once it passes 1 KiB: a rewrite that cannot be written fails the journal.
        { journalCompactionBytes: 1024, maxActiveOperations: 2 },
      ),
      dir,
    );
    let failure: JournalIOError | undefined;
    const sidecar = await startSidecar(config, { onJournalFailure: (error) => (failure = error) });
    const client = new SidecarClient({ baseUrl: sidecar.url, token: TOKEN, retries: 0 });
    try {
      await client.startOperation('slow', { node: 'Slow' });
      const slowPid = await eventually(() => existsSync(path.join(dir, 'slow.pid')) && Number(readFileSync(path.join(dir, 'slow.pid'), 'utf8')), 'the slow action');
      mkdirSync(`${journal}.compacting`); // where the rewrite writes: it cannot
      for (let i = 0; failure === undefined && i < 20; i++) {
        await client.startOperation(`fill-${i}`, { node: 'Fill' }).then(
          (op) => client.waitForOperation(op.id, { timeoutMs: 5_000 }),
          () => undefined, // refused once the journal has failed
        );
      }
      expect(failure?.message).toMatch(/^journal .*journal\.jsonl: cannot rewrite it: EISDIR/);
      await eventually(() => !isRunning(slowPid), 'the running action to be stopped');
      writeFileSync(path.join(dir, 'go'), ''); // its program would have ended now: it has no end to journal

      const started = Date.now();
      const poll = await get(`${sidecar.url}/v1/operations/slow?wait=3000`);
      expect(poll).toMatchObject({ status: 503, body: { type: 'urn:okt:sidecar:problem:journal-failed' } });
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(await get(`${sidecar.url}/healthz`)).toEqual({ status: 503, body: { status: 'failed' } });
      expect(await get(`${sidecar.url}/readyz`)).toEqual({ status: 503, body: { status: 'failed' } });
    } finally {
      await client.close();
      await sidecar.close();
    }

    rmSync(`${journal}.compacting`, { recursive: true }); // the disk is writable again
    const again = await startSidecar(config);
    try {
      expect(again.operations.get('slow')).toMatchObject({ phase: 'Failed', reason: 'Interrupted' });
    } finally {
      await again.close();
    }
  });
});
