import { Command } from 'commander';
import { clusterCommand } from './cluster.ts';

const program = new Command('okt').description('Drive an application lifecycle through a graph of states.');
program.addCommand(clusterCommand());
await program.parseAsync(process.argv);
