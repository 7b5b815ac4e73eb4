// The database graph's actions and probe on a real PostgreSQL 15, through `okt sidecar --config
// graphs/database.sidecar.yaml`: Running (start), Servicing (pg_dump), Stopping. Installs Debian's
// postgresql-15 when it is missing (CI is root on Debian bookworm).
import { execFileSync } from 'node:child_process';
import { readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensurePostgresInstalled, POSTGRES_BIN } from '../../../sidecar/adapters/postgres/install.ts';
import { freePort } from '../../../src/net/free-ports.ts';
import { SidecarClient } from '../../../src/sidecar-client/index.ts';
import { REPO, TOKEN, eventually, makeDir, removeDirs, spawnSidecar, type SidecarProcess } from './helpers.ts';

const PG_SH = path.join(REPO, 'sidecar/adapters/postgres/pg.sh');

let sidecar: SidecarProcess;
let client: SidecarClient;
let env: Record<string, string>;

beforeAll(async () => {
  ensurePostgresInstalled();
  const dir = makeDir();
  env = {
    OKT_PG_DIR: path.join(dir, 'pg'),
    OKT_PG_PORT: String(await freePort()),
    OKT_SIDECAR_PORT: '0',
    OKT_SIDECAR_TOKEN_FILE: path.join(dir, 'token'),
  };
  sidecar = await spawnSidecar(path.join(REPO, 'graphs/database.sidecar.yaml'), env);
  client = new SidecarClient({ baseUrl: sidecar.url, token: TOKEN });
});

afterAll(async () => {
  await client?.close();
  if (env !== undefined) execFileSync(PG_SH, ['stop'], { env: { ...process.env, ...env } }); // in case a test failed midway
  sidecar?.child.kill('SIGTERM');
  await sidecar?.exited;
  removeDirs();
});

async function run(id: string, node: string) {
  await client.startOperation(id, { node });
  return client.waitForOperation(id, { timeoutMs: 180_000 });
}

function psql(sql: string): string {
  return execFileSync(
    'runuser',
    ['-u', 'postgres', '--', path.join(POSTGRES_BIN, 'psql'), '-h', path.join(env.OKT_PG_DIR as string, 'socket'), '-p', env.OKT_PG_PORT as string, '-U', 'postgres', '-tAc', sql],
    { encoding: 'utf8' },
  ).trim();
}

describe('database sidecar on a real PostgreSQL', () => {
  it('Running creates the cluster, starts it and raises nothing (it rests); the probe then observes Running', async () => {
    const op = await run('db-start', 'Running');
    expect(op).toMatchObject({ phase: 'Succeeded', events: [] });
    expect(psql('select 1')).toBe('1');
    await eventually(async () => (await client.observe()).state === 'Running', 'the probe to observe Running', 30_000);
  });

  it('Running again is idempotent: the server is up, nothing raised', async () => {
    expect(await run('db-running', 'Running')).toMatchObject({ phase: 'Succeeded', events: [] });
  });

  it('Servicing writes a pg_dump backup and raises nothing (it rests until the spec moves on)', async () => {
    psql('create table okt_items (id int primary key, name text); insert into okt_items values (1, $$one$$)');
    const op = await run('db-backup', 'Servicing');
    expect(op).toMatchObject({ phase: 'Succeeded', events: [] });
    const backups = path.join(env.OKT_PG_DIR as string, 'backups');
    const files = readdirSync(backups).filter((f) => f.endsWith('-db-backup.dump'));
    expect(files).toHaveLength(1);
    const dump = path.join(backups, files[0] as string);
    expect(statSync(dump).size).toBeGreaterThan(0);
    const listing = execFileSync(path.join(POSTGRES_BIN, 'pg_restore'), ['--list', dump], { encoding: 'utf8' });
    expect(listing).toMatch(/TABLE public okt_items/);
  });

  it('pg.sh verify lists the newest dump (the in-cluster demo\'s Servicing action), and fails on one pg_restore cannot read', () => {
    const pgEnv = { ...process.env, ...env };
    const backups = path.join(env.OKT_PG_DIR as string, 'backups');
    expect(execFileSync(PG_SH, ['verify'], { env: pgEnv, encoding: 'utf8' })).toMatch(/^backup verified: .*-db-backup\.dump \([1-9]\d* entries\)\n$/);
    const corrupt = path.join(backups, 'postgres-29990101T000000Z-corrupt.dump');
    writeFileSync(corrupt, 'not a dump');
    // Newer than the real one: verify takes the newest.
    utimesSync(corrupt, new Date(Date.now() + 60_000), new Date(Date.now() + 60_000));
    try {
      expect(() => execFileSync(PG_SH, ['verify'], { env: pgEnv, stdio: 'pipe' })).toThrow();
    } finally {
      rmSync(corrupt);
    }
  });

  it('Stopping shuts the server down fast and raises nothing; the probe no longer sees Running', async () => {
    expect(await run('db-stop', 'Stopping')).toMatchObject({ phase: 'Succeeded', events: [] });
    await eventually(async () => (await client.observe()).state === null, 'the probe to lose the server', 30_000);
  });

  it('Running again reuses the existing cluster and its data', async () => {
    expect(await run('db-start-2', 'Running')).toMatchObject({ phase: 'Succeeded', events: [] });
    expect(psql('select name from okt_items where id = 1')).toBe('one');
    expect(await run('db-stop-2', 'Stopping')).toMatchObject({ phase: 'Succeeded' });
  });
});
