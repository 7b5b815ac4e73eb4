// Two okt processes installing Debian packages at once (a browser test and the PostgreSQL adapter on
// a fresh machine): the second apt-get update meets the first one's lock on the package lists and
// must wait for it, not fail the test run. The lock is held here by a real apt-style (fcntl) lock.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { aptGetInstall } from '../../src/util/apt.ts';

const HOLD_LISTS_LOCK = `
import fcntl, sys, time
f = open('/var/lib/apt/lists/lock', 'w')
fcntl.lockf(f, fcntl.LOCK_EX)
print('locked', flush=True)
time.sleep(float(sys.argv[1]))
`;

describe('aptGetInstall (as root, as CI runs)', () => {
  it('waits for another apt-get holding the package lists, then installs', async () => {
    const holder = spawn('python3', ['-c', HOLD_LISTS_LOCK, '4'], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [first] = (await once(holder.stdout!, 'data')) as [Buffer];
    expect(first.toString()).toContain('locked');
    // hostname is installed on every Debian: the install is a no-op once the lists are read.
    expect(() => aptGetInstall(['hostname'])).not.toThrow();
    const [code] = (await once(holder, 'exit')) as [number | null];
    expect(code, 'the lock was held, not refused').toBe(0);
  });
});
