// What Linux's /proc says about a process: whether it still runs, and its ancestors. Without /proc
// (macOS) these know only what process.kill(pid, 0) says.
import { readFileSync } from 'node:fs';

export interface ProcStat {
  /** Its name (at most 15 characters; a Node process's title, like `npm exec okt si`). */
  comm: string;
  /** R, S, D, ... Z for a zombie: ended, not yet reaped by its parent. */
  state: string;
  ppid: number;
  /** Clock ticks since boot: with the pid, it names one process (a pid is reused, this pair is not). */
  startTime: string;
}

/** /proc/<pid>/stat, or undefined without /proc or such a process. */
export function procStat(pid: number): ProcStat | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The name is in parentheses and may hold spaces and parentheses: the fields after the last ')'.
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  return { comm: stat.slice(stat.indexOf('(') + 1, close), state: fields[0] as string, ppid: Number(fields[1]), startTime: fields[19] as string };
}

/**
 * Whether the process still runs: not ended, not a zombie (a container's init may never reap one),
 * and, given its start time, not another process that got its pid since.
 */
export function isRunning(pid: number, startTime?: string): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  const stat = procStat(pid);
  if (stat === undefined) return true; // no /proc: the pid is all there is to go by
  return stat.state !== 'Z' && stat.state !== 'X' && (startTime === undefined || startTime === stat.startTime);
}

/**
 * The nearest ancestor of this process other than those `passedBy` says to pass (a shell between, say),
 * if it `matches` and /proc tells.
 */
export function findAncestor(matches: (stat: ProcStat) => boolean, passedBy: (stat: ProcStat) => boolean): { pid: number; stat: ProcStat } | undefined {
  for (let pid = process.ppid; pid > 1; ) {
    const stat = procStat(pid);
    if (stat === undefined) return undefined;
    if (!passedBy(stat)) return matches(stat) ? { pid, stat } : undefined;
    pid = stat.ppid;
  }
  return undefined;
}
