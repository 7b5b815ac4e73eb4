import { spawn } from 'node:child_process';
import { accessSync, appendFileSync, closeSync, constants, openSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** A command failed; `logTail` holds the last lines it wrote to the log. */
export class CommandError extends Error {
  readonly logPath: string;
  readonly logTail: string;
  constructor(message: string, logPath: string, logTail: string) {
    super(message);
    this.logPath = logPath;
    this.logTail = logTail;
    this.name = 'CommandError';
  }
}

export interface LoggedRunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  logPath: string;
  /** Kill the command (SIGKILL) when it has not finished after this long; it then fails as timed out. */
  timeoutMs?: number;
}

/** Run a command with its output appended to a log file (builds are too chatty for a terminal). */
export async function runLogged(command: string, args: readonly string[], options: LoggedRunOptions): Promise<void> {
  appendFileSync(options.logPath, `\n$ ${[command, ...args].join(' ')}${options.cwd ? `   (in ${options.cwd})` : ''}\n`);
  const fd = openSync(options.logPath, 'a');
  try {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', fd, fd],
    });
    let timedOut = false;
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => {
            timedOut = true;
            child.kill('SIGKILL');
          }, options.timeoutMs);
    const code = await new Promise<number | string>((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (status, signal) => resolve(status ?? signal ?? 'unknown'));
    }).finally(() => clearTimeout(timer));
    if (code !== 0) {
      const why = timedOut ? `timed out after ${((options.timeoutMs ?? 0) / 1000).toFixed(0)} s` : `exit ${code}`;
      throw new CommandError(
        `\`${command} ${args.join(' ')}\` failed (${why})`,
        options.logPath,
        tailOf(options.logPath, 30),
      );
    }
  } finally {
    closeSync(fd);
  }
}

export function tailOf(path: string, lines: number): string {
  try {
    return readFileSync(path, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** The absolute path of an executable found on PATH, or undefined. */
export function which(name: string, extraDirs: readonly string[] = []): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), ...extraDirs].filter(Boolean);
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
