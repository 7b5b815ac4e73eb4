// The sidecar's configuration file (YAML or JSON): where to listen, the token, the journal, and per
// graph the action of each node and the probe. Strings may use ${NAME} or ${NAME:-default}, taken from
// the sidecar's environment, so one file serves several machines.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { DEFAULT_STATE_EVENT, EventNameSchema, GraphNameSchema, NodeNameSchema } from '../src/sidecar-client/protocol.ts';
import { didYouMean } from '../src/util/did-you-mean.ts';

const StatusKeySchema = z.string().regex(/^\d{1,3}$/, 'an exit code or an HTTP status');
const EnvSchema = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'), z.string());
const HeadersSchema = z.record(z.string().min(1), z.string());

const CommandSchema = z.strictObject({
  argv: z.array(z.string()).min(1, 'argv needs at least the program'),
  env: EnvSchema.default({}),
  cwd: z.string().optional().describe('Default: the directory of the config file.'),
});
const HttpCallSchema = z.strictObject({
  url: z.url(),
  method: z.enum(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']).default('POST'),
  headers: HeadersSchema.default({}),
});
const ModuleSchema = z.strictObject({
  path: z.string().min(1).describe('A .ts/.js/.mjs file, relative to the config file.'),
  export: z.string().default('default'),
});

const ActionCommonShape = {
  timeoutMs: z.number().int().positive().default(600_000),
  onSuccess: z
    .array(EventNameSchema)
    .default([])
    .describe(
      `Events raised by a successful action that raised none itself. Default none: the node rests until the spec ` +
        `moves it on; [${DEFAULT_STATE_EVENT}] moves on to the default child by itself.`,
    ),
  onFailure: EventNameSchema.optional().describe('Event raised when the action fails; the operation then succeeds.'),
  idempotent: z.boolean().default(false).describe('Re-run the action when a crash interrupted it.'),
};

export const ActionSchema = z.union([
  z.strictObject({ command: CommandSchema, ...ActionCommonShape }),
  z.strictObject({
    http: HttpCallSchema.extend({
      statusEvents: z.record(StatusKeySchema, z.array(EventNameSchema)).default({}),
    }),
    ...ActionCommonShape,
  }),
  z.strictObject({ module: ModuleSchema, ...ActionCommonShape }),
]);

export const ProbeSchema = z
  .strictObject({
    command: CommandSchema.optional(),
    http: HttpCallSchema.extend({ method: z.enum(['GET', 'POST']).default('GET') }).optional(),
    intervalMs: z.number().int().min(50).default(2_000),
    timeoutMs: z.number().int().positive().default(5_000),
    states: z.record(StatusKeySchema, NodeNameSchema).default({}).describe('Exit code or HTTP status -> node observed.'),
    events: z
      .record(StatusKeySchema, EventNameSchema)
      .default({})
      .describe('Exit code or HTTP status -> event raised when first seen outside any action.'),
  })
  .refine((p) => (p.command === undefined) !== (p.http === undefined), {
    message: 'a probe needs exactly one of command or http',
  });

export const GraphConfigSchema = z.strictObject({
  graph: z
    .string()
    .min(1)
    .optional()
    .describe('The graph file (a module, JSON or YAML, as okt graph reads it), relative to the config file: checked against at start.'),
  probe: ProbeSchema.optional(),
  nodes: z.record(NodeNameSchema, ActionSchema),
});

export const SidecarConfigSchema = z.strictObject({
  listen: z
    .strictObject({
      host: z.string().default('127.0.0.1'),
      port: z.coerce.number().int().min(0).max(65535).default(8479),
    })
    .default({ host: '127.0.0.1', port: 8479 }),
  tokenFile: z.string().min(1),
  journal: z.string().min(1).describe('Path of the append-only journal (JSON lines).'),
  bodyLimitBytes: z.number().int().positive().default(64 * 1024),
  maxActiveOperations: z.number().int().positive().default(1),
  retainOperations: z.number().int().positive().default(1000).describe('Operations kept with their output tail.'),
  journalCompactionBytes: z
    .number()
    .int()
    .min(1024)
    .default(4 * 1024 * 1024)
    .describe('The journal is rewritten while running once it exceeds this and twice its size after the last rewrite.'),
  outputTailLines: z.number().int().min(0).default(50),
  killGraceMs: z.number().int().min(0).default(5_000),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  graphs: z.record(GraphNameSchema, GraphConfigSchema).refine((g) => Object.keys(g).length > 0, {
    message: 'at least one graph is needed',
  }),
});

export type SidecarConfig = z.infer<typeof SidecarConfigSchema> & { baseDir: string };
export type ActionConfig = z.infer<typeof ActionSchema>;
export type CommandConfig = z.infer<typeof CommandSchema>;
export type ProbeConfig = z.infer<typeof ProbeSchema>;
export type GraphConfig = z.infer<typeof GraphConfigSchema>;

export class SidecarConfigError extends Error {
  override name = 'SidecarConfigError';
}

/** One problem of a config: the field (`graphs.database.nodes.Running`) and what is wrong with it. */
export interface ConfigProblem {
  field: string;
  reason: string;
}

/** Every problem in one error, one per line. */
export function invalidConfig(problems: readonly ConfigProblem[]): SidecarConfigError {
  return new SidecarConfigError(`invalid sidecar config:\n${problems.map((p) => `  ${p.field}: ${p.reason}`).join('\n')}`);
}

/** Expands ${NAME} and ${NAME:-default} in every string of plain data. */
export function expandEnv(data: unknown, env: NodeJS.ProcessEnv, where = ''): unknown {
  if (typeof data === 'string') {
    return data.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g, (_m, name: string, fallback?: string) => {
      const value = env[name];
      if (value !== undefined && value !== '') return value;
      if (fallback !== undefined) return fallback;
      throw new SidecarConfigError(`${where || 'config'}: environment variable ${name} is not set and has no default`);
    });
  }
  if (Array.isArray(data)) return data.map((v, i) => expandEnv(v, env, `${where}[${i}]`));
  if (data !== null && typeof data === 'object') {
    return Object.fromEntries(
      Object.entries(data).map(([k, v]) => [k, expandEnv(v, env, where ? `${where}.${k}` : k)]),
    );
  }
  return data;
}

