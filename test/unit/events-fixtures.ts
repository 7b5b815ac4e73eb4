// Real outbox entries for the events tests: the lead's pure lifecycle step driven through the database
// graph (Start -> Running -> Servicing (fails) -> Running -> Stopping -> End), every event type included
// (the braked one from a graph whose action drives it round a cycle).
import { databaseGraph } from '../../graphs/database.ts';
import { loadGraph } from '../../src/graph/index.ts';
import type { EmittedResource } from '../../src/events/index.ts';
import type { OutboxEntry } from '../../src/kube/lifecycle-resource.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { provisioningLoopGraph, provisioningLoopOutcomes } from '../fixtures/cycle-graphs.ts';
import { LIFECYCLE_EVENT_TYPES } from '../../src/events/types.ts';
import type { NodeReadiness } from '../../src/controller/lifecycle/objects/readiness.ts';
import { siteGraph } from '../fixtures/object-graph.ts';

export function resourceFor(name: string, uid = `uid-${name}`): EmittedResource {
  return {
    apiVersion: 'okt.dev/v1alpha1',
    kind: 'Database',
    namespace: 'default',
    name,
    uid,
    apiPath: `/apis/okt.dev/v1alpha1/namespaces/default/databases/${name}`,
  };
}

/** Every outbox entry the step commits along the way, in sequence order. */
export function simulatedOutbox(): OutboxEntry[] {
  const sim = new LifecycleSim(databaseGraph, 'Running', (node) => (node === 'Servicing' ? { fail: 'vacuum failed' } : { events: [] }));
  const seen = new Map<number, OutboxEntry>();
  const run = (times: number) => {
    for (let i = 0; i < times; i += 1) {
      sim.reconcile();
      for (const entry of sim.events) seen.set(entry.sequence, entry);
    }
  };
  run(6);
  sim.setDesired('Servicing');
  run(6);
  // The operator rolls to a new revision (Stopping's action becomes cancellable): a migrated event.
  sim.upgrade(loadGraph({ ...databaseGraph.toData(), nodes: databaseGraph.toData().nodes.map((n) => (n.name === 'Stopping' ? { ...n, cancellable: true } : n)) }));
  sim.setDesired('End');
  run(8);
  const entries = [...seen.values()].sort((a, b) => a.sequence - b.sequence);
  const more = [brakedEntry(), objectsEntry({ kind: 'ready' }, LIFECYCLE_EVENT_TYPES.objectsReady), objectsEntry(CONFIG_FAILED, LIFECYCLE_EVENT_TYPES.objectsFailed)];
  return [...entries, ...more.map((entry, i) => ({ ...entry, sequence: entries.length + 1 + i }))];
}

const CONFIG_FAILED: NodeReadiness = { kind: 'failed', object: 'ConfigMap db-config (object "config")', message: 'Stalled', ref: { id: 'config', kind: 'ConfigMap', name: 'db-config' } };

/** The objects.ready or objects.failed event of a CR whose node's objects the step is told are so (objects.applied is apply.ts's: the e2e tests). */
function objectsEntry(readiness: NodeReadiness, type: string): OutboxEntry {
  const sim = new LifecycleSim(siteGraph, 'Running');
  sim.objectsAt = () => readiness;
  for (let i = 0; i < 10; i += 1) {
    sim.reconcile();
    const found = sim.events.find((e) => e.type === type);
    if (found !== undefined) return found;
  }
  throw new Error(`no ${type} event`);
}

/** The braked event of a CR its action drives round a cycle (another graph's: the database graph has no such loop). */
function brakedEntry(): OutboxEntry {
  const sim = new LifecycleSim(provisioningLoopGraph, 'Running', provisioningLoopOutcomes);
  for (let i = 0; i < 20; i += 1) {
    sim.reconcile();
    const braked = sim.events.find((e) => e.type === LIFECYCLE_EVENT_TYPES.braked);
    if (braked !== undefined) return braked;
  }
  throw new Error('the loop was not braked');
}

/** `count` synthetic transition entries 1..count (for volume tests where the content does not matter). */
export function transitionEntries(count: number, first = 1): OutboxEntry[] {
  return Array.from({ length: count }, (_, i) => {
    const sequence = first + i;
    return {
      sequence,
      type: 'dev.okt.lifecycle.transition.v1',
      time: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, sequence)).toISOString(),
      subject: sequence % 2 === 0 ? 'Running' : 'Servicing',
      data: {
        graph: 'database', transition: sequence, from: sequence % 2 === 0 ? 'Servicing' : 'Running', to: sequence % 2 === 0 ? 'Running' : 'Servicing',
        desired: 'Running', events: ['Running'], path: '>Start>Running', generation: 1,
      },
    };
  });
}
