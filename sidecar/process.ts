// Runs one program (an argv, never a shell string) in a process group of its own, so that a timeout
// or a cancel can kill everything it started. Collects the tail of its output and the directive lines
// it printed on stdout: `okt-event: <Event>` (an action raises an event) and `okt-state: <Node>`
// (a probe reports the node the application is in). The sidecar's spawner process starts it
// (sidecar/spawner.ts); timeouts and kills are decided and sent from here.
import { spawner } from './spawner.ts';

export interface ProcessSpec {
  argv: readonly string[];
  env: Record<string, string>;
  cwd: string;
  timeoutMs: number;
  killGraceMs: number;
  tailLines: number;
}

export interface ProcessResult {
  ended: 'exited' | 'timeout' | 'aborted' | 'spawn-error';
  exitCode: number | null;
  signal: string | null;
  error?: string;
  events: string[];
  states: string[];
  tail: string[];
}

const DIRECTIVE = /^okt-(event|state):\s*(.*?)\s*$/;

/**
 * The process groups started and not yet reaped, so that a sidecar that must exit at once can kill them
 * first (a group whose start the spawner has not reported yet is killed by the spawner, as the sidecar exits).
 */
const liveGroups = new Set<number>();

/** Kills every process group still running, synchronously (SIGKILL: the sidecar is about to exit). */
export function killAllProcessGroups(): void {
  for (const pid of liveGroups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  liveGroups.clear();
}
const MAX_LINE = 2000;

/** A bounded tail of lines. */
export class LineTail {
  readonly lines: string[] = [];
  private readonly limit: number;
  constructor(limit: number) {
    this.limit = limit;
  }
  push(line: string): void {
    if (this.limit === 0) return;
    this.lines.push(line.length > MAX_LINE ? `${line.slice(0, MAX_LINE)}…` : line);
    if (this.lines.length > this.limit) this.lines.shift();
  }
}

/** Splits a text stream into lines, calling onLine for each (a final unterminated line included). */
function lineSplitter(onLine: (line: string) => void): { write(text: string): void; end(): void } {
  let partial = '';
  return {
    write(text) {
      partial += text;
      let at: number;
      while ((at = partial.indexOf('\n')) >= 0) {
        onLine(partial.slice(0, at).replace(/\r$/, ''));
        partial = partial.slice(at + 1);
      }
      if (partial.length > 64 * 1024) {
        onLine(partial);
        partial = '';
      }
    },
    end() {
      if (partial !== '') onLine(partial);
      partial = '';
    },
  };
}

export function runProcess(spec: ProcessSpec, signal?: AbortSignal): Promise<ProcessResult> {
  return new Promise((resolve) => {
    const tail = new LineTail(spec.tailLines);
    const events: string[] = [];
    const states: string[] = [];
    const finish = (partial: Omit<ProcessResult, 'events' | 'states' | 'tail'>) =>
      resolve({ ...partial, events, states, tail: tail.lines });

    if (signal?.aborted) {
      finish({ ended: 'aborted', exitCode: null, signal: null });
      return;
    }
    let pid: number | undefined;
    let ended: ProcessResult['ended'] = 'exited';
    let graceTimer: NodeJS.Timeout | undefined;
    const killGroup = (sig: NodeJS.Signals) => {
      if (pid === undefined) return;
      try {
        process.kill(-pid, sig);
      } catch {
        // already gone
      }
    };
    const stop = (why: 'timeout' | 'aborted') => {
      if (ended !== 'exited') return;
      ended = why;
      killGroup('SIGTERM');
      graceTimer = setTimeout(() => killGroup('SIGKILL'), spec.killGraceMs);
    };
    const timeout = setTimeout(() => stop('timeout'), spec.timeoutMs);
    const onAbort = () => stop('aborted');
    signal?.addEventListener('abort', onAbort, { once: true });

    const out = lineSplitter((line) => {
      tail.push(line);
      const match = DIRECTIVE.exec(line);
      if (match) (match[1] === 'event' ? events : states).push(match[2] as string);
    });
    const err = lineSplitter((line) => tail.push(line));

    const settle = (result: Omit<ProcessResult, 'events' | 'states' | 'tail'>) => {
      clearTimeout(timeout);
      clearTimeout(graceTimer);
      // Killed on purpose: whatever is left of the group goes too, without another grace period.
      if (ended !== 'exited') killGroup('SIGKILL');
      if (pid !== undefined) liveGroups.delete(pid);
      signal?.removeEventListener('abort', onAbort);
      out.end();
      err.end();
      finish(result);
    };
    spawner.run(
      { argv: spec.argv, env: spec.env, cwd: spec.cwd },
      {
        spawned(spawnedPid) {
          pid = spawnedPid;
          liveGroups.add(pid);
          if (ended !== 'exited') killGroup('SIGTERM'); // stopped before the spawner said it started
        },
        stdout: (text) => out.write(text),
        stderr: (text) => err.write(text),
        ended: (exitCode, exitSignal) => settle({ ended, exitCode, signal: exitSignal }),
        failed(message) {
          killGroup('SIGKILL'); // the spawner ended under it: nobody would see it end
          settle({ ended: 'spawn-error', exitCode: null, signal: null, error: message });
        },
      },
    );
  });
}