const fieldName = (path: readonly PropertyKey[]) => (path.length > 0 ? path.map(String).join('.') : '(root)');

/**
 * One problem per thing wrong, each naming its field. Given the schema and the data it refused, an
 * unknown key is named with the keys expected there (and the one meant, for a typo), and a union (an
 * action: command, http or module) is judged by the branch its data chose rather than "Invalid input".
 */
export function formatIssues(error: z.ZodError, parsed?: { schema: z.ZodType; input: unknown }): ConfigProblem[] {
  return error.issues.flatMap((issue) => problemsOf(issue, [], parsed));
}

function problemsOf(issue: z.core.$ZodIssue, base: readonly PropertyKey[], parsed: { schema: z.ZodType; input: unknown } | undefined): ConfigProblem[] {
  const at = [...base, ...issue.path];
  const schema = parsed === undefined ? undefined : schemaAt(parsed.schema, at);
  if (issue.code === 'unrecognized_keys' && schema !== undefined) {
    const known = keysOf(schema);
    return issue.keys.map((key) => ({ field: fieldName([...at, key]), reason: `unknown key${didYouMean(key, known)} (expected: ${known.join(', ')})` }));
  }
  if (issue.code === 'invalid_type' && parsed !== undefined && valueAt(parsed.input, at) === undefined) {
    return [{ field: fieldName(at), reason: `missing: expected ${issue.expected}` }];
  }
  const options = schema === undefined ? undefined : unionOptions(schema);
  if (issue.code !== 'invalid_union' || parsed === undefined || options === undefined || options.length !== issue.errors.length) {
    return [{ field: fieldName(at), reason: issue.message }];
  }
  // Each branch is chosen by a key of its own (command, http, module): judge the data by the one it has.
  const own = options.map((option, i) => keysOf(option).filter((key) => options.every((other, j) => j === i || !keysOf(other).includes(key))));
  const value = valueAt(parsed.input, at);
  const given = (keys: string[]) => keys.filter((key) => typeof value === 'object' && value !== null && key in value);
  const chosen = own.flatMap((keys, i) => (given(keys).length > 0 ? [i] : []));
  const choices = own.map((keys) => keys.join('/')).join(', ');
  if (chosen.length === 1) return (issue.errors[chosen[0]!] ?? []).flatMap((inner) => problemsOf(inner, at, parsed));
  if (chosen.length > 1) return [{ field: fieldName(at), reason: `needs exactly one of ${choices}; it has ${own.flatMap(given).join(', ')}` }];
  // None chosen: that, and what every branch finds wrong alike (an unknown key, a bad timeoutMs).
  const same = (a: z.core.$ZodIssue, b: z.core.$ZodIssue) => a.code === b.code && a.message === b.message && a.path.join('.') === b.path.join('.');
  const shared = (issue.errors[0] ?? []).filter((inner) => issue.errors.every((branch) => branch.some((other) => same(inner, other))));
  return [{ field: fieldName(at), reason: `needs one of ${choices}` }, ...shared.flatMap((inner) => problemsOf(inner, at, parsed))];
}

