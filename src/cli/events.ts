// `okt events tail`: a local CloudEvents sink printing the lifecycle stream, one line per event.
import { Command } from 'commander';
import type { LifecycleEvent } from '../events/index.ts';
import { untilSignal } from './signals.ts';

interface TailOptions {
  port: number;
  host: string;
  json?: boolean;
  dedupe: boolean;
}

const DEDUPE_WINDOW = 10_000;

export function eventsCommand(): Command {
  const events = new Command('events').description('Lifecycle CloudEvents.');
  events
    .command('tail')
    .description('Listen as a CloudEvents sink and print each lifecycle event as it arrives (first line: the sink URL).')
    .option('--port <port>', 'port to listen on (0: any free port)', (v) => Number.parseInt(v, 10), 0)
    .option('--host <host>', 'address to listen on', '127.0.0.1')
    .option('--json', 'print each event as one structured-mode CloudEvent JSON line')
    .option('--no-dedupe', 'print redeliveries (same source and id) again')
    .action(async (options: TailOptions) => {
      const print = options.json ? (e: LifecycleEvent) => JSON.stringify(e) : describeEvent;
      const { createLifecycleEventReceiver } = await import('../events/receiver.ts');
      const receiver = await createLifecycleEventReceiver({
        port: options.port,
        host: options.host,
        dedupe: options.dedupe ? DEDUPE_WINDOW : 0,
        onEvent: (event) => {
          process.stdout.write(`${print(event)}\n`);
        },
      });
      process.stdout.write(options.json ? `${JSON.stringify({ sink: receiver.url })}\n` : `sink ${receiver.url}  (K_SINK=${receiver.url} or --sink ${receiver.url})\n`);
      await untilSignal();
      await receiver.close();
    });
  return events;
}

/** `2026-11-22T10:00:00.000Z  default/db1  transition  Start -> Running  #3` (+ operation phase or reason). */
export function describeEvent(event: LifecycleEvent): string {
  const resource = event.source.replace(/^\/apis\/[^/]+\/[^/]+\/namespaces\/([^/]+)\/[^/]+\/([^/]+)$/, '$1/$2');
  const kind = event.type.replace(/^dev\.okt\.lifecycle\./, '').replace(/\.v\d+$/, '');
  const { from, to, operation, reason } = event.data;
  const detail = operation !== undefined ? `  ${operation.phase}${operation.message ? `: ${operation.message}` : ''}` : reason !== undefined ? `  ${reason}` : '';
  return `${event.time}  ${resource}  ${kind}  ${from} -> ${to}  #${Number(event.sequence)}${detail}`;
}
