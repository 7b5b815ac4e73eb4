import { Command } from 'commander';

const program = new Command('okt').description('Drive an application lifecycle through a graph of states.');
await program.parseAsync(process.argv);
