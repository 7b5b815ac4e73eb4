import { execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, readdirSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A process okt started, with what identifies it beyond its pid (pids get reused): the executable it
 * ran and one argument unique to this control plane (its data dir appears in it).
 */
export interface ProcessRecord {
  name: string;
  pid: number;
  executable: string;
  marker: string;
}

/** The argv of a running process, or undefined when it is gone (a zombie has none either). */
function argvOf(pid: number): string[] | undefined {
  if (existsSync('/proc/self/cmdline')) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      return argv.length > 0 ? argv : undefined;
    } catch {
      return undefined;
    }
  }
  try {
    const line = execFileSync('ps', ['-p', String(pid), '-o', 'args='], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    return line.trim() ? line.trim().split(/\s+/) : undefined;
  } catch {
    return undefined;
  }
}

/** How processes this one started ended, by pid: a component that died says how. */
const exitStatuses = new Map<number, string>();

/** How a process this one started ended ("exit code 1", "killed by SIGTERM"), when it has and this process saw it. */
export function exitStatusOf(record: ProcessRecord): string | undefined {
  return exitStatuses.get(record.pid);
}

/** Whether the pid still runs the process okt started (same executable, same marker argument). */
export function isStillOurs(record: ProcessRecord): boolean {
  const argv = argvOf(record.pid);
  return argv !== undefined && argv[0] === record.executable && argv.includes(record.marker);
}

/**
 * Stop a process okt started: SIGTERM, then SIGKILL after a grace period. Does nothing when the pid
 * no longer runs that process. Returns whether it signalled anything.
 */
export async function stopProcess(record: ProcessRecord, graceMs = 10_000): Promise<boolean> {
  if (!isStillOurs(record)) return false;
  signal(record.pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (isStillOurs(record)) {
    if (Date.now() > deadline) {
      signal(record.pid, 'SIGKILL');
      await sleep(200);
      break;
    }
    await sleep(100);
  }
  return true;
}

/** SIGKILL at once (no grace: a crash, for fault injection), and wait until the process is gone. */
export async function killAndWait(record: ProcessRecord): Promise<void> {
  killNow(record);
  while (isStillOurs(record)) await sleep(20);
}

/** For exit handlers, where nothing asynchronous runs any more. */
export function killNow(record: ProcessRecord): void {
  if (isStillOurs(record)) signal(record.pid, 'SIGKILL');
}

/** The pids of running processes (this one aside) whose command line satisfies `matches`. */
export function pidsWhere(matches: (argv: readonly string[]) => boolean): number[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry) && Number(entry) !== process.pid)
    .map(Number)
    .filter((pid) => {
      const argv = argvOf(pid);
      return argv !== undefined && matches(argv);
    });
}

/** SIGKILL each of these pids that still exists (no record to check: for leftovers found by what they run). */
export function killPids(pids: Iterable<number>): void {
  for (const pid of pids) signal(pid, 'SIGKILL');
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
  }
}

export interface LaunchOptions {
  name: string;
  executable: string;
  args: readonly string[];
  /** The argument that identifies this process as okt's (it names okt's own directory). */
  marker: string;
  logPath: string;
  /** Outlive this process (`okt cluster up`). */
  detached: boolean;
  /** Start the log afresh instead of appending. */
  freshLog?: boolean;
  env?: NodeJS.ProcessEnv;
}

/**
 * Start a process with its output in a log file and return its record once it runs the executable:
 * until the forked child has exec'd, its command line is still this process's, and a check that it
 * is "still ours" would wrongly say it died.
 */
export async function launchProcess(options: LaunchOptions): Promise<ProcessRecord> {
  const { name, executable, args, marker, detached } = options;
  if (!args.includes(marker)) throw new Error(`no argument of ${name} is its marker ${marker}`);
  const log = openSync(options.logPath, options.freshLog ? 'w' : 'a');
  let record: ProcessRecord;
  try {
    const child = spawn(executable, args, { stdio: ['ignore', log, log], detached, env: options.env ?? process.env });
    if (child.pid === undefined) throw new Error(`${name} did not start (${executable})`);
    if (detached) child.unref();
    record = { name, pid: child.pid, executable, marker };
    const pid = child.pid;
    child.on('exit', (code, signalName) => exitStatuses.set(pid, signalName ? `killed by ${signalName}` : `exit code ${code}`));
  } finally {
    closeSync(log);
  }
  const deadline = Date.now() + 5_000;
  while (!isStillOurs(record) && Date.now() < deadline) {
    if (argvOf(record.pid) === undefined) break; // exited already: the caller's readiness check reports it
    await sleep(5);
  }
  return record;
}
