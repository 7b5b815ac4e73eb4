// Typed parameters: the values a CR carries in spec.params for its nodes' actions. A graph declares
// them as a zod 4 schema (or, as plain data, the JSON Schema it becomes) for the whole graph and per
// node. Each declaration must become a Kubernetes structural schema, since the CRD's spec.params is
// made of them: that is checked when the graph is defined, naming every problem.
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import type { GraphProblem } from './problems.ts';
import type { GraphData } from './schema.ts';

/** A JSON Schema object (OpenAPI 3.0, the dialect of a CRD). */
export type JsonSchema = { readonly [key: string]: unknown };

/** What a change of spec.params does to a node the CR rests on: nothing until the next transition, or run its action again. */
export type ParamsChangePolicy = 'NextTransition' | 'Rerun';

/** A declaration of parameters: the CRD form, and the zod schema that checks a CR's values at run time. */
export interface ParamsDeclaration {
  /** `{ type: 'object', properties, required? }`, as the CRD holds it. */
  readonly schema: JsonSchema;
  readonly validator: z.ZodType;
}

/** A parameter's name: an environment variable's name (`OKT_PARAM_<NAME>` for command actions). */
export const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;
export const PARAM_NAME_RULE = 'a parameter name of 1-63 letters, digits or "_", not starting with a digit';

/** What one wrong value is: the field (`spec.params.version`) and why. */
export interface ParamsProblem {
  readonly field: string;
  readonly reason: string;
}

export type ParamsCheck = { readonly ok: true; readonly params: Record<string, unknown> } | { readonly ok: false; readonly problems: readonly ParamsProblem[] };

type Report = (code: GraphProblem['code'], node: string | undefined, path: PropertyKey[], message: string) => void;

/** A zod 4 schema by shape: a graph module may use its own copy of zod. */
function isZodSchema(value: unknown): value is z.ZodType {
  return typeof value === 'object' && value !== null && '_zod' in value;
}

/**
 * The declaration of a graph's or a node's `params`, checked: a zod schema or a JSON Schema of an object
 * whose every part a CRD can hold. Undefined (with the problems reported) when it cannot be one.
 */
export function readParams(declared: unknown, where: { node?: string; path: PropertyKey[] }, report: Report): ParamsDeclaration | undefined {
  const owner = where.node === undefined ? 'params' : `node "${where.node}": params`;
  let json: unknown;
  try {
    json = isZodSchema(declared) ? z.toJSONSchema(declared, { target: 'openapi-3.0', io: 'input', unrepresentable: 'any', override: markUnrepresentable }) : declared;
  } catch (error) {
    report('invalid-params', where.node, where.path, `${owner}: cannot become a CRD schema: ${(error as Error).message}`);
    return undefined;
  }
  const problems: string[] = [];
  const schema = crdSchema(json, [], problems);
  const fields = (json as { properties?: unknown } | null)?.properties;
  if ((json as { type?: unknown } | null)?.type !== 'object' || typeof fields !== 'object' || fields === null) {
    problems.push(': must be an object of named parameters (z.object({...}))');
  } else {
    for (const name of Object.keys(fields)) if (!PARAM_NAME.test(name)) problems.push(`.${name}: not ${PARAM_NAME_RULE} (it also names an environment variable)`);
  }
  for (const problem of problems) report('invalid-params', where.node, where.path, `${owner}${problem}`);
  if (problems.length > 0 || schema === undefined) return undefined;
  const validator = isZodSchema(declared) ? declared : z.fromJSONSchema(schema as z.core.JSONSchema.JSONSchema, { defaultTarget: 'openapi-3.0' });
  return { schema, validator };
}

/** The zod types JSON Schema (or a CRD) has no form for, and what to use instead. */
const UNREPRESENTABLE: Record<string, string> = {
  date: 'use z.iso.datetime() (a string)',
  bigint: 'use z.number().int()',
  set: 'use z.array()',
  tuple: 'use z.array() or z.object()',
  map: 'use z.record(z.string(), ...)',
  symbol: '',
  function: '',
  promise: '',
  custom: '',
  nan: '',
  undefined: 'use .optional()',
  void: '',
  never: '',
  file: '',
};
const MARK = 'x-okt-zod-type';

