import { Command } from 'commander';
import { useUsageExitCode } from './errors.ts';
import { version } from '../version.ts';

// Each command's module, in the order help lists them. Only the command named on the line is loaded
// (the others pull in the Kubernetes client, the operator, the sidecar server: most of a second of
// start-up); help without a command loads them all to list them.
const COMMANDS: Record<string, () => Promise<Command>> = {
  init: async () => (await import('./init.ts')).initCommand(),
  cluster: async () => (await import('./cluster.ts')).clusterCommand(),
  events: async () => (await import('./events.ts')).eventsCommand(),
  sidecar: async () => (await import('./sidecar.ts')).sidecarCommand(),
  graph: async () => (await import('./graph.ts')).graphCommand(),
  crd: async () => (await import('./crd.ts')).crdCommand(),
  manifests: async () => (await import('./manifests.ts')).manifestsCommand(),
  image: async () => (await import('./image.ts')).imageCommand(),
  status: async () => (await import('./status.ts')).statusCommand(),
  ui: async () => (await import('./ui.ts')).uiCommand(),
  run: async () => (await import('./run.ts')).runCommand(),
  up: async () => (await import('./up.ts')).upCommand(),
};

const program = new Command('okt')
  .description('Drive an application lifecycle through a graph of states.')
  .version(version, '-V, --version', "print okt's version")
  // The program's own options (--version) only before a command: `okt status --version v1` is status's.
  .enablePositionalOptions();
const args = process.argv.slice(2);
const named = args[0] !== undefined && Object.hasOwn(COMMANDS, args[0]) ? args[0] : undefined;
const versionOnly = args.length === 1 && (args[0] === '-V' || args[0] === '--version');
const loaded = named !== undefined ? [named] : versionOnly ? [] : Object.keys(COMMANDS);
for (const command of await Promise.all(loaded.map((name) => COMMANDS[name]!()))) program.addCommand(command);
useUsageExitCode(program);
await program.parseAsync(process.argv);
