import { spawnSync } from 'node:child_process';

/** How long an install waits for another apt-get (another okt process installing a package) to finish. */
const APT_LOCK_WAIT_S = 300;

/**
 * Installs Debian packages with apt-get (as root). Other processes may run apt-get meanwhile (a test
 * installing chromium while another installs postgresql-15): `apt-get update` fails at once on the
 * package lists' lock, so it is tried again until APT_LOCK_WAIT_S; the install waits for dpkg's lock.
 * A failure throws with apt-get's own last words.
 */
export function aptGetInstall(packages: readonly string[]): void {
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const deadline = Date.now() + APT_LOCK_WAIT_S * 1000;
  for (;;) {
    const update = spawnSync('apt-get', ['update'], { env, encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
    if (update.status === 0) break;
    if (!/Could not get lock/.test(update.stderr) || Date.now() > deadline) throw aptError('update', update.stderr);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2_000);
  }
  const install = spawnSync('apt-get', ['-o', `DPkg::Lock::Timeout=${APT_LOCK_WAIT_S}`, 'install', '-y', '--no-install-recommends', ...packages], {
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (install.status !== 0) throw aptError(`install ${packages.join(' ')}`, install.stderr);
}

function aptError(what: string, stderr: string): Error {
  const said = stderr.trim().split('\n').slice(-3).join(' / ');
  return new Error(`apt-get ${what} failed: ${said || 'no message'}`);
}
