// One owner per journal: `<journal>.lock`, a file naming the process that holds it (pid and, on Linux,
// the process's start time, so that a pid reused by another process is not taken for the holder). It is
// taken before the journal is read and given back when its sidecar closes or its process exits; the
// lock of a process that ended without giving it back (kill -9, a container restart) is taken over.
// Another host's process cannot be asked after (a Pod replaced by one of another name on the same
// volume): the holder touches its lock every LOCK_HEARTBEAT_MS, and another host's lock left untouched
// for LOCK_STALE_MS is taken over.
// Node has no flock(2): npm's lock libraries (proper-lockfile and kin) judge staleness by the lock's
// age, which would refuse a sidecar restarted at once after a kill -9; a dead pid says it at once.
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
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
    const stale = holder.host !== hostname() ? ` (a lock of another host is taken over once untouched for ${LOCK_STALE_MS / 1000} s)` : '';
    super(`journal ${journal} is held by another okt sidecar (pid ${holder.pid}${where}, since ${holder.since}): stop it first${stale}`);
  }
}

export const lockFileOf = (journal: string) => `${journal}.lock`;

/** How often a holder touches its lock, so that another host can tell it lives. */
export const LOCK_HEARTBEAT_MS = 5_000;
/** Another host's lock untouched this long is stale (three heartbeats missed). */
export const LOCK_STALE_MS = 3 * LOCK_HEARTBEAT_MS;

interface FoundLock {
  text: string;
  holder: Holder | undefined;
  /** When its holder last touched it. */
  touchedMs: number;
}

function readHolder(file: string): FoundLock | undefined {
  let text: string;
  let touchedMs: number;
  try {
    touchedMs = statSync(file).mtimeMs;
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  try {
    const holder = JSON.parse(text) as Holder;
    return { text, touchedMs, holder: Number.isInteger(holder.pid) && holder.pid > 0 ? holder : undefined };
  } catch {
    return { text, touchedMs, holder: undefined }; // not a lock okt wrote whole: nobody holds it
  }
}

/**
 * The lock's holder while it lives: on this host, while its process runs; on another host, while it
 * touches the lock.
 */
function liveHolder(found: FoundLock | undefined, now = Date.now()): Holder | undefined {
  const holder = found?.holder;
  if (holder === undefined) return undefined;
  const alive = holder.host === hostname() ? isRunning(holder.pid, holder.startTime) : now - found!.touchedMs < LOCK_STALE_MS;
  return alive ? holder : undefined;
}

/** The live holder of a journal's lock, if any (to name it when something else is wrong, a taken port say). */
export function journalHolder(journal: string): number | undefined {
  return liveHolder(readHolder(lockFileOf(journal)))?.pid;
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
      const holder = liveHolder(found);
      if (holder !== undefined) throw new JournalLockedError(journal, holder);
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
  const heartbeat = setInterval(() => {
    try {
      const now = new Date();
      utimesSync(file, now, now);
    } catch {
      // gone (taken over after a stall): the journal's own writes report what matters
    }
  }, LOCK_HEARTBEAT_MS);
  heartbeat.unref();
  const release = () => {
    if (released) return;
    released = true;
    clearInterval(heartbeat);
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