/** Marks what zod could not convert, so the check below names it (toJSONSchema would stop at the first). */
function markUnrepresentable(ctx: { zodSchema: unknown; jsonSchema: Record<string, unknown> }): void {
  const type = (ctx.zodSchema as { _zod?: { def?: { type?: string } } })._zod?.def?.type;
  if (type === undefined || !(type in UNREPRESENTABLE)) return;
  for (const key of Object.keys(ctx.jsonSchema)) delete ctx.jsonSchema[key];
  ctx.jsonSchema[MARK] = type;
}

const TYPES = new Set(['object', 'array', 'string', 'number', 'integer', 'boolean']);
/** The keywords of a structural schema that a parameter may use, by where they apply. */
const COMMON = new Set(['type', 'description', 'title', 'default', 'nullable', 'enum', 'example']);
const BY_TYPE: Record<string, ReadonlySet<string>> = {
  object: new Set(['properties', 'required', 'additionalProperties', 'minProperties', 'maxProperties']),
  array: new Set(['items', 'minItems', 'maxItems', 'uniqueItems']),
  string: new Set(['minLength', 'maxLength', 'pattern', 'format']),
  number: new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']),
  integer: new Set(['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf']),
  boolean: new Set(),
};
const WHY_NOT: Record<string, string> = {
  anyOf: 'a union cannot become a CRD schema (every field has one type); use z.enum([...]) for a choice of strings',
  oneOf: 'a union cannot become a CRD schema (every field has one type); use z.enum([...]) for a choice of strings',
  allOf: 'an intersection cannot become a CRD schema; declare one z.object with every field',
  not: '"not" cannot become a CRD schema',
  $ref: 'a recursive or shared schema ($ref) cannot become a CRD schema',
};

/**
 * `node` as a CRD can hold it (zod's bounds of safe integers and closed objects dropped: the server
 * prunes unknown fields anyway), adding to `problems` every part it cannot hold.
 */
function crdSchema(node: unknown, at: string[], problems: string[]): JsonSchema | undefined {
  const here = at.map((part) => (part === '[]' ? part : `.${part}`)).join('');
  const problem = (reason: string) => problems.push(`${here}: ${reason}`);
  if (typeof node !== 'object' || node === null || Array.isArray(node)) {
    problem('is not a schema');
    return undefined;
  }
  const given = node as JsonSchema;
  const out: Record<string, unknown> = {};
  const zodType = given[MARK];
  if (typeof zodType === 'string') {
    const instead = UNREPRESENTABLE[zodType];
    problem(`z.${zodType}() has no JSON form, so no CRD schema${instead ? `; ${instead}` : ''}`);
    return undefined;
  }
  const kind = given.type;
  if (typeof kind !== 'string' || !TYPES.has(kind)) {
    const unsupported = Object.keys(WHY_NOT).find((key) => key in given);
    problem(unsupported !== undefined ? WHY_NOT[unsupported]! : kind === undefined ? 'has no type (z.any() and z.unknown() cannot become a CRD schema)' : `type ${JSON.stringify(kind)} cannot become a CRD schema`);
    return undefined;
  }
  for (const [key, value] of Object.entries(given)) {
    if (key === '$schema' || key === 'id') continue;
    if ((key === 'minimum' && value === Number.MIN_SAFE_INTEGER) || (key === 'maximum' && value === Number.MAX_SAFE_INTEGER)) continue;
    if (key === 'additionalProperties' && value === false) continue;
    if (key in WHY_NOT) problem(WHY_NOT[key]!);
    else if (key === 'uniqueItems' && value === true) problem('uniqueItems cannot become a CRD schema (the API server refuses it as too costly to check)');
    else if (!COMMON.has(key) && !BY_TYPE[kind]!.has(key)) problem(`"${key}" cannot become a CRD schema`);
    else if (key === 'properties') {
      const properties: Record<string, unknown> = {};
      for (const [name, property] of Object.entries(value as JsonSchema)) properties[name] = crdSchema(property, [...at, name], problems);
      out.properties = properties;
    } else if (key === 'items' || key === 'additionalProperties') out[key] = crdSchema(value, [...at, key === 'items' ? '[]' : '*'], problems);
    else out[key] = value;
  }
  if (out.properties !== undefined && out.additionalProperties !== undefined) problem("has both named fields and a record's values (a CRD schema has one or the other)");
  return out;
}

