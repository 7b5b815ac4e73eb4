import { openSync, closeSync, readFileSync, rmSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Whether a process with this pid exists (signal 0 checks without sending anything). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A lock file holding the owner's pid, created exclusively. Waits while a live process holds it; takes
 * over a lock whose owner has died. Returns the release function.
 */
export async function acquireLock(path: string, onWait: (ownerPid: number) => void): Promise<() => void> {
  let announced = false;
  for (;;) {
    try {
      const fd = openSync(path, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(path, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const text = readFileSync(path, 'utf8').trim();
    if (text === '') {
      await sleep(100); // created but its pid not yet written
      continue;
    }
    const owner = Number(text);
    if (!Number.isInteger(owner) || owner <= 0 || !isAlive(owner)) {
      rmSync(path, { force: true });
      continue;
    }
    if (!announced) onWait(owner);
    announced = true;
    await sleep(1000);
  }
}
