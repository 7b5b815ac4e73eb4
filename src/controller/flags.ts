import type { LevelWithSilent } from 'pino';
import { DEFAULT_REQUEST_TIMEOUT_MS } from '../kube/transport/index.ts';
import { DEFAULT_WATCH_IDLE_TIMEOUT_MS } from './informer.ts';
import { DEFAULT_LEADER_ELECTION } from './leader-election.ts';
import type { ManagerLeaderElection } from './manager.ts';

/** The operator process's runtime settings, as the flags below give them. */
export interface ControllerRuntimeSettings {
  workers: number;
  health: { port: number; host: string } | false;
  leaderElection: ManagerLeaderElection | false;
  /** A watch silent this long is taken for dead and opened again; 0: never. */
  watchIdleTimeoutMs: number;
  /** Time limit of one ordinary request to the API server (its headers, then its body). */
  requestTimeoutMs: number;
  logLevel: LevelWithSilent;
}

const LOG_LEVELS: readonly LevelWithSilent[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** What the flags are added to: a commander `Command` (okt's own commander is bundled, so not its type). */
export interface CommandWithOptions {
  option(flags: string, description: string, defaultValue?: string | boolean): this;
}

/** Adds the controller runtime's flags to a command (the CLI's operator command). */
export function addControllerRuntimeFlags<C extends CommandWithOptions>(command: C): C {
  return command
    .option('--workers <n>', 'parallel reconciles (different CRs only), per kind', '4')
    .option('--health-port <port>', 'port of /healthz, /readyz and /metrics (0: any free port, -1: none)', '8081')
    .option('--health-host <host>', 'address the health server binds', '0.0.0.0')
    .option('--leader-elect', 'run only while holding a coordination.k8s.io/v1 Lease (for several replicas; one Lease for every kind)', false)
    .option('--leader-election-namespace <ns>', 'namespace of the Lease', 'default')
    .option('--leader-election-id <name>', 'name of the Lease', 'okt-operator')
    .option('--leader-election-identity <id>', 'this replica\'s identity in the Lease (default: hostname_uuid)')
    .option('--lease-duration <seconds>', 'how long a Lease stays valid without renewal', String(DEFAULT_LEADER_ELECTION.leaseDurationMs / 1000))
    .option('--renew-deadline <seconds>', 'the leader steps down when it could not renew for this long', String(DEFAULT_LEADER_ELECTION.renewDeadlineMs / 1000))
    .option('--retry-period <seconds>', 'time between acquire/renew attempts', String(DEFAULT_LEADER_ELECTION.retryPeriodMs / 1000))
    .option('--watch-idle-timeout <seconds>', 'a watch that receives nothing (no event, no bookmark) for this long is taken for dead and opened again (0: never)', String(DEFAULT_WATCH_IDLE_TIMEOUT_MS / 1000))
    .option('--request-timeout <seconds>', 'time limit of one ordinary request to the API server (its headers, then its body): a request on a connection gone silent fails after this long and is retried', String(DEFAULT_REQUEST_TIMEOUT_MS / 1000))
    .option('--log-level <level>', `one of ${LOG_LEVELS.join(', ')}`, 'info');
}

/** Turns parsed flag values (commander's `opts()`) into settings; a bad value throws naming its flag. */
export function controllerRuntimeSettings(opts: Record<string, unknown>): ControllerRuntimeSettings {
  const workers = integer(opts.workers, '--workers', 1);
  const port = integer(opts.healthPort, '--health-port', -1);
  const logLevel = String(opts.logLevel ?? 'info') as LevelWithSilent;
  if (!LOG_LEVELS.includes(logLevel)) throw new Error(`--log-level: expected one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  let leaderElection: ManagerLeaderElection | false = false;
  if (opts.leaderElect === true) {
    leaderElection = {
      namespace: nonEmpty(opts.leaderElectionNamespace, '--leader-election-namespace'),
      name: nonEmpty(opts.leaderElectionId, '--leader-election-id'),
      leaseDurationMs: seconds(opts.leaseDuration, '--lease-duration'),
      renewDeadlineMs: seconds(opts.renewDeadline, '--renew-deadline'),
      retryPeriodMs: seconds(opts.retryPeriod, '--retry-period'),
    };
    if (opts.leaderElectionIdentity !== undefined) leaderElection.identity = nonEmpty(opts.leaderElectionIdentity, '--leader-election-identity');
  }
  return {
    workers,
    health: port < 0 ? false : { port, host: nonEmpty(opts.healthHost ?? '0.0.0.0', '--health-host') },
    leaderElection,
    watchIdleTimeoutMs: seconds(opts.watchIdleTimeout ?? DEFAULT_WATCH_IDLE_TIMEOUT_MS / 1000, '--watch-idle-timeout', 'zero or more'),
    requestTimeoutMs: seconds(opts.requestTimeout ?? DEFAULT_REQUEST_TIMEOUT_MS / 1000, '--request-timeout'),
    logLevel,
  };
}

function integer(value: unknown, flag: string, min: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`${flag}: expected an integer >= ${min}, got "${String(value)}"`);
  return n;
}

/** A flag's number of seconds, as milliseconds: above 0, or 0 or more; otherwise an error naming the flag. */
export function seconds(value: unknown, flag: string, range: 'positive' | 'zero or more' = 'positive'): number {
  const n = Number(value);
  // A positive value never rounds down to 0 ms (which would mean "never" or a busy loop).
  if (Number.isFinite(n) && (range === 'positive' ? n > 0 : n >= 0)) return range === 'positive' ? Math.max(1, Math.round(n * 1000)) : Math.round(n * 1000);
  throw new Error(`${flag}: expected ${range === 'positive' ? 'a positive number of seconds' : 'a number of seconds >= 0'}, got "${String(value)}"`);
}

function nonEmpty(value: unknown, flag: string): string {
  if (typeof value !== 'string' || value === '') throw new Error(`${flag}: must not be empty`);
  return value;
}
