import { Command } from 'commander';
import { clusterCommand } from './cluster.ts';
import { crdCommand } from './crd.ts';
import { eventsCommand } from './events.ts';
import { useUsageExitCode } from './errors.ts';
import { graphCommand } from './graph.ts';
import { manifestsCommand } from './manifests.ts';
import { sidecarCommand } from './sidecar.ts';

const program = new Command('okt').description('Drive an application lifecycle through a graph of states.');
program.addCommand(clusterCommand());
program.addCommand(eventsCommand());
program.addCommand(sidecarCommand());
program.addCommand(graphCommand());
program.addCommand(crdCommand());
program.addCommand(manifestsCommand());
useUsageExitCode(program);
await program.parseAsync(process.argv);
