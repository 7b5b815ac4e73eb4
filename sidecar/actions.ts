// The three kinds of node action (command, http, module) and the one rule that turns what an action
// did into an operation's outcome: events raised, or onSuccess; a failure raises onFailure (and the
// operation succeeds, the graph handles it) or fails the operation.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { request } from 'undici';
import { COMMAND_SUCCEEDED_MESSAGE, EventNameSchema, MODULE_SUCCEEDED_MESSAGE, type Reason } from '../src/sidecar-client/protocol.ts';
import type { ActionConfig } from './config.ts';
import { LineTail, runProcess } from './process.ts';

/** What an action gets. `P`: the node's parameters (the graph's and its own), e.g. `z.infer<typeof upgradeParams>`. */
export interface ActionContext<P extends Record<string, unknown> = Record<string, unknown>> {
  operationId: string;
  graph: string;
  node: string;
  /** spec.params as the graph's schemas checked them (defaults filled in); {} when the graph declares none. */
  params: P;
  /** Aborted on cancel (and on the action's timeout, for modules). */
  signal: AbortSignal;
  /** Adds a line to the operation's output tail. */
  log(line: string): void;
}

/** What a `module` action exports: events to raise (none: the node's onSuccess). */
export type ModuleAction<P extends Record<string, unknown> = Record<string, unknown>> = (
  context: ActionContext<P>,
) => string | readonly string[] | undefined | void | Promise<string | readonly string[] | undefined | void>;

export interface ActionOutcome {
  phase: 'Succeeded' | 'Failed' | 'Cancelled';
  events: string[];
  reason: Reason;
  message: string;
  exitCode?: number | null;
  outputTail: string[];
}

export interface ActionEnvironment {
  baseDir: string;
  killGraceMs: number;
  tailLines: number;
}

/** What one run of an action amounted to, before the node's onSuccess/onFailure apply. */
type RawResult =
  | { kind: 'done'; raised: string[]; message: string; exitCode?: number | null }
  | { kind: 'failed'; reason: Reason; message: string; exitCode?: number | null }
  | { kind: 'cancelled' };

export async function runAction(
  action: ActionConfig,
  context: Omit<ActionContext, 'log'>,
  env: ActionEnvironment,
): Promise<ActionOutcome> {
  const tail = new LineTail(env.tailLines);
  let raw: RawResult;
  try {
    if ('command' in action) raw = await runCommandAction(action, context, env, tail);
    else if ('http' in action) raw = await runHttpAction(action, context, tail);
    else raw = await runModuleAction(action, { ...context, log: (line) => tail.push(line) }, env);
  } catch (error) {
    raw = { kind: 'failed', reason: 'ActionError', message: (error as Error).message };
  }
  return toOutcome(action, raw, tail.lines);
}

function toOutcome(action: ActionConfig, raw: RawResult, outputTail: string[]): ActionOutcome {
  if (raw.kind === 'cancelled') {
    return { phase: 'Cancelled', events: [], reason: 'Cancelled', message: 'cancelled', outputTail };
  }
  let result = raw;
  if (result.kind === 'done') {
    const invalid = result.raised.filter((e) => !EventNameSchema.safeParse(e).success);
    if (invalid.length > 0) {
      result = {
        kind: 'failed',
        reason: 'InvalidEvents',
        message: `the action raised ${invalid.map((e) => JSON.stringify(e)).join(', ')}, not event names`,
        exitCode: result.exitCode,
      };
    }
  }
  const exit = result.exitCode === undefined ? {} : { exitCode: result.exitCode };
  if (result.kind === 'done') {
    const events = result.raised.length > 0 ? result.raised : [...action.onSuccess];
    return { phase: 'Succeeded', events, reason: 'Completed', message: result.message, outputTail, ...exit };
  }
  if (action.onFailure !== undefined) {
    const message = `${result.message}; raised onFailure ${action.onFailure}`;
    return { phase: 'Succeeded', events: [action.onFailure], reason: result.reason, message, outputTail, ...exit };
  }
  return { phase: 'Failed', events: [], reason: result.reason, message: result.message, outputTail, ...exit };
}

async function runCommandAction(
  action: Extract<ActionConfig, { command: unknown }>,
  context: Omit<ActionContext, 'log'>,
  env: ActionEnvironment,
  tail: LineTail,
): Promise<RawResult> {
  const { argv, cwd } = action.command;
  // A string as it is (a version, a URL), any other value as JSON; OKT_PARAMS holds them all.
  const paramEnv = Object.fromEntries(Object.entries(context.params).map(([k, v]) => [`OKT_PARAM_${k}`, typeof v === 'string' ? v : JSON.stringify(v)]));
  const result = await runProcess(
    {
      argv,
      cwd: path.resolve(env.baseDir, cwd ?? '.'),
      env: {
        ...(process.env as Record<string, string>),
        ...action.command.env,
        ...paramEnv,
        OKT_PARAMS: JSON.stringify(context.params),
        OKT_OPERATION_ID: context.operationId,
        OKT_GRAPH: context.graph,
        OKT_NODE: context.node,
      },
      timeoutMs: action.timeoutMs,
      killGraceMs: env.killGraceMs,
      tailLines: env.tailLines,
    },
    context.signal,
  );
  for (const line of result.tail) tail.push(line);
  switch (result.ended) {
    case 'aborted':
      return { kind: 'cancelled' };
    case 'timeout':
      return { kind: 'failed', reason: 'Timeout', message: `killed after its timeout of ${action.timeoutMs} ms` };
    case 'spawn-error':
      return { kind: 'failed', reason: 'ActionError', message: `cannot run ${argv[0]}: ${result.error}` };
    case 'exited':
      if (result.exitCode === 0) {
        return { kind: 'done', raised: result.events, message: COMMAND_SUCCEEDED_MESSAGE, exitCode: 0 };
      }
      return {
        kind: 'failed',
        reason: 'NonZeroExit',
        message:
          result.exitCode === null ? `ended by signal ${result.signal}` : `exited with code ${result.exitCode}`,
        exitCode: result.exitCode,
      };
  }
}

