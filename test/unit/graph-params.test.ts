// Typed parameters at definition time: a zod schema (or its JSON Schema) per graph and per node,
// checked to become a CRD schema with every problem named, part of the revision, kept by toData().
import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { defineGraph, diffGraphs, loadGraph, nodeParams, paramsSchema, renderMermaid, type NodeDefinition } from '../../src/graph/index.ts';
import { generateCrd } from '../../src/kube/crd.ts';
import { brief, problemsOf } from '../fixtures/graph-problems.ts';
import { brokerGraph } from '../fixtures/params-graphs.ts';

type Small = 'Start' | 'Run' | 'End';
/** Start -> Run -> End, Run (the one node with an action) changed by `extra`. */
const nodes = (extra: Partial<NodeDefinition<Small>> | Record<string, unknown> = {}): { [K in Small]: NodeDefinition<Small> } => ({
  Start: { children: ['Run'] },
  Run: { children: ['End'], ...extra },
  End: {},
});

describe('a parameter schema that cannot become a CRD schema', () => {
  test('every part that cannot is named at once, with the field and what to use instead', () => {
    const problems = problemsOf(() =>
      defineGraph({
        name: 'g',
        entry: 'Start',
        params: z.object({
          when: z.date(),
          size: z.union([z.string(), z.number()]),
          tags: z.set(z.string()),
          anything: z.any(),
          'bad-name': z.string(),
          pair: z.tuple([z.string(), z.number()]),
          nested: z.object({ big: z.bigint() }),
        }),
        nodes: nodes(),
      }),
    );
    expect(problems.map((p) => p.message)).toEqual([
      'params.when: z.date() has no JSON form, so no CRD schema; use z.iso.datetime() (a string)',
      'params.size: a union cannot become a CRD schema (every field has one type); use z.enum([...]) for a choice of strings',
      'params.tags: z.set() has no JSON form, so no CRD schema; use z.array()',
      'params.anything: has no type (z.any() and z.unknown() cannot become a CRD schema)',
      'params.pair: z.tuple() has no JSON form, so no CRD schema; use z.array() or z.object()',
      'params.nested.big: z.bigint() has no JSON form, so no CRD schema; use z.number().int()',
      'params.bad-name: not a parameter name of 1-63 letters, digits or "_", not starting with a digit (it also names an environment variable)',
    ]);
    expect(new Set(problems.map((p) => p.code))).toEqual(new Set(['invalid-params']));
  });

  test('not an object of named parameters; a JSON Schema with what a CRD refuses', () => {
    expect(problemsOf(() => defineGraph({ name: 'g', entry: 'Start', params: z.string(), nodes: nodes() })).map((p) => p.message)).toEqual([
      'params: must be an object of named parameters (z.object({...}))',
    ]);
    const json = { type: 'object', properties: { ids: { type: 'array', items: { type: 'string' }, uniqueItems: true }, x: { type: 'string', $ref: '#/x' } } };
    expect(problemsOf(() => loadGraph({ name: 'g', entry: 'Start', nodes: nodes({ params: json }) })).map((p) => p.message)).toEqual([
      'node "Run": params.ids: uniqueItems cannot become a CRD schema (the API server refuses it as too costly to check)',
      'node "Run": params.x: a recursive or shared schema ($ref) cannot become a CRD schema',
    ]);
  });

  test('params and onParamsChange need an action; onParamsChange needs parameters; a field declared twice must be the same', () => {
    const problems = problemsOf(() =>
      defineGraph({
        name: 'g',
        entry: 'Start',
        params: z.object({ replicas: z.number().int() }),
        nodes: {
          Start: { children: ['A'], params: z.object({ x: z.string() }) },
          A: { children: ['B'], params: z.object({ replicas: z.string() }), onParamsChange: 'Rerun' },
          B: { children: ['End'], params: z.object({ replicas: z.number().int() }) },
          End: { onParamsChange: 'Rerun' },
        },
      }),
    );
    expect(brief(problems)).toEqual(['params-conflict:A', 'policy-without-action:End', 'policy-without-action:Start']);
    expect(problems.find((p) => p.code === 'params-conflict')?.message).toBe(
      'node "A": params.replicas is also declared by the graph with another schema (spec.params has one field of each name)',
    );
    const noParams = problemsOf(() => defineGraph({ name: 'g', entry: 'Start', nodes: nodes({ onParamsChange: 'Rerun' }) }));
    expect(noParams.map((p) => p.message)).toEqual(['node "Run": onParamsChange applies to parameters, and neither the graph nor the node declares any']);
  });
});

