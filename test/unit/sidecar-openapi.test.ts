// sidecar/openapi.yaml is generated from the protocol's zod schemas: this fails when it is stale.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { OPENAPI_FILE, buildOpenApiDocument, renderOpenApiYaml } from '../../sidecar/openapi.ts';

describe('sidecar OpenAPI document', () => {
  it('matches the zod schemas (regenerate with `node sidecar/openapi.ts --write`)', () => {
    const committed = readFileSync(OPENAPI_FILE, 'utf8');
    expect(parse(committed)).toEqual(buildOpenApiDocument());
    expect(committed).toBe(renderOpenApiYaml());
  });

  it('documents every v1 path with its problems', () => {
    const doc = buildOpenApiDocument() as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/operations/{id}', '/v1/operations/{id}/cancel', '/v1/observation', '/healthz', '/readyz', '/metrics']),
    );
    expect(Object.keys(doc.paths['/v1/operations/{id}']?.put?.responses ?? {})).toEqual(
      expect.arrayContaining(['202', '200', '400', '401', '409', '413', '422']),
    );
  });

  it('documents the epoch header on every answer, and the start preconditions', () => {
    const doc = buildOpenApiDocument() as {
      paths: Record<string, Record<string, { responses: Record<string, { headers?: Record<string, unknown> }> }>>;
      components: { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> };
    };
    const responses = Object.values(doc.paths).flatMap((methods) => Object.values(methods).flatMap((m) => Object.entries(m.responses)));
    expect(responses.length).toBeGreaterThan(10);
    for (const [status, response] of responses) {
      expect(response.headers, status).toEqual({ 'okt-sidecar-epoch': { $ref: '#/components/headers/Epoch' } });
    }
    const { StartOperationRequest, Operation, Observation, Problem } = doc.components.schemas;
    expect(Object.keys(StartOperationRequest?.properties ?? {})).toEqual(expect.arrayContaining(['epoch', 'rerun', 'attempt']));
    expect(StartOperationRequest?.required).toEqual(['node']);
    expect(Operation?.required).toContain('epoch');
    expect(Observation?.required).toContain('epoch');
    expect(Problem?.properties).toHaveProperty('epoch');
    expect(Problem?.required ?? []).not.toContain('epoch');
  });
});
