import { existsSync } from 'node:fs';
import path from 'node:path';
import { aptGetInstall } from '../../../src/util/apt.ts';

/** Where Debian's postgresql-15 puts its programs (pg.sh uses the same). */
export const POSTGRES_BIN = '/usr/lib/postgresql/15/bin';

/**
 * Installs Debian's postgresql-15 when it is missing, as root through apt-get; elsewhere it says what
 * to install by hand.
 */
export function ensurePostgresInstalled(log: (line: string) => void = () => {}): void {
  if (existsSync(path.join(POSTGRES_BIN, 'postgres'))) return;
  if (process.getuid?.() !== 0 || !existsSync('/usr/bin/apt-get')) {
    throw new Error(`PostgreSQL 15 is not installed (${POSTGRES_BIN}/postgres is missing): install Debian's postgresql-15, e.g. sudo apt-get install postgresql-15`);
  }
  log('installing postgresql-15 with apt-get (once)');
  aptGetInstall(['postgresql-15']);
}
