// `okt status [TYPE/]NAME`: a lifecycle custom resource read from the cluster, drawn on its graph.
import { writeFileSync } from 'node:fs';
import { Command } from 'commander';
import { addCrdFinderFlags } from './crd-names.ts';
import { runAction } from './errors.ts';
import { colorsFor } from './output.ts';
import type { StatusFlags } from './status-read.ts';
import { renderStatusHtml, renderStatusText, type StatusView } from './status-view.ts';

export function statusCommand(): Command {
  const command = new Command('status')
    .description('Show a lifecycle resource on its graph: current node, path, desired state, conditions, running operation')
    .argument('<resource>', 'NAME, or TYPE/NAME where TYPE is the plural, singular, kind or a short name (odb/my-db)')
    .option('-n, --namespace <ns>', 'namespace of the resource (default: the kubeconfig context\'s, else "default")');
  return addCrdFinderFlags(command, 'resource')
    .option('--version <version>', 'API version to read (default: the CRD\'s storage version)')
    .option('--graph <file>', 'the graph module or data file (default: the graph the CRD publishes for the resource\'s revision)')
    .option('--export <name>', 'the module export holding the graph (with --graph)')
    .option('--html <file>', 'also write an HTML page with the Mermaid diagram to FILE')
    .action(
      runAction('status', async (resource: string, flags: StatusFlags) => {
        // The Kubernetes client takes a while to load: only the commands that talk to a cluster pay for it.
        const { readLifecycleResource } = await import('./status-read.ts');
        const { graph, object, objects } = await readLifecycleResource(resource, flags);
        const view: StatusView = { graph, resource: object, now: new Date(), objects };
        process.stdout.write(renderStatusText(view, colorsFor(process.stdout)));
        if (flags.html !== undefined) {
          writeFileSync(flags.html, renderStatusHtml(view));
          process.stdout.write(`\nwrote ${flags.html}\n`);
        }
      }),
    );
}