describe('parameters as the graph holds them', () => {
  const graph = brokerGraph();

  test('toData() writes their JSON Schema; loaded back, the graph has the same revision and checks values the same way', () => {
    const loaded = loadGraph(JSON.parse(JSON.stringify(graph.toData())));
    expect(loaded.revision).toBe(graph.revision);
    expect(loaded.node('Upgrading').params).toEqual(graph.node('Upgrading').params);
    expect(loaded.node('Running').onParamsChange).toBe('Rerun');
    for (const given of [{ version: '1.2.3' }, { version: '1.2' }, { replicas: 0, version: '1.0.0' }, {}]) {
      const fromCode = nodeParams(graph, 'Upgrading', given);
      const fromData = nodeParams(loaded, 'Upgrading', given);
      expect(fromData?.ok, JSON.stringify(given)).toBe(fromCode?.ok);
      if (fromCode?.ok && fromData?.ok) expect(fromData.params).toEqual(fromCode.params);
    }
  });

  test('part of the revision: a schema, a field or the policy changes it; the order of keys in a JSON Schema does not', () => {
    const data = graph.toData();
    const withPolicy = (policy: string) => loadGraph({ ...data, nodes: data.nodes.map((n) => (n.name === 'Running' ? { ...n, onParamsChange: policy } : n)) });
    expect(withPolicy('NextTransition').revision).not.toBe(graph.revision);
    expect(loadGraph({ ...data, params: { type: 'object', properties: { replicas: { type: 'integer' } } } }).revision).not.toBe(graph.revision);
    const reordered = Object.fromEntries(Object.entries(data.params as Record<string, unknown>).reverse());
    expect(loadGraph({ ...data, params: reordered }).revision).toBe(graph.revision);
  });

  test("the CRD's spec.params: every field of the graph and its nodes; required when a graph parameter has no default", () => {
    const crd = generateCrd(graph, { group: 'example.com', version: 'v1', kind: 'Broker' }) as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: Record<string, any> } } } }[] } };
    const spec = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec;
    expect(spec.properties.params).toMatchObject({
      type: 'object',
      default: {},
      properties: { replicas: { type: 'integer', minimum: 1, default: 1 }, version: { type: 'string', pattern: '^\\d+\\.\\d+\\.\\d+$' } },
    });
    expect(spec.properties.params.required).toBeUndefined();
    expect(spec.required).toEqual(['desiredState']);
    const strict = defineGraph({ name: 'g', entry: 'Start', params: z.object({ zone: z.string() }), nodes: nodes() });
    expect(paramsSchema(strict)).toEqual({ type: 'object', properties: { zone: { type: 'string' } }, required: ['zone'] });
    const strictSpec = (generateCrd(strict, { group: 'example.com', version: 'v1', kind: 'G' }) as typeof crd).spec.versions[0]!.schema.openAPIV3Schema.properties.spec;
    expect(strictSpec.required).toEqual(['desiredState', 'params']);
    const none = generateCrd(defineGraph({ name: 'g', entry: 'Start', nodes: nodes() }), { group: 'example.com', version: 'v1', kind: 'G' }) as typeof crd;
    expect(none.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.params).toBeUndefined();
  });

  test('a value checked by the zod schema itself: refinements the CRD cannot hold still apply', () => {
    const refined = defineGraph({ name: 'g', entry: 'Start', nodes: nodes({ params: z.object({ even: z.number().int().refine((n) => n % 2 === 0, 'an even number') }) }) });
    expect(nodeParams(refined, 'Run', { even: 3 })).toEqual({ ok: false, problems: [{ field: 'spec.params.even', reason: 'an even number' }] });
    expect(nodeParams(refined, 'Run', { even: 4 })).toEqual({ ok: true, params: { even: 4 } });
    expect(nodeParams(refined, 'End', { even: 3 })).toBeUndefined();
  });

  test('okt graph diff names changed parameters and policies; a diagram notes a node that re-runs', () => {
    const data = graph.toData();
    const changed = loadGraph({ ...data, nodes: data.nodes.map((n) => (n.name === 'Running' ? { ...n, onParamsChange: undefined } : n.name === 'Upgrading' ? { ...n, params: { type: 'object', properties: { version: { type: 'string' } } } } : n)) });
    const diff = diffGraphs(graph, changed);
    expect(diff.changed.map((c) => c.node).sort()).toEqual(['Running', 'Upgrading']);
    expect(JSON.stringify(diff.changed)).toContain('onParamsChange');
    expect(JSON.stringify(diff.changed)).toContain('params');
    expect(renderMermaid(graph)).toContain('reruns on params change');
  });
});
