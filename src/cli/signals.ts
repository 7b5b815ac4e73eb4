import { findAncestor, isRunning } from '../util/processes.ts';

/** How often a command run by npm checks that its npm process is still there. */
const WRAPPER_CHECK_MS = 500;
const SHELLS = new Set(['sh', 'dash', 'bash', 'zsh', 'ash', 'busybox']);

/**
 * Resolves on the first SIGINT or SIGTERM; a second one exits at once (130 / 143). Run by npm (`npx
 * okt ...`, `npm start`), it also resolves (as SIGHUP) once that npm process has ended: npm runs okt
 * under a shell that does not pass a signal on, so a SIGTERM or SIGKILL of npm would otherwise leave
 * okt running, holding its port and journal.
 */
export function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    let watch: NodeJS.Timeout | undefined;
    const stop = (signal: NodeJS.Signals) => {
      clearInterval(watch);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      process.once('SIGINT', () => process.exit(130));
      process.once('SIGTERM', () => process.exit(143));
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    // npm's process title (`npm exec okt …`) is its name; the shell npm runs okt with is passed over.
    const npm =
      process.env.npm_command === undefined
        ? undefined
        : findAncestor(
            (stat) => /^npm\b/.test(stat.comm),
            (stat) => SHELLS.has(stat.comm),
          );
    if (npm === undefined) return;
    watch = setInterval(() => {
      if (isRunning(npm.pid, npm.stat.startTime)) return;
      process.stderr.write(`okt: the npm process that ran it (pid ${npm.pid}) has ended: stopping\n`);
      stop('SIGHUP');
    }, WRAPPER_CHECK_MS);
    watch.unref();
  });
}
