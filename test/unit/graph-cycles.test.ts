import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import { actionDrivenCycles, defineGraph } from '../../src/graph/index.ts';
import { cycleWarnings } from '../../src/cli/graph.ts';
import { provisioningLoopGraph } from '../fixtures/cycle-graphs.ts';

describe('the cycles a graph\'s actions can drive (okt graph validate warns about them)', () => {
  test('issue 29\'s loop, the database\'s servicing, none in an acyclic graph', () => {
    expect(actionDrivenCycles(provisioningLoopGraph)).toEqual([{ nodes: ['Provisioning', 'Failed'], example: ['Provisioning', 'Failed', 'Provisioning'] }]);
    expect(actionDrivenCycles(databaseGraph)).toEqual([{ nodes: ['Running', 'Servicing'], example: ['Running', 'Servicing', 'Running'] }]);
    expect(actionDrivenCycles(reconciliationGraph)).toEqual([]);
    expect(cycleWarnings(provisioningLoopGraph)).toEqual([
      'graph "provisioning": its actions\' events can drive the cycle Provisioning > Failed > Provisioning with no spec edit; the operator brakes a resource that turns it fast (docs/operator.md#the-cycle-brake)',
    ]);
  });

  test('a deadline\'s self-loop is a timer, not a warning; a self-loop an action may raise is one; a cycle through the entry is none (the entry has no action)', () => {
    const graph = defineGraph({
      name: 'loops',
      entry: 'Start',
      nodes: {
        Start: { children: ['Polling'] },
        Polling: { children: ['Polling', 'Again'], deadline: { after: '1m', then: 'Polling' } },
        Again: { children: ['Again', 'Start', 'End'] },
        End: {},
      },
    });
    expect(actionDrivenCycles(graph)).toEqual([{ nodes: ['Again'], example: ['Again', 'Again'] }]);
  });

  test('one line per group of cycles, naming a shortest one and the other nodes on them', () => {
    const graph = defineGraph({
      name: 'mesh',
      entry: 'Start',
      nodes: { Start: { children: ['A'] }, A: { children: ['B', 'C'] }, B: { children: ['A', 'End'] }, C: { children: ['D'] }, D: { children: ['A', 'End'] }, End: {} },
    });
    expect(cycleWarnings(graph)).toEqual([
      'graph "mesh": its actions\' events can drive the cycle A > B > A (and other cycles through A, B, C, D) with no spec edit; the operator brakes a resource that turns it fast (docs/operator.md#the-cycle-brake)',
    ]);
  });
});