/** The schema under wrappers (optional, default, a pipe's input). */
function unwrap(schema: z.core.$ZodType): z.core.$ZodType {
  const def = schema._zod.def as { type: string; innerType?: z.core.$ZodType; in?: z.core.$ZodType };
  if (def.innerType !== undefined) return unwrap(def.innerType);
  if (def.type === 'pipe' && def.in !== undefined) return unwrap(def.in);
  return schema;
}

function unionOptions(schema: z.core.$ZodType): z.core.$ZodType[] | undefined {
  const def = unwrap(schema)._zod.def as { type: string; options?: z.core.$ZodType[] };
  return def.type === 'union' ? def.options : undefined;
}

/** The keys an object schema knows (for a union, those of every branch: first those of one branch only). */
function keysOf(schema: z.core.$ZodType): string[] {
  const options = unionOptions(schema);
  if (options !== undefined) {
    const keys = [...new Set(options.flatMap(keysOf))];
    const inAll = (key: string) => options.every((option) => keysOf(option).includes(key));
    return [...keys.filter((key) => !inAll(key)), ...keys.filter(inAll)];
  }
  const def = unwrap(schema)._zod.def as { type: string; shape?: Record<string, z.core.$ZodType> };
  return def.type === 'object' && def.shape !== undefined ? Object.keys(def.shape) : [];
}

/** The schema that checks the value at `path` (in a union, the first branch that knows the next key). */
function schemaAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): z.core.$ZodType | undefined {
  if (path.length === 0) return schema;
  const [key, ...rest] = path;
  const options = unionOptions(schema);
  if (options !== undefined) {
    const option = options.find((o) => keysOf(o).includes(String(key)));
    return option === undefined ? undefined : schemaAt(option, path);
  }
  const def = unwrap(schema)._zod.def as {
    type: string;
    shape?: Record<string, z.core.$ZodType>;
    valueType?: z.core.$ZodType;
    element?: z.core.$ZodType;
  };
  const next = def.type === 'object' ? def.shape?.[String(key)] : def.type === 'record' ? def.valueType : def.type === 'array' ? def.element : undefined;
  return next === undefined ? undefined : schemaAt(next, rest);
}

function valueAt(value: unknown, path: readonly PropertyKey[]): unknown {
  return path.reduce<unknown>((v, key) => (typeof v === 'object' && v !== null ? (v as Record<PropertyKey, unknown>)[key] : undefined), value);
}

/** Validates plain config data; relative paths are resolved against baseDir. */
export function parseSidecarConfig(data: unknown, baseDir: string, env: NodeJS.ProcessEnv = process.env): SidecarConfig {
  const input = expandEnv(data, env);
  const result = SidecarConfigSchema.safeParse(input);
  if (!result.success) throw invalidConfig(formatIssues(result.error, { schema: SidecarConfigSchema, input }));
  const config = result.data;
  for (const [graphName, graph] of Object.entries(config.graphs)) {
    if (Object.keys(graph.nodes).length === 0 && graph.probe === undefined) {
      throw invalidConfig([{ field: `graphs.${graphName}`, reason: 'needs nodes or a probe' }]);
    }
    if (graph.graph !== undefined) graph.graph = path.resolve(baseDir, graph.graph);
  }
  return {
    ...config,
    tokenFile: path.resolve(baseDir, config.tokenFile),
    journal: path.resolve(baseDir, config.journal),
    baseDir,
  };
}

export function loadSidecarConfig(file: string, env: NodeJS.ProcessEnv = process.env): SidecarConfig {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new SidecarConfigError(`cannot read sidecar config ${file}: ${(error as Error).message}`);
  }
  let data: unknown;
  try {
    data = parseYaml(text); // YAML is a superset of JSON
  } catch (error) {
    throw new SidecarConfigError(`sidecar config ${file} is not valid YAML/JSON: ${(error as Error).message}`);
  }
  return parseSidecarConfig(data, path.dirname(path.resolve(file)), env);
}
