// `okt crd FILE --group G --version V --kind K [--rbac]`: the CRD of a graph, and the operator's RBAC.
import { Command, Option } from 'commander';
import type { Graph } from '../graph/index.ts';
import { generateCrd, type CrdNames } from '../kube/crd.ts';
import { generateRbac } from '../kube/rbac.ts';
import type { BundledGraph } from './bundled.ts';
import { addCrdNameFlags, crdNamesFromFlags, type CrdNameFlags } from './crd-names.ts';
import { runAction } from './errors.ts';
import { loadGraphFile } from './graph-module.ts';
import { toYamlDocuments } from './output.ts';

export const DEFAULT_OPERATOR_NAMESPACE = 'okt-system';

interface CrdFlags extends CrdNameFlags {
  export?: string;
  rbac: boolean;
  namespace: string;
  readSecrets: boolean;
}

export function crdCommand(): Command {
  const command = new Command('crd')
    .description('Print the CustomResourceDefinition of a graph (YAML); with --rbac, the operator\'s least-privilege RBAC too')
    .argument('<file>', 'graph module (.ts/.js) or data (.json/.yaml)');
  addCrdNameFlags(command)
    .addOption(new Option('--export <name>', 'the module export holding the graph'))
    .option('--rbac', 'also print the ServiceAccount, ClusterRole, Role (leader election Lease) and bindings', false)
    .option('-n, --namespace <ns>', 'the operator\'s namespace (for --rbac)', DEFAULT_OPERATOR_NAMESPACE)
    .option('--read-secrets', 'let the operator read Secrets, for CRs that set spec.sidecar.tokenSecretRef (for --rbac)', false)
    .action(
      runAction('crd', async (file: string, flags: CrdFlags) => {
        const names = crdNamesFromFlags(flags);
        const { graph } = await loadGraphFile(file, { exportName: flags.export });
        const documents: unknown[] = [generateCrd(graph, names)];
        if (flags.rbac) documents.push(...generateRbac(names, { namespace: flags.namespace, readSecrets: flags.readSecrets, objectKinds: graph.objects }));
        process.stdout.write(toYamlDocuments(documents));
      }),
    );
  return command;
}

/** The committed CRD file of a bundled graph: `crds/database.yaml`. */
export function bundledCrdPath(bundled: BundledGraph): string {
  return `crds/${bundled.graph.name}.yaml`;
}

/** The text of a bundled graph's committed CRD file (what `npm run crds` writes). */
export function bundledCrdYaml(bundled: BundledGraph): string {
  return crdFileText(bundled.graph, bundled.crd, bundled.file);
}

function crdFileText(graph: Graph, names: CrdNames, file: string): string {
  const flags = [`--group ${names.group}`, `--version ${names.version}`, `--kind ${names.kind}`];
  if (names.shortNames?.length) flags.push(`--short-names ${names.shortNames.join(',')}`);
  return `# Generated from ${file} by \`npm run crds\` (okt crd ${file} ${flags.join(' ')}); do not edit.\n${toYamlDocuments([generateCrd(graph, names)])}`;
}
