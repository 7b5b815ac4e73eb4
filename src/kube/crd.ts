import { z } from 'zod';
import { fateOf, loadGraph, paramsSchema, requiredNodeParams, strandedReason, type Graph } from '../graph/index.ts';
import { lifecycleSpecSchema, lifecycleStatusSchema, SIDECAR_URL_PATTERN } from './lifecycle-resource.ts';
import { UNKNOWN_FIELDS_KEPT } from './unknown-status-fields.ts';
import { COMPACT_EVENT_MARKS, COMPACT_OPTIONAL_FIELDS, DEFAULT_STATUS_FORMAT, PACKED_FIELD, STATUS_FORMAT_ANNOTATION, UNPACKED_FIELDS, type StatusFormat } from './status-format.ts';

/** Where a graph's custom resource lives in the API. */
export interface CrdNames {
  group: string;
  version: string;
  kind: string;
  /** Default: the kind in lower case plus "s". */
  plural?: string;
  shortNames?: string[];
  /** The shape okt writes status in, for this version. Default: full. */
  statusFormat?: StatusFormat;
}

export interface ResolvedCrdNames {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  statusFormat: StatusFormat;
}

export const GRAPH_ANNOTATION = 'okt.dev/graph';
/** The revision of the graph the CRD was generated from (what the operator that goes with it drives CRs to). */
export const GRAPH_REVISION_ANNOTATION = 'okt.dev/graph-revision';
/** JSON: revision -> the graph's plain data, for that revision and every earlier one it still serves. */
export const GRAPH_REVISIONS_ANNOTATION = 'okt.dev/graph-revisions';

/** The graph and its earlier revisions as the CRD publishes them: one plain-data graph per revision. */
export function publishedRevisions(graph: Graph): Record<string, unknown> {
  const entries = [graph, ...graph.previous].map((g): [string, unknown] => {
    const { previous: _earlier, ...data } = g.toData();
    return [g.revision, data];
  });
  return Object.fromEntries(entries);
}

/**
 * The graph a CR of this CRD is on, read from the CRD's annotations: `revision` (a CR's
 * status.graphRevision), else the CRD's own. Undefined when the CRD does not publish it.
 */
export function publishedGraph(annotations: Record<string, string> | undefined, revision?: string): Graph | undefined {
  const text = annotations?.[GRAPH_REVISIONS_ANNOTATION];
  const wanted = revision ?? annotations?.[GRAPH_REVISION_ANNOTATION];
  if (text === undefined || wanted === undefined) return undefined;
  const data = (JSON.parse(text) as Record<string, unknown>)[wanted];
  return data === undefined ? undefined : loadGraph(data);
}

/** Every name spec.desiredState may hold: the nodes, their former names, and the removed nodes migrations map. */
export function desiredStateNames(graph: Graph): string[] {
  return [...graph.nodeNames, ...graph.formerNames.keys(), ...graph.migrations.removed.keys()];
}

export function resolveCrdNames(names: CrdNames): ResolvedCrdNames {
  const singular = names.kind.toLowerCase();
  return {
    group: names.group,
    version: names.version,
    kind: names.kind,
    plural: names.plural ?? `${singular}s`,
    singular,
    shortNames: names.shortNames ?? [],
    statusFormat: names.statusFormat ?? DEFAULT_STATUS_FORMAT,
  };
}

type JsonSchema = { [key: string]: unknown };

/**
 * The CustomResourceDefinition (apiextensions.k8s.io/v1) of a graph's custom resource. The spec and
 * status schemas come from the same zod schemas the operator parses with, made structural here, so
 * the server's validation and the operator's cannot drift apart.
 */
