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
});
