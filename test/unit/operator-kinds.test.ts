// startOperator's kinds: one (graph and resource) or several (kinds), checked before anything connects.
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import { startOperator, type OperatorOptions } from '../../src/controller/lifecycle/index.ts';

// No cluster behind it: a refusal must come before the first connection.
const kubeConfig = new KubeConfig();
kubeConfig.loadFromOptions({
  clusters: [{ name: 'none', server: 'https://127.0.0.1:1' }],
  users: [{ name: 'none' }],
  contexts: [{ name: 'none', cluster: 'none', user: 'none' }],
  currentContext: 'none',
});
const DATABASES = { group: 'okt.dev', version: 'v1alpha1', plural: 'databases', kind: 'Database' };
const RECONCILIATIONS = { group: 'okt.dev', version: 'v1alpha1', plural: 'reconciliations', kind: 'Reconciliation' };

function start(options: Record<string, unknown>): Promise<unknown> {
  return startOperator({ kubeConfig, ...options } as OperatorOptions);
}

describe('startOperator refuses kinds it cannot serve, naming the field', () => {
  test('graph and resource together with kinds', async () => {
    const kinds = [{ graph: databaseGraph, resource: DATABASES }];
    await expect(start({ graph: databaseGraph, kinds })).rejects.toThrow('startOperator: graph is given with kinds');
    await expect(start({ resource: DATABASES, kinds })).rejects.toThrow('startOperator: resource is given with kinds');
  });

  test('neither, or half of the one kind', async () => {
    await expect(start({})).rejects.toThrow('startOperator: graph is missing: give graph and resource, or kinds');
    await expect(start({ graph: databaseGraph })).rejects.toThrow('startOperator: resource is missing');
    await expect(start({ kinds: [] })).rejects.toThrow('startOperator: kinds is empty');
  });

  test('two kinds that are one resource: the same plural, or the same kind, of one group', async () => {
    await expect(start({ kinds: [
      { graph: databaseGraph, resource: DATABASES },
      { graph: reconciliationGraph, resource: RECONCILIATIONS },
      { graph: reconciliationGraph, resource: { ...DATABASES, version: 'v1' } },
    ] })).rejects.toThrow('startOperator: kinds[2].resource is the resource of kinds[0] again (group "okt.dev", plural "databases")');
    await expect(start({ kinds: [
      { graph: databaseGraph, resource: DATABASES },
      { graph: reconciliationGraph, resource: { ...DATABASES, plural: 'dbs' } },
    ] })).rejects.toThrow('startOperator: kinds[1].resource is the resource of kinds[0] again (group "okt.dev", kind "Database")');
  });
});
