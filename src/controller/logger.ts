import { pino, type DestinationStream, type Logger, type LevelWithSilent } from 'pino';

export type { Logger };

export interface LoggerOptions {
  level?: LevelWithSilent;
  /** Default: stdout. */
  destination?: DestinationStream;
  /** Fields on every line (e.g. { component: 'operator' }). */
  base?: Record<string, unknown>;
}

/** JSON lines: {"level":"info","time":"<ISO 8601>","msg":..., ...fields}. */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      base: options.base ?? null,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    options.destination ?? pino.destination(1),
  );
}