export interface HttpAnswer {
  status: number;
  json: unknown;
  text: string;
}

const MAX_ANSWER_BYTES = 1024 * 1024;

/** One HTTP call to the application; the answer is read up to 1 MiB and parsed as JSON when it is. */
export async function callHttp(
  call: { url: string; method: string; headers: Record<string, string> },
  body: unknown,
  signal: AbortSignal,
): Promise<HttpAnswer> {
  const response = await request(call.url, {
    method: call.method as 'GET',
    headers: body === undefined ? call.headers : { 'content-type': 'application/json', ...call.headers },
    body: body === undefined ? null : JSON.stringify(body),
    signal,
  });
  let size = 0;
  const chunks: Buffer[] = [];
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_ANSWER_BYTES) {
      response.body.destroy();
      throw new Error(`the answer of ${call.url} is larger than ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: response.statusCode, json, text };
}

/** Aborted when the parent is, or after timeoutMs; `timedOut` tells which. */
function withTimeout(parent: AbortSignal, timeoutMs: number): { signal: AbortSignal; timedOut(): boolean } {
  const timer = AbortSignal.timeout(timeoutMs);
  return { signal: AbortSignal.any([parent, timer]), timedOut: () => timer.aborted && !parent.aborted };
}

async function runHttpAction(
  action: Extract<ActionConfig, { http: unknown }>,
  context: Omit<ActionContext, 'log'>,
  tail: LineTail,
): Promise<RawResult> {
  const { signal, timedOut } = withTimeout(context.signal, action.timeoutMs);
  let answer: HttpAnswer;
  try {
    answer = await callHttp(
      action.http,
      action.http.method === 'GET' ? undefined : { ...context, signal: undefined },
      signal,
    );
  } catch (error) {
    if (context.signal.aborted) return { kind: 'cancelled' };
    if (timedOut()) return { kind: 'failed', reason: 'Timeout', message: `no answer within ${action.timeoutMs} ms` };
    return { kind: 'failed', reason: 'ActionError', message: `${action.http.url}: ${(error as Error).message}` };
  }
  for (const line of answer.text.split('\n').slice(-20)) tail.push(line);
  const mapped = action.http.statusEvents[String(answer.status)];
  if (mapped !== undefined) return { kind: 'done', raised: [...mapped], message: `HTTP ${answer.status}` };
  if (answer.status >= 200 && answer.status < 300) {
    const events = (answer.json as { events?: unknown } | undefined)?.events;
    const raised = Array.isArray(events) ? events.map(String) : [];
    return { kind: 'done', raised, message: `HTTP ${answer.status}` };
  }
  return { kind: 'failed', reason: 'HttpStatus', message: `${action.http.url} answered HTTP ${answer.status}` };
}

const loadedModules = new Map<string, Promise<Record<string, unknown>>>();

async function runModuleAction(
  action: Extract<ActionConfig, { module: unknown }>,
  context: ActionContext,
  env: ActionEnvironment,
): Promise<RawResult> {
  const file = path.resolve(env.baseDir, action.module.path);
  let loading = loadedModules.get(file);
  if (loading === undefined) {
    loading = import(pathToFileURL(file).href) as Promise<Record<string, unknown>>;
    loadedModules.set(file, loading);
    loading.catch(() => loadedModules.delete(file));
  }
  const fn = (await loading)[action.module.export];
  if (typeof fn !== 'function') {
    return { kind: 'failed', reason: 'ActionError', message: `${file} has no function export "${action.module.export}"` };
  }
  const { signal, timedOut } = withTimeout(context.signal, action.timeoutMs);
  const aborted = new Promise<never>((_, reject) => {
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
  });
  aborted.catch(() => undefined);
  try {
    const value = await Promise.race([(fn as ModuleAction)({ ...context, signal }), aborted]);
    if (value === undefined || value === null) return { kind: 'done', raised: [], message: MODULE_SUCCEEDED_MESSAGE };
    if (typeof value === 'string') return { kind: 'done', raised: [value], message: MODULE_SUCCEEDED_MESSAGE };
    if (Array.isArray(value)) return { kind: 'done', raised: value.map(String), message: MODULE_SUCCEEDED_MESSAGE };
    return { kind: 'failed', reason: 'InvalidEvents', message: 'the module returned neither a string nor an array' };
  } catch (error) {
    if (context.signal.aborted) return { kind: 'cancelled' };
    if (timedOut()) return { kind: 'failed', reason: 'Timeout', message: `no result within ${action.timeoutMs} ms` };
    return { kind: 'failed', reason: 'ActionError', message: `the module threw: ${(error as Error)?.message ?? error}` };
  }
}