export function generateCrd(graph: Graph, names: CrdNames): Record<string, unknown> {
  const n = resolveCrdNames(names);
  const spec = structural(z.toJSONSchema(lifecycleSpecSchema, { target: 'openapi-3.0', io: 'input' }));
  const desiredState = (spec.properties as Record<string, JsonSchema>).desiredState!;
  desiredState.enum = desiredStateNames(graph);
  desiredState.description = `The node of the "${graph.name}" graph the application should reach (a former name of a node stands for it).`;
  const specFields = spec.properties as Record<string, JsonSchema>;
  // A URL okt never calls is refused by the server itself, naming the field (the operator judges it again).
  const sidecarFields = specFields.sidecar!.properties as Record<string, JsonSchema>;
  const sidecarUrl = sidecarFields.url!;
  sidecarUrl.pattern = SIDECAR_URL_PATTERN;
  sidecarUrl.description = 'The sidecar of this CR: an http or https URL (in any case) with a host and no user info.';
  const secretRef = sidecarFields.tokenSecretRef!.properties as Record<string, JsonSchema>;
  Object.assign(secretRef.name!, SECRET_NAME_RULE);
  Object.assign(secretRef.key!, SECRET_KEY_RULE);
  specFields.eventSink![VALIDATIONS] = [EVENT_SINK_RULE];
  const refused = refusedDesiredStates(graph);
  if (refused.length > 0) desiredState[VALIDATIONS] = refused;
  const params = paramsSchema(graph);
  if (params === undefined) delete specFields.params;
  else {
    specFields.params = { ...params, description: `The parameters of the "${graph.name}" graph's actions: the graph's own, and each node's.` };
    // A graph parameter without a default is required: so is the object that holds it.
    if (params.required !== undefined) spec.required = [...((spec.required as string[] | undefined) ?? []), 'params'];
    const needed = requiredParamsRules(graph);
    if (needed.length > 0) spec[VALIDATIONS] = needed;
  }
  const status = structural(z.toJSONSchema(lifecycleStatusSchema, { target: 'openapi-3.0' }));
  // A CR whose spec the operator cannot read gets a status of conditions only (InvalidSpec): the server
  // must take it. The operator's own parse still requires every field of a status that has a state.
  delete status.required;
  if (n.statusFormat === 'compact' || n.statusFormat === 'packed') leaveOptionalForCompact(status);
  if (n.statusFormat === 'packed') {
    (status.properties as Record<string, JsonSchema>)[PACKED_FIELD] = {
      type: 'string',
      description: `The packed status format: every field of okt's compact status but ${UNPACKED_FIELDS.join(', ')}, as JSON with " and ' swapped (docs/operator.md, "Status formats").`,
    };
  }
  preserveUnknownStatusFields(status);
  const conditions = (status.properties as Record<string, JsonSchema>).conditions!;
  conditions['x-kubernetes-list-type'] = 'map';
  conditions['x-kubernetes-list-map-keys'] = ['type'];
  // okt writes status back with other writers' fields, whatever this says; atomic spares the API
  // server tracking every status field in managedFields (1.2 KB of a 4.4 KB CR at rest).
  status['x-kubernetes-map-type'] = 'atomic';
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: `${n.plural}.${n.group}`,
      annotations: {
        [GRAPH_ANNOTATION]: graph.name,
        [GRAPH_REVISION_ANNOTATION]: graph.revision,
        [GRAPH_REVISIONS_ANNOTATION]: JSON.stringify(publishedRevisions(graph)),
        // Absent: full, the format of every okt before the choice (a CRD of an earlier okt says nothing).
        ...(n.statusFormat === DEFAULT_STATUS_FORMAT ? {} : { [STATUS_FORMAT_ANNOTATION]: n.statusFormat }),
      },
    },
    spec: {
      group: n.group,
      scope: 'Namespaced',
      names: { kind: n.kind, listKind: `${n.kind}List`, plural: n.plural, singular: n.singular, shortNames: n.shortNames },
      versions: [
        {
          name: n.version,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [
            { name: 'State', type: 'string', jsonPath: '.status.state' },
            { name: 'Desired', type: 'string', jsonPath: '.spec.desiredState' },
            { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
            { name: 'Path', type: 'string', jsonPath: '.status.pathSummary', priority: 1 },
            { name: 'Revision', type: 'string', jsonPath: '.status.graphRevision', priority: 1 },
            { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
          ],
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: graph.description || `A resource whose lifecycle follows the "${graph.name}" graph.`,
              required: ['spec'],
              properties: { spec, status },
            },
          },
        },
      ],
    },
  };
}

/** The compact format leaves out fields the rest of the status says: its CRD version does not require them, and has the marks of its events. */
function leaveOptionalForCompact(status: JsonSchema): void {
  const fields = status.properties as Record<string, JsonSchema>;
  for (const [where, optional] of Object.entries(COMPACT_OPTIONAL_FIELDS)) {
    const object = where.endsWith('[]') ? (fields[where.slice(0, -2)]!.items as JsonSchema) : fields[where]!;
    const required = ((object.required as string[] | undefined) ?? []).filter((field) => !optional.includes(field));
    if (required.length > 0) object.required = required;
    else delete object.required;
  }
  // Without them in the schema the API server would prune the marks, and the events would read back otherwise.
  const event = (fields.emitted!.properties as Record<string, JsonSchema>).events!.items as JsonSchema;
  for (const [mark, values] of Object.entries(COMPACT_EVENT_MARKS)) (event.properties as Record<string, JsonSchema>)[mark] = { type: 'integer', enum: [...values] };
}

/**
 * CRD validation rules (CEL, Kubernetes >= 1.25; `fieldPath` and `reason` >= 1.28): what the operator
 * would only find at reconcile time, refused by the API server at admission, naming the field. A
 * server ratchets them (>= 1.30): a write that leaves a refused value as it was stored is taken, so a
 * CR written before the rule stays writable and the operator's own check, its guard, still says why
 * it stalls.
 */
const VALIDATIONS = 'x-kubernetes-validations';
type ValidationRule = { rule: string; message: string; fieldPath?: string; reason?: 'FieldValueRequired' };

