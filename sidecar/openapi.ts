// The OpenAPI 3.1 document of the sidecar protocol, built from the zod schemas themselves.
// `node sidecar/openapi.ts --write` regenerates sidecar/openapi.yaml; a unit test fails when it is stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { z } from 'zod';
import {
  API_PREFIX,
  EPOCH_HEADER,
  EpochSchema,
  GetOperationQuerySchema,
  HealthSchema,
  ObservationQuerySchema,
  ObservationSchema,
  OperationIdSchema,
  OperationSchema,
  ProblemSchema,
  StartOperationRequestSchema,
} from '../src/sidecar-client/protocol.ts';

export const OPENAPI_FILE = fileURLToPath(new URL('./openapi.yaml', import.meta.url));

type JsonSchema = Record<string, unknown>;

function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _drop, ...rest } = z.toJSONSchema(schema, { io }) as JsonSchema;
  return rest;
}

function queryParameters(schema: z.ZodObject): JsonSchema[] {
  const properties = jsonSchema(schema, 'input').properties as Record<string, JsonSchema>;
  return Object.entries(properties).map(([name, s]) => {
    const { description, ...rest } = s;
    return { name, in: 'query', required: false, ...(description === undefined ? {} : { description }), schema: rest };
  });
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (name: string) => ({ 'application/json': { schema: ref(name) } });
const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: ref('Problem') } } });
const idParameter = { name: 'id', in: 'path', required: true, schema: jsonSchema(OperationIdSchema, 'input') };
const security = [{ bearer: [] }];
const common = {
  '400': problem('Invalid request (the problem names the field)'),
  '401': problem('Missing or wrong bearer token'),
  '503': problem('Not serving: starting (its journal is being opened; no epoch yet), shutting down, or its journal failed (journal-failed: start it again)'),
};

/** Every answer carries the epoch header: added to each response of each path. */
function withEpochHeader<T extends Record<string, Record<string, { responses: Record<string, JsonSchema> }>>>(paths: T): T {
  for (const methods of Object.values(paths)) {
    for (const operation of Object.values(methods)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        operation.responses[status] = { ...response, headers: { [EPOCH_HEADER]: { $ref: '#/components/headers/Epoch' } } };
      }
    }
  }
  return paths;
}

export function buildOpenApiDocument(): JsonSchema {
  return {
    openapi: '3.1.0',
    info: {
      title: 'okt sidecar',
      version: API_PREFIX.slice(1),
      description:
        'Runs the action of a graph node asynchronously beside the application and reports what the application is doing. ' +
        'Every /v1 call needs `Authorization: Bearer <token>`. Every 4xx answer is an RFC 9457 problem. ' +
        `Every answer carries the sidecar's epoch in the \`${EPOCH_HEADER}\` header: it changes exactly when the sidecar ` +
        'starts without its journal, that is when it forgets its operations and probe events.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      headers: {
        Epoch: { description: "The sidecar's epoch (see Operation.epoch).", required: true, schema: jsonSchema(EpochSchema, 'output') },
      },
      schemas: {
        StartOperationRequest: jsonSchema(StartOperationRequestSchema, 'input'),
        Operation: jsonSchema(OperationSchema, 'output'),
        Observation: jsonSchema(ObservationSchema, 'output'),
        Problem: jsonSchema(ProblemSchema, 'output'),
        Health: jsonSchema(HealthSchema, 'output'),
      },
    },
    paths: withEpochHeader({
      [`${API_PREFIX}/operations/{id}`]: {
        put: {
          summary: 'Start the action of a node (idempotent by id)',
          description:
            'Answers 202 once the operation is journaled, before the action ends. The same id with the same body answers ' +
            '200 with that operation (whatever its phase); the same id with another body (graph, node, params: epoch, ' +
            'rerun and attempt do not count) is 409 id-conflict. A start while maxActiveOperations are active is 409 busy ' +
            '(the problem lists activeOperations). An epoch other than this sidecar\'s is 409 epoch-mismatch, a rerun of ' +
            'an action not declared idempotent 409 not-idempotent: nothing is recorded then.',
          security,
          parameters: [idParameter],
          requestBody: { required: true, content: json('StartOperationRequest') },
          responses: {
            '200': { description: 'This id was started before with the same body', content: json('Operation') },
            '202': { description: 'Accepted; poll GET with ?wait= for the end', content: json('Operation') },
            ...common,
            '409': problem(
              'id-conflict: the id is taken by another request; busy: another operation is active; epoch-mismatch: body.epoch ' +
                "is not this sidecar's epoch; not-idempotent: body.rerun for an action not declared idempotent",
            ),
            '413': problem('The body is too large'),
            '415': problem('The body is not JSON'),
            '422': problem('No such graph, or no action for that node'),
          },
        },
        get: {
          summary: 'Read an operation; with ?wait=ms, long-poll until it has finished',
          security,
          parameters: [idParameter, ...queryParameters(GetOperationQuerySchema)],
          responses: {
            '200': { description: 'The operation', content: json('Operation') },
            ...common,
            '404': problem('No such operation'),
          },
        },
      },
      [`${API_PREFIX}/operations/{id}/cancel`]: {
        post: {
          summary: 'Cancel an operation (its process group is killed); answers once it has stopped',
          security,
          parameters: [idParameter],
          responses: {
            '200': { description: 'The operation, Cancelled unless it had already finished', content: json('Operation') },
            ...common,
            '404': problem('No such operation'),
          },
        },
      },
      [`${API_PREFIX}/observation`]: {
        get: {
          summary: 'What the probe observes: the node the application is in, and events raised outside any action',
          security,
          parameters: queryParameters(ObservationQuerySchema),
          responses: {
            '200': { description: 'The observation', content: json('Observation') },
            ...common,
            '422': problem('No such graph'),
          },
        },
      },
      '/healthz': {
        get: {
          summary: 'Liveness',
          responses: {
            '200': { description: 'Alive', content: json('Health') },
            '503': { description: 'Its journal failed (status failed): start it again', content: json('Health') },
          },
        },
      },
      '/readyz': {
        get: {
          summary: 'Readiness (the journal is loaded and the server listens)',
          responses: {
            '200': { description: 'Ready', content: json('Health') },
            '503': { description: 'Not ready: starting, or its journal failed', content: json('Health') },
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          responses: { '200': { description: 'Metrics', content: { 'text/plain': { schema: { type: 'string' } } } } },
        },
      },
    }),
  };
}

export function renderOpenApiYaml(): string {
  return `# Generated from src/sidecar-client/protocol.ts by \`node sidecar/openapi.ts --write\`; do not edit.\n${stringify(buildOpenApiDocument(), { lineWidth: 0 })}`;
}

if (import.meta.main && process.argv.includes('--write')) {
  writeFileSync(OPENAPI_FILE, renderOpenApiYaml());
  process.stdout.write(`wrote ${OPENAPI_FILE}\n`);
}
