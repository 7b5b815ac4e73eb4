// A random graph, a random edit of it (renames, removals mapped, refused or forgotten), and a resource
// caught anywhere on the old revision, its action perhaps running: the new revision either migrates it
// (and then drives it on) or predictMigration (what `okt graph check` reports) says it cannot; never a
// silent stall, never an action run twice, never a gap in its events.
import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { GraphDefinitionError, loadGraph, type Graph, type GraphData } from '../../src/graph/index.ts';
import type { OutboxEntry } from '../../src/kube/lifecycle-resource.ts';
import { predictMigration, resolveDesired } from '../../src/plan/index.ts';
import { graphArb } from '../fixtures/graph-arbitrary.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

interface Edit {
  rename: boolean[];
  remove: boolean[];
  /** Per removed node: 0 refuse, 1 forget (no mapping: stranded), otherwise map to node (n - 2) of the new graph. */
  mapping: number[];
}

/** The new revision, or undefined when the edit leaves an invalid graph (an unreachable node, say). */
function edited(graph: Graph, edit: Edit): Graph | undefined {
  const old = graph.toData();
  const names = graph.nodeNames;
  const removed = new Set(names.filter((name, i) => edit.remove[i] && name !== graph.entry));
  const newName = (name: string, i: number) => (edit.rename[i] ? `${name}v2` : name);
  const renamed = new Map(names.map((name, i) => [name, newName(name, i)]));
  const survivors = names.filter((name) => !removed.has(name)).map((name) => renamed.get(name)!);
  const byName = new Map(old.nodes.map((node) => [node.name, node]));
  // A removed node's parents take its children in its place, so what it led to stays reachable.
  const spliced = (list: readonly string[] | undefined, seen: Set<string>): string[] =>
    (list ?? []).flatMap((n) => (seen.has(n) ? [] : removed.has(n) ? spliced(byName.get(n)?.children, new Set([...seen, n])) : [n]));
  const keep = (list: readonly string[] | undefined, self: string) => [...new Set(spliced(list, new Set([self])))].map((n) => renamed.get(n)!);
  const nodes = old.nodes
    .filter((node) => !removed.has(node.name))
    .map((node) => {
      const children = keep(node.children, node.name);
      const triggers = keep(node.triggers, node.name).filter((t) => !children.includes(t));
      const out: GraphData['nodes'][number] = { name: renamed.get(node.name)!, children, triggers };
      return renamed.get(node.name) === node.name ? out : { ...out, formerly: [node.name] };
    });
  const removedMap: Record<string, string | { refuse: string }> = {};
  [...removed].forEach((name, k) => {
    const choice = edit.mapping[k % Math.max(edit.mapping.length, 1)] ?? 1;
    if (choice === 0) removedMap[name] = { refuse: `${name} is gone` };
    else if (choice >= 2) removedMap[name] = survivors[(choice - 2) % survivors.length]!;
  });
  try {
    return loadGraph({ name: old.name, entry: renamed.get(old.entry ?? graph.entry), nodes, migrations: { removed: removedMap } });
  } catch (error) {
    if (error instanceof GraphDefinitionError) return undefined;
    throw error;
  }
}

const caseArb = graphArb.chain((graph) => {
  const n = graph.nodeNames.length;
  return fc.record({
    graph: fc.constant(graph),
    edit: fc.record({
      rename: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      remove: fc.array(fc.boolean(), { minLength: n, maxLength: n }),
      mapping: fc.array(fc.nat({ max: n + 2 }), { minLength: 1, maxLength: n }),
    }),
    desired: fc.constantFrom(...graph.nodeNames),
    /** Reconciles on the old revision before the upgrade, and whether its last action is left running. */
    steps: fc.integer({ min: 1, max: 12 }),
    running: fc.boolean(),
  });
});

const ready = (sim: LifecycleSim) => sim.status?.conditions.find((c) => c.type === 'Ready');
const stalled = (sim: LifecycleSim) => sim.status?.conditions.find((c) => c.type === 'Stalled');

describe('graph upgrades under live resources', () => {
  test('every resource migrates to a node of the new revision, or is reported by the prediction; no action twice, no event gap', () => {
    let upgraded = 0;
    fc.assert(
      fc.property(caseArb, ({ graph, edit, desired, steps, running }) => {
        const next = edited(graph, edit);
        if (next === undefined) return;
        upgraded += 1;
        const sim = new LifecycleSim(graph, desired);
        sim.spec = { ...sim.spec, onLeaf: 'Keep' };
        const events = new Map<number, OutboxEntry>();
        const reconcile = (finishRunning: boolean) => {
          sim.reconcile({ finishRunning });
          for (const entry of sim.events) events.set(entry.sequence, entry);
        };
        for (let i = 0; i < steps; i++) reconcile(!(running && i === steps - 1));
        const status = sim.status!;
        const operation = status.operation;
        const runningAction = operation !== undefined && !['Succeeded', 'Failed', 'Cancelled'].includes(operation.phase) ? operation.node : undefined;
        const prediction = predictMigration(next, sim.upgrade(next).planner, { revision: status.graphRevision, state: status.state, desired, runningAction });

        for (let i = 0; i < 4 * (graph.nodeNames.length + next.nodeNames.length) + 8; i++) reconcile(true);

        if (prediction.kind === 'stranded') {
          expect(stalled(sim)).toMatchObject({ status: 'True', reason: 'UnknownState' });
          expect(stalled(sim)?.message).toBe(prediction.reason);
          expect(sim.status?.graphRevision).toBe(graph.revision);
        } else if (prediction.kind === 'current') {
          // An edit that changes nothing the graph does is the same revision: nothing to migrate.
          expect(next.revision).toBe(graph.revision);
          expect([...events.values()].some((e) => e.type === 'dev.okt.lifecycle.migrated.v1')).toBe(false);
        } else {
          expect(['migrates', 'waits']).toContain(prediction.kind);
          expect(sim.status?.graphRevision).toBe(next.revision);
          expect(next.has(sim.status!.state)).toBe(true);
          const target = (resolveDesired(next, desired) as { node: string }).node;
          if (prediction.kind === 'migrates' && prediction.unreachable === undefined) {
            expect(sim.status?.state).toBe(target);
            expect(ready(sim)?.status).toBe('True');
          }
          if (prediction.kind === 'migrates' && prediction.unreachable !== undefined) expect(stalled(sim)?.reason).toBe('UnreachableState');
          const migrated = [...events.values()].filter((e) => e.type === 'dev.okt.lifecycle.migrated.v1');
          expect(migrated).toHaveLength(1);
          if (prediction.kind === 'migrates') expect(migrated[0]!.data.migration).toMatchObject({ fromState: status.state, toState: prediction.state.node, kind: prediction.state.kind });
        }
        for (const op of sim.started.values()) expect(op.starts).toBe(1);
        const sequences = [...events.keys()].sort((a, b) => a - b);
        expect(sequences).toEqual(sequences.map((_, i) => i + 1));
      }),
      { numRuns: fcRuns(400) },
    );
    // The edits must exercise upgrades, not only invalid graphs.
  });
});
