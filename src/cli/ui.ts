// `okt ui [TYPE]`: a web page of every CR of a kind on its graph, live from the API server's watch.
import { Command, InvalidArgumentError, Option } from 'commander';
import { addCrdFinderFlags } from './crd-names.ts';
import { CliError, EXIT, runAction } from './errors.ts';
import { untilSignal } from './signals.ts';
import type { UiFlags } from './ui-run.ts';

export const DEFAULT_UI_PORT = 8090;

export function uiCommand(): Command {
  const command = new Command('ui')
    .description('Serve a live web page of every resource of a kind on its graph: where each is, what it is doing, the last events')
    .argument('[type]', 'the resources\' type: plural, singular, kind or short name (odb), optionally TYPE.GROUP (default: the one CRD okt generated)')
    .option('-n, --namespace <ns>', 'the namespace to show (default: the kubeconfig context\'s, else "default")')
    .option('-A, --all-namespaces', 'show the resources of every namespace');
  return addCrdFinderFlags(command, 'resources')
    .addOption(new Option('--port <port>', 'port to serve the page on (0: any free port)').default(DEFAULT_UI_PORT).argParser(portNumber))
    .option('--address <address>', 'address to listen on (0.0.0.0: every interface; the page is read-only but shows every resource\'s spec and status)', '127.0.0.1')
    .option('--graph <file>', 'the graph module or data file (default: the graphs the CRD publishes, one per revision)')
    .option('--export <name>', 'the module export holding the graph (with --graph)')
    .action(
      runAction('ui', async (type: string | undefined, flags: UiFlags) => {
        if (flags.allNamespaces && flags.namespace !== undefined) throw new CliError(EXIT.usage, '--namespace and --all-namespaces exclude each other');
        // The Kubernetes client takes a while to load: only the commands that talk to a cluster pay for it.
        const { startUi } = await import('./ui-run.ts');
        const ui = await startUi(type, flags);
        const where = ui.state.snapshot().title.namespace;
        process.stdout.write(`okt ui: ${ui.crd} ${where === null ? 'in all namespaces' : `in namespace ${where}`}, live\nopen ${ui.url}\n`);
        await untilSignal();
        await ui.stop();
      }),
    );
}

function portNumber(value: string): number {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new InvalidArgumentError('expected a port, 0-65535');
  return port;
}
