// `okt up` (`npm start`): the whole local demo; `--ci` runs the same walk and exits.
import { Command } from 'commander';
import pc from 'picocolors';
import type { DemoOutput } from '../demo/database-demo.ts';
import { CliError, EXIT, runAction } from './errors.ts';
import { describeEvent } from './events.ts';

export function upCommand(): Command {
  return new Command('up')
    .description('The local demo: a real control plane, PostgreSQL behind the sidecar, the operator, CloudEvents, and a database walked through its graph')
    .option('--ci', 'run the walk without waiting for a person, then stop everything and exit (0: every step passed)', false)
    .option('--in-cluster', 'the same walk with okt deployed in the cluster: a real node, the image built from the Dockerfile, okt manifests | kubectl apply (changes host kernel settings and firewall rules until it stops)', false)
    .action(
      runAction('up', async (flags: { ci: boolean; inCluster: boolean }) => {
        const output: DemoOutput = {
          step: (line) => process.stdout.write(`${pc.bold(line)}\n`),
          info: (line) => process.stdout.write(`${line}\n`),
          event: (event) => process.stdout.write(`${pc.cyan('  event')} ${describeEvent(event)}\n`),
        };
        const demo: Demo = flags.inCluster
          ? new (await import('../demo/in-cluster/demo.ts')).InClusterDemo(output)
          : new (await import('../demo/database-demo.ts')).DatabaseDemo(output);
        // Listening (not once) until everything is stopped: while a listener remains, neither a second
        // Ctrl-C nor the control plane's own exit guard ends the process halfway through the cleanup.
        // SIGHUP too: a closed terminal must not leave PostgreSQL or the control plane behind.
        const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
        let onSignal = () => {};
        const interrupted = new Promise<never>((_resolve, reject) => {
          onSignal = () => reject(new CliError(EXIT.failed, 'interrupted: everything the demo started is stopped'));
        });
        for (const signal of signals) process.on(signal, onSignal);
        try {
          await Promise.race([demo.start().then(() => demo.walk()), interrupted]);
          process.stdout.write(`\n${pc.green('The walk is done.')} Try, in another terminal:\n${demo.tryThese()}\n`);
          if (!flags.ci) {
            process.stdout.write(`\nEverything keeps running; press Ctrl-C to stop it all.\n`);
            await interrupted.catch(() => undefined);
          }
        } finally {
          process.stdout.write(flags.inCluster ? 'stopping the node and the control plane\n' : 'stopping the operator, the sidecar, PostgreSQL and the control plane\n');
          await demo.stop();
          for (const signal of signals) process.off(signal, onSignal);
        }
      }),
    );
}

/** What `okt up` needs of a demo: the local one and the in-cluster one. */
interface Demo {
  start(): Promise<void>;
  walk(): Promise<void>;
  stop(): Promise<void>;
  /** Commands to try while it keeps running. */
  tryThese(): string;
}
