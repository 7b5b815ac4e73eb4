// One owner per journal: `<journal>.lock`, a file naming the process that holds it (pid and, on Linux,
// the process's start time, so that a pid reused by another process is not taken for the holder). It is
// taken before the journal is read and given back when its sidecar closes or its process exits; the
// lock of a process that ended without giving it back (kill -9, a container restart) is taken over.
// Node has no flock(2): npm's lock libraries (proper-lockfile and kin) judge staleness by the lock's
// age, which would refuse a sidecar restarted at once after a kill -9; a dead pid says it at once.
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { isRunning, procStat } from '../src/util/processes.ts';
import { JournalIOError } from './journal.ts';

interface Holder {
  pid: number;
  /** Field 22 of /proc/<pid>/stat (clock ticks since boot); absent without /proc. */
  startTime?: string;
  host: string;
  since: string;
}

/** The journal is held by another live sidecar: nothing of it was read or written. */
export class JournalLockedError extends Error {
  override name = 'JournalLockedError';
  constructor(journal: string, holder: Holder) {
    const where = holder.host !== hostname() ? ` on host ${holder.host}` : holder.pid === process.pid ? ', this process' : '';
    super(
      `journal ${journal} is held by another okt sidecar (pid ${holder.pid}${where}, since ${holder.since}): stop it first` +
        (holder.host !== hostname() ? `, or remove ${lockFileOf(journal)} if it has ended` : ''),
    );
  }
}

export const lockFileOf = (journal: string) => `${journal}.lock`;

function readHolder(file: string): { text: string; holder: Holder | undefined } | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const holder = JSON.parse(text) as Holder;
    return { text, holder: Number.isInteger(holder.pid) && holder.pid > 0 ? holder : undefined };
  } catch {
    return { text, holder: undefined }; // not a lock okt wrote whole: nobody holds it
  }
}

/** Whether the process the lock names still runs (this host's processes: a lock of another host is taken as live). */
function isAlive(holder: Holder): boolean {
  return holder.host !== hostname() || isRunning(holder.pid, holder.startTime);
}

/** The live holder of a journal's lock, if any (to name it when something else is wrong, a taken port say). */
export function journalHolder(journal: string): number | undefined {
  const found = readHolder(lockFileOf(journal))?.holder;
  return found !== undefined && isAlive(found) ? found.pid : undefined;
}

export interface JournalLock {
  /** Gives the lock back (once); the process's exit does too. */
  release(): void;
}

/**
 * Takes the journal's lock, or throws JournalLockedError (held) or JournalIOError (cannot be written).
 * The lock file appears whole (written aside, then hard-linked to its name, which fails when it
 * exists), so a reader never sees half of one.
 */
export function lockJournal(journal: string): JournalLock {
  try {
    return tryLock(journal);
  } catch (error) {
    if (error instanceof JournalLockedError) throw error;
    throw new JournalIOError(journal, 'take its lock', error);
  }
}

function tryLock(journal: string): JournalLock {
  const file = lockFileOf(journal);
  mkdirSync(path.dirname(file), { recursive: true });
  const mine: Holder = { pid: process.pid, startTime: procStat(process.pid)?.startTime, host: hostname(), since: new Date().toISOString() };
  const text = JSON.stringify(mine);
  const candidate = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(candidate, text, { mode: 0o600, flag: 'wx' });
  try {
    for (let attempt = 0; attempt < 10; attempt++) {
      try {
        linkSync(candidate, file);
        return held(file, text);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const found = readHolder(file);
      if (found === undefined) continue; // given back meanwhile
      if (found.holder !== undefined && isAlive(found.holder)) throw new JournalLockedError(journal, found.holder);
      takeOver(file, found.text);
    }
    throw new Error(`cannot take the lock ${file}: other sidecars keep taking it`);
  } finally {
    unlinkSync(candidate);
  }
}

/**
 * Removes a stale lock, unless another sidecar replaced it meanwhile: it is moved aside first, and
 * put back when what was moved is not the stale one.
 */
function takeOver(file: string, staleText: string): void {
  const aside = `${file}.stale.${process.pid}`;
  try {
    renameSync(file, aside);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw error;
  }
  try {
    if (readFileSync(aside, 'utf8') !== staleText) {
      try {
        linkSync(aside, file);
      } catch {
        // taken again meanwhile: the next attempt reads its holder
      }
    }
  } finally {
    unlinkSync(aside);
  }
}

function held(file: string, text: string): JournalLock {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off('exit', release);
    try {
      if (readFileSync(file, 'utf8') === text) unlinkSync(file);
    } catch {
      // gone already
    }
  };
  process.on('exit', release);
  return { release };
}
