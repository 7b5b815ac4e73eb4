// `okt run --sidecar-token-file` on a file laid out as the kubelet mounts a Secret: rotating the token
// (sidecar and operator together, as both mount the same Secret) heals without restarting the operator.
import { mkdirSync, mkdtempSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { parseSidecarConfig } from '../../sidecar/config.ts';
import { startSidecar, type RunningSidecar } from '../../sidecar/server.ts';
import { createNamespace, e2eKubeConfig } from './helpers/index.ts';
import { conditionOf, databases, installDatabaseCrd, waitForDatabase } from './helpers/lifecycle.ts';
import { killHard, spawnOperator } from './helpers/operator-process.ts';

const kc = e2eKubeConfig();
const api = databases(kc);
let namespace: string;
let secretDir: string;
let sidecarDir: string;

beforeAll(async () => {
  await installDatabaseCrd(kc);
  namespace = await createNamespace(kc, 'okt-token-rotation');
  secretDir = mkdtempSync(path.join(tmpdir(), 'okt-secret-volume-'));
  sidecarDir = mkdtempSync(path.join(tmpdir(), 'okt-rotating-sidecar-'));
});
afterAll(() => {
  rmSync(secretDir, { recursive: true, force: true });
  rmSync(sidecarDir, { recursive: true, force: true });
});

/**
 * What the kubelet does to a Secret volume: the data goes into a new timestamped directory, the
 * `..data` symlink is swapped to it atomically (a rename), `token` links through `..data`, and the old
 * directory goes.
 */
function writeSecretVolume(dir: string, token: string): string {
  const data = path.join(dir, '..data');
  let previous: string | undefined;
  try {
    previous = readlinkSync(data);
  } catch {
    previous = undefined;
  }
  const stamp = `..${Date.now()}_${Math.random().toString(36).slice(2)}`;
  mkdirSync(path.join(dir, stamp));
  writeFileSync(path.join(dir, stamp, 'token'), token);
  symlinkSync(stamp, path.join(dir, '..data_tmp'));
  renameSync(path.join(dir, '..data_tmp'), data);
  if (previous === undefined) symlinkSync(path.join('..data', 'token'), path.join(dir, 'token'));
  else rmSync(path.join(dir, previous), { recursive: true, force: true });
  return path.join(dir, 'token');
}

/** A real sidecar whose actions succeed at once, reading its token from the Secret volume (once, at start) and keeping its journal across restarts. */
function startRotatingSidecar(tokenFile: string, port: number): Promise<RunningSidecar> {
  const nodes: Record<string, unknown> = {};
  for (const name of databaseGraph.nodeNames) if (databaseGraph.node(name).hasAction) nodes[name] = { command: { argv: ['true'] }, onSuccess: [] };
  const config = { listen: { host: '127.0.0.1', port }, tokenFile, journal: 'journal.jsonl', logLevel: 'silent', graphs: { [databaseGraph.name]: { nodes } } };
  return startSidecar(parseSidecarConfig(config, sidecarDir));
}

describe('a rotated operator-wide token file', () => {
  test('is picked up after the sidecar refuses the old token: a CR still converges, the operator never restarts', async () => {
    const tokenFile = writeSecretVolume(secretDir, 'first-token-0123456789abcdef');
    let sidecar = await startRotatingSidecar(tokenFile, 0);
    const port = Number(new URL(sidecar.url).port);
    const operator = spawnOperator({ namespace, sidecarUrl: sidecar.url, token: '', tokenFile });
    try {
      await api.create(namespace, 'rotated', { desiredState: 'Running', onLeaf: 'Keep' });
      await withOutputOf(operator, waitForDatabase(kc, namespace, 'rotated', 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True'));

      // The Secret is rotated: the sidecar restarts with the new token (same port, same journal), the
      // operator's file changes under it.
      writeSecretVolume(secretDir, 'second-token-0123456789abcdef');
      await sidecar.close();
      sidecar = await startRotatingSidecar(tokenFile, port);
      await api.patchSpec(namespace, 'rotated', { desiredState: 'Servicing' });

      // The operator's first call to the new sidecar carries the cached old token (read < 60 s ago, never
      // refused): it is refused (401), the file is read again and the CR goes on within seconds, not
      // after the 60 s of a refusal of a fixed token (nor at the file's max age, also 60 s).
      const db = await withOutputOf(operator, waitForDatabase(kc, namespace, 'rotated', 'Ready at Servicing', (o) => o.status?.state === 'Servicing' && conditionOf(o, 'Ready')?.status === 'True', 30_000));
      expect(db.status?.path).toEqual(['Start', 'Running', 'Servicing']);
      expect(sidecar.operations.get(`${db.metadata.uid}-2`)).toMatchObject({ phase: 'Succeeded', attempts: 1 });
      expect(operator.exitCode).toBeNull();
    } finally {
      await killHard(operator);
      await sidecar.close();
    }
  });
});

/** A failed wait says what the operator logged, so that a failure on CI can be understood. */
async function withOutputOf<T>(operator: { output(): string }, wait: Promise<T>): Promise<T> {
  try {
    return await wait;
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}\noperator log (tail):\n${operator.output().slice(-4000)}`);
  }
}