/** A Secret's name (a DNS-1123 subdomain), as spec.sidecar.tokenSecretRef.name: the operator would read no other (SidecarSecretUnreadable). */
const SECRET_NAME_RULE = {
  maxLength: 253,
  [VALIDATIONS]: [{
    rule: "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",
    message: "must be the name of a Secret: lower-case letters, digits, '-' and '.', starting and ending with a letter or digit",
  }],
};

/** A key of a Secret's data, as spec.sidecar.tokenSecretRef.key: no Secret holds another (SidecarSecretUnreadable). */
const SECRET_KEY_RULE = {
  maxLength: 253,
  [VALIDATIONS]: [{ rule: "self.matches('^[-._a-zA-Z0-9]+$')", message: "must be a key of a Secret's data: letters, digits, '-', '_' and '.'" }],
};

/**
 * spec.eventSink: where CloudEvents are POSTed, so an http or https URL with a host (Kubernetes' CEL
 * URL functions parse as Go does). Another (`sink.default.svc:8080`, which a URL parser reads as a
 * scheme) is no URL the emitter can send to: each delivery would fail and be retried for ever.
 */
const EVENT_SINK_RULE: ValidationRule = {
  rule: "isURL(self) && url(self).getScheme() in ['http', 'https'] && url(self).getHostname() != ''",
  message: 'must be an http or https URL with a host: CloudEvents are sent nowhere else',
};

/**
 * spec.desiredState may not name a removed node whose CRs the migrations refuse to move: the enum keeps
 * it for the CRs stored with it, the operator stalls them (UnknownState) with this very reason.
 */
function refusedDesiredStates(graph: Graph): ValidationRule[] {
  return [...graph.migrations.removed.keys()].flatMap((name) => {
    const reason = strandedReason(graph, name, fateOf(graph, name));
    return reason === undefined ? [] : [{ rule: `self != ${JSON.stringify(name)}`, message: reason }];
  });
}

/**
 * A node's parameters without a default are required while spec.desiredState names that node (or a
 * name standing for it): its action could not start (InvalidParams). Required only then, since a CR
 * passing through the node on its way elsewhere is judged by the operator when it gets there.
 */
function requiredParamsRules(graph: Graph): ValidationRule[] {
  const rules: ValidationRule[] = [];
  for (const [node, fields] of requiredNodeParams(graph)) {
    const names = desiredStateNames(graph).filter((name) => {
      const fate = fateOf(graph, name);
      return 'node' in fate && fate.node === node;
    });
    for (const field of fields) {
      rules.push({
        rule: `!(self.desiredState in ${JSON.stringify(names)}) || (has(self.params) && has(self.params.${celField(field)}))`,
        fieldPath: `.params.${field}`,
        reason: 'FieldValueRequired',
        message: `spec.params.${field} is required while spec.desiredState is ${node}: node ${node} declares it without a default, and its action cannot start without it`,
      });
    }
  }
  return rules;
}

/** A field name as a CEL rule spells it (Kubernetes escapes CEL's reserved words and "__"; parameter names need no more). */
function celField(name: string): string {
  return CEL_RESERVED.has(name) ? `__${name}__` : name.replaceAll('__', '__underscores__');
}
const CEL_RESERVED = new Set(['true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while']);

/**
 * The server prunes fields a structural schema does not name. Status keeps those of a newer okt or of
 * another tool where okt's writes keep them (UNKNOWN_FIELDS_KEPT); the fields okt knows are still
 * validated, and spec stays closed (an unknown spec field is a typo).
 */
function preserveUnknownStatusFields(status: JsonSchema): void {
  const PRESERVE = 'x-kubernetes-preserve-unknown-fields';
  const properties = status.properties as Record<string, JsonSchema>;
  status[PRESERVE] = true;
  for (const field of Object.keys(UNKNOWN_FIELDS_KEPT.objects)) properties[field]![PRESERVE] = true;
  for (const field of Object.keys(UNKNOWN_FIELDS_KEPT.lists)) (properties[field]!.items as JsonSchema)[PRESERVE] = true;
}

/** JSON Schema from zod, made a Kubernetes structural schema: no closed objects, free maps preserved. */
function structural(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$schema') continue;
    if (key === 'maximum' && value === Number.MAX_SAFE_INTEGER) continue;
    // The server checks `format: date-time` itself; zod's equivalent regular expression is noise there.
    if (key === 'pattern' && schema.format === 'date-time') continue;
    if (key === 'additionalProperties') {
      // zod closes every object (false); a free record is {} — which Kubernetes spells preserve-unknown-fields.
      if (isObject(value) && Object.keys(value).length === 0) out['x-kubernetes-preserve-unknown-fields'] = true;
      continue;
    }
    out[key] = transform(value);
  }
  return out;
}

function transform(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(transform);
  if (isObject(value)) return structural(value);
  return value;
}

function isObject(value: unknown): value is JsonSchema {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
