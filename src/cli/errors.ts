import type { Command } from 'commander';

/** The exit codes of every `okt` command (documented in docs/cli.md, "Exit codes"). */
export const EXIT = {
  ok: 0,
  /** A check failed (invalid graph, unreachable desired node) or the thing asked for was not found. */
  failed: 1,
  /** Wrong usage or bad input: an unknown flag, a file that cannot be read, a module with no graph. */
  usage: 2,
  /** The cluster could not be reached, or refused or failed the request. */
  cluster: 3,
  /** `okt sidecar`: its journal could not be read or written (a full disk, an I/O error); a restart replays it. */
  journal: 4,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** An error a person can act on: what is wrong (one line), what to do (one optional line), the exit code. */
export class CliError extends Error {
  readonly exitCode: ExitCode;
  readonly hint: string | undefined;

  constructor(exitCode: ExitCode, message: string, hint?: string) {
    super(message);
    this.name = 'CliError';
    this.exitCode = exitCode;
    this.hint = hint;
  }
}

/** Several usage problems found at once, each naming its flag or file. */
export class UsageProblems extends CliError {
  readonly problems: readonly CliError[];

  constructor(problems: readonly CliError[]) {
    const listed = problems.map((p) => `- ${p.message}${p.hint === undefined ? '' : `\n  ${p.hint}`}`);
    super(EXIT.usage, `${problems.length} problems:\n${listed.join('\n')}`);
    this.name = 'UsageProblems';
    this.problems = problems;
  }
}

/**
 * One error for the problems found (at least one): a single problem as it is, several listed. A
 * string is a usage problem; a plain Error a usage problem of its message (which names the flag).
 */
export function usageError(problems: readonly unknown[]): CliError {
  const errors = problems.flatMap((problem): CliError[] => {
    if (problem instanceof UsageProblems) return [...problem.problems];
    if (problem instanceof CliError) return [problem];
    return [new CliError(EXIT.usage, problem instanceof Error ? problem.message : String(problem))];
  });
  return errors.length === 1 ? errors[0]! : new UsageProblems(errors);
}

/**
 * Runs every check of a command's flags, so that one error says all that is wrong with them: the
 * checks' values by name, or the usageError of what they threw.
 */
export async function checkFlags<T extends Record<string, () => unknown>>(checks: T): Promise<{ [K in keyof T]: Awaited<ReturnType<T[K]>> }> {
  const names = Object.keys(checks);
  const results = await Promise.allSettled(names.map(async (name) => checks[name]!()));
  const problems = results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
  if (problems.length > 0) throw usageError(problems);
  return Object.fromEntries(names.map((name, i) => [name, (results[i] as PromiseFulfilledResult<unknown>).value])) as { [K in keyof T]: Awaited<ReturnType<T[K]>> };
}

/** The lines printed for an error: never a stack trace. */
export function describeError(command: string, error: unknown): { text: string; exitCode: ExitCode } {
  if (error instanceof CliError) {
    const hint = error.hint === undefined ? '' : `\n  ${error.hint}`;
    return { text: `okt ${command}: ${error.message}${hint}\n`, exitCode: error.exitCode };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { text: `okt ${command}: ${message}\n`, exitCode: EXIT.failed };
}

/**
 * Runs a command's action: its errors become the printed lines and the exit code. The action returns
 * the exit code of a result that is not an error (a failed check, say) or nothing for success.
 */
export function runAction<A extends unknown[]>(
  command: string,
  action: (...args: A) => Promise<ExitCode | void> | ExitCode | void,
): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      const code = await action(...args);
      if (code !== undefined && code !== EXIT.ok) process.exitCode = code;
    } catch (error) {
      const { text, exitCode } = describeError(command, error);
      process.stderr.write(text);
      process.exitCode = exitCode;
    }
  };
}

/**
 * Makes every usage error (unknown option, missing argument, bad value) of `program` and all its
 * subcommands exit with EXIT.usage, after commander has printed its one-line message and a hint.
 */
export function useUsageExitCode(program: Command): void {
  program.showHelpAfterError(`(run with --help for usage)`);
  program.exitOverride((error) => {
    const isHelp = error.code === 'commander.helpDisplayed' || error.code === 'commander.version';
    process.exit(isHelp || error.exitCode === 0 ? error.exitCode : EXIT.usage);
  });
  for (const sub of program.commands) useUsageExitCode(sub);
}