/**
 * spec.params of the CRD: every parameter of the graph and of its nodes (one field may be declared in
 * several places, the same each time). Only the graph's own required parameters are required: a
 * node's are checked when its action is about to start. Undefined when nothing declares any.
 */
export function crdParamsSchema(graph: { readonly params: ParamsDeclaration | undefined }, nodes: readonly { readonly params: ParamsDeclaration | undefined }[]): JsonSchema | undefined {
  const declarations = [graph.params, ...nodes.map((n) => n.params)].filter((d) => d !== undefined);
  if (declarations.length === 0) return undefined;
  const properties: Record<string, unknown> = {};
  for (const declaration of declarations) Object.assign(properties, declaration.schema.properties as JsonSchema | undefined);
  const required = (graph.params?.schema.required as string[] | undefined) ?? [];
  // Defaults apply inside an object the server has: an absent spec.params becomes {} when nothing in it is required.
  return required.length > 0 ? { type: 'object', properties, required } : { type: 'object', properties, default: {} };
}

/** Every field declared twice (by the graph and a node, or by two nodes) with two different schemas. */
export function checkParamsConflicts(data: GraphData, declarations: ReadonlyMap<string | undefined, ParamsDeclaration>, report: Report): void {
  const owners = new Map<string, { owner: string | undefined; schema: unknown }>();
  const describe = (owner: string | undefined) => (owner === undefined ? 'the graph' : `node "${owner}"`);
  for (const [owner, declaration] of declarations) {
    const index = owner === undefined ? -1 : data.nodes.findIndex((n) => n.name === owner);
    for (const [field, schema] of Object.entries((declaration.schema.properties as JsonSchema | undefined) ?? {})) {
      const first = owners.get(field);
      if (first === undefined) owners.set(field, { owner, schema });
      else if (!isDeepStrictEqual(first.schema, schema)) {
        const path = owner === undefined ? ['params', field] : ['nodes', index, 'params', field];
        report('params-conflict', owner, path, `${describe(owner)}: params.${field} is also declared by ${describe(first.owner)} with another schema (spec.params has one field of each name)`);
      }
    }
  }
}

/**
 * The parameters a node's action gets: the graph's and the node's own, taken from spec.params and
 * checked (defaults filled in). Undefined when neither declares any.
 */
export function checkParams(graphParams: ParamsDeclaration | undefined, nodeParams: ParamsDeclaration | undefined, given: Record<string, unknown> | undefined): ParamsCheck | undefined {
  if (graphParams === undefined && nodeParams === undefined) return undefined;
  const params: Record<string, unknown> = {};
  const problems: ParamsProblem[] = [];
  for (const declaration of [graphParams, nodeParams]) {
    if (declaration === undefined) continue;
    // Each schema sees only its own fields: a strict object must not refuse the others' parameters.
    const own = Object.keys((declaration.schema.properties as JsonSchema | undefined) ?? {});
    const picked = Object.fromEntries(own.filter((k) => given?.[k] !== undefined).map((k) => [k, given?.[k]]));
    const result = declaration.validator.safeParse(picked);
    if (result.success) Object.assign(params, result.data);
    else for (const issue of result.error.issues) problems.push({ field: ['spec', 'params', ...issue.path.map(String)].join('.'), reason: issue.message });
  }
  return problems.length > 0 ? { ok: false, problems } : { ok: true, params };
}
