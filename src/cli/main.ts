import { Command } from 'commander';
import { clusterCommand } from './cluster.ts';
import { sidecarCommand } from './sidecar.ts';

const program = new Command('okt').description('Drive an application lifecycle through a graph of states.');
program.addCommand(clusterCommand());
program.addCommand(sidecarCommand());
await program.parseAsync(process.argv);
