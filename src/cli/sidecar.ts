// `okt sidecar --config FILE [--graph FILE]`: check the config, then run the application sidecar until SIGTERM/SIGINT.
import { Command } from 'commander';
import { EXIT } from './errors.ts';
import { untilSignal } from './signals.ts';

const collect = (value: string, previous: string[]) => [...previous, value];

export function sidecarCommand(): Command {
  return new Command('sidecar')
    .description('Run the application sidecar: node actions run asynchronously, a probe observes the application.')
    .requiredOption('-c, --config <file>', 'sidecar config (YAML or JSON)')
    .option('--port <port>', 'override listen.port', (v) => Number.parseInt(v, 10))
    .option('--host <host>', 'override listen.host')
    .option('--graph <file>', "check the config against this graph file (repeatable; matched by the graph's name; instead of the config's graph:)", collect, [])
    .action(async (options: { config: string; port?: number; host?: string; graph: string[] }) => {
      // Loaded here, not at the top: every other okt command starts faster without fastify.
      const { JournalIOError, JournalLockedError, SidecarListenError, SidecarConfigError, SidecarTokenError, invalidConfig, killAllProcessGroups, loadSidecarConfig, startSidecar } =
        await import('../../sidecar/index.ts');
      const { checkSidecarConfig } = await import('./sidecar-check.ts');
      let sidecar;
      try {
        const config = loadSidecarConfig(options.config);
        // A config that does not fit its graph would leave resources waiting for ever: refuse it now.
        const check = await checkSidecarConfig(config, options.graph);
        if (check.problems.length > 0) throw invalidConfig(check.problems);
        for (const warning of check.warnings) process.stderr.write(`okt sidecar: warning: ${warning}\n`);
        if (options.port !== undefined) config.listen.port = options.port;
        if (options.host !== undefined) config.listen.host = options.host;
        sidecar = await startSidecar(config, {
          // Nothing it did since is known to be on disk: stop now (its actions too, which a restart
          // reports Interrupted or runs again), rather than answer as if it were.
          onJournalFailure(error) {
            killAllProcessGroups();
            process.stderr.write(`okt sidecar: ${error.message}; exiting (code ${EXIT.journal}): a restart replays the journal\n`);
            process.exit(EXIT.journal);
          },
        });
      } catch (error) {
        if (error instanceof JournalIOError) {
          process.stderr.write(`okt sidecar: ${error.message}\n`);
          process.exitCode = EXIT.journal;
          return;
        }
        // A bad config or token, or a port or journal another sidecar holds, is the user's to fix: say
        // what, without a stack trace (nothing of the journal was touched).
        const known = [SidecarConfigError, SidecarTokenError, SidecarListenError, JournalLockedError];
        if (!known.some((kind) => error instanceof kind)) throw error;
        process.stderr.write(`okt sidecar: ${(error as Error).message}\n`);
        process.exitCode = 2;
        return;
      }
      // Listening for signals before saying so: a SIGTERM sent the moment the line is read must not kill it.
      const signalled = untilSignal();
      // One machine-readable line so that scripts (and tests) learn the address when port is 0.
      process.stdout.write(`${JSON.stringify({ sidecar: 'listening', url: sidecar.url, pid: process.pid })}\n`);
      await signalled;
      await sidecar.close();
    });
}
