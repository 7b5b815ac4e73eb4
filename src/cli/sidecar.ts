// `okt sidecar --config FILE`: run the application sidecar until SIGTERM/SIGINT.
import { Command } from 'commander';
import { untilSignal } from './signals.ts';

export function sidecarCommand(): Command {
  return new Command('sidecar')
    .description('Run the application sidecar: node actions run asynchronously, a probe observes the application.')
    .requiredOption('-c, --config <file>', 'sidecar config (YAML or JSON)')
    .option('--port <port>', 'override listen.port', (v) => Number.parseInt(v, 10))
    .option('--host <host>', 'override listen.host')
    .action(async (options: { config: string; port?: number; host?: string }) => {
      // Loaded here, not at the top: every other okt command starts faster without fastify.
      const { SidecarConfigError, SidecarTokenError, loadSidecarConfig, startSidecar } = await import('../../sidecar/index.ts');
      let sidecar;
      try {
        const config = loadSidecarConfig(options.config);
        if (options.port !== undefined) config.listen.port = options.port;
        if (options.host !== undefined) config.listen.host = options.host;
        sidecar = await startSidecar(config);
      } catch (error) {
        // A bad config or token is the user's to fix: say what, without a stack trace.
        if (!(error instanceof SidecarConfigError || error instanceof SidecarTokenError)) throw error;
        process.stderr.write(`okt sidecar: ${error.message}\n`);
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
