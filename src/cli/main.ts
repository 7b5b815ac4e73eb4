import { Command } from '#vendor/commander';
import { clusterCommand } from './cluster.ts';
import { crdCommand } from './crd.ts';
import { eventsCommand } from './events.ts';
import { useUsageExitCode } from './errors.ts';
import { graphCommand } from './graph.ts';
import { imageCommand } from './image.ts';
import { initCommand } from './init.ts';
import { manifestsCommand } from './manifests.ts';
import { sidecarCommand } from './sidecar.ts';
import { runCommand } from './run.ts';
import { upCommand } from './up.ts';
import { statusCommand } from './status.ts';
import { uiCommand } from './ui.ts';
import { version } from '../version.ts';

const program = new Command('okt')
  .description('Drive an application lifecycle through a graph of states.')
  .version(version, '-V, --version', "print okt's version")
  // The program's own options (--version) only before a command: `okt status --version v1` is status's.
  .enablePositionalOptions();
program.addCommand(initCommand());
program.addCommand(clusterCommand());
program.addCommand(eventsCommand());
program.addCommand(sidecarCommand());
program.addCommand(graphCommand());
program.addCommand(crdCommand());
program.addCommand(manifestsCommand());
program.addCommand(imageCommand());
program.addCommand(statusCommand());
program.addCommand(uiCommand());
program.addCommand(runCommand());
program.addCommand(upCommand());
useUsageExitCode(program);
await program.parseAsync(process.argv);
