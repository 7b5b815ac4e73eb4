import { describe, expect, it } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import type { LifecycleResource } from '../../src/cli/status-view.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { crView, eventsBetween, initialEvents, layoutGraph, type CrView } from '../../src/ui/model.ts';
import { APP_CSS, APP_JS, PAGE_HTML } from '../../src/ui/page.ts';
import { UiState, type UiMessage } from '../../src/ui/state.ts';

const now = new Date('2025-01-01T00:10:00Z');
const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString();
const condition = (type: string, status: string, reason: string, message = '') => ({ type, status, reason, message, lastTransitionTime: ago(30) });

/** A database CR at `state` (transition `transition`), with its conditions. */
function database(name: string, state: string | undefined, extra: { desired?: string; transition?: number; ready?: boolean; stalled?: string; operation?: Record<string, unknown>; from?: string; revision?: string } = {}): LifecycleResource {
  const transition = extra.transition ?? 1;
  return {
    kind: 'Database',
    metadata: { name, namespace: 'demo', uid: `uid-${name}`, generation: 1, creationTimestamp: ago(600) },
    spec: { desiredState: extra.desired ?? state ?? 'Running' },
    status:
      state === undefined
        ? undefined
        : {
            state, observedGeneration: 1, transition, sequence: transition * 2, path: ['Start', state],
            ...(extra.revision === undefined ? {} : { graphRevision: extra.revision }),
            lastTransition: { from: extra.from ?? 'Start', to: state, events: [state], time: ago(60 - transition), generation: 1 },
            ...(extra.operation === undefined ? {} : { operation: extra.operation }),
            conditions: [
              condition('Ready', extra.ready ? 'True' : 'False', extra.ready ? 'Converged' : 'Progressing'),
              condition('Stalled', extra.stalled === undefined ? 'False' : 'True', extra.stalled ?? 'Converged', extra.stalled === undefined ? '' : 'cannot get there'),
            ],
          },
  };
}

describe('layoutGraph', () => {
  it('puts the database graph in columns from the entry, the edge back to Running marked as such', () => {
    const layout = layoutGraph(databaseGraph);
    expect(layout.columns).toEqual([['Start'], ['Running'], ['Servicing', 'Stopping'], ['End']]);
    expect(layout.entry).toBe('Start');
    expect(layout.revision).toBe(databaseGraph.revision);
    const edge = (from: string, to: string) => layout.edges.find((e) => e.from === from && e.to === to);
    expect(layout.edges).toHaveLength(6);
    expect(edge('Servicing', 'Running')).toMatchObject({ back: true, kind: 'child', priority: 1 });
    expect(edge('Running', 'Stopping')).toMatchObject({ back: false, kind: 'default', priority: 2 });
    expect(edge('Start', 'Running')).toMatchObject({ back: false, kind: 'default' });
    expect(layout.nodes.find((n) => n.name === 'End')).toMatchObject({ leaf: true, action: false, rank: 3 });
    expect(layout.nodes.find((n) => n.name === 'Start')).toMatchObject({ entry: true, action: false, rank: 0 });
  });

  it('puts the nodes only triggers lead to in a side row, every other edge of a lane going right', () => {
    const layout = layoutGraph(reconciliationGraph);
    expect(layout.columns).toEqual([['CRChecker'], ['CRFinalizer', 'ObjectsGetter'], ['Mutator'], ['Updater'], ['SuccessManager'], ['End']]);
    expect(layout.side).toEqual(['ErrorManager', 'GiveupManager']);
    const node = new Map(layout.nodes.map((n) => [n.name, n]));
    expect(node.get('ErrorManager')).toMatchObject({ lane: 'side', rank: 0 });
    expect(node.get('GiveupManager')).toMatchObject({ lane: 'side', rank: 1 });
    expect(node.get('Mutator')).toMatchObject({ lane: 'main', triggers: ['ErrorManager', 'GiveupManager'] });
    for (const e of layout.edges) {
      if (!e.back && node.get(e.to)!.lane === node.get(e.from)!.lane) expect(node.get(e.to)!.rank).toBeGreaterThan(node.get(e.from)!.rank);
    }
    expect(layout.edges.filter((e) => e.kind === 'trigger').every((e) => e.to === 'ErrorManager' || e.to === 'GiveupManager')).toBe(true);
  });

  it('labels the edge a deadline takes and notes a node\'s policies; a self-loop goes back', () => {
    const graph = defineGraph({
      name: 'timed',
      entry: 'Start',
      nodes: {
        Start: { children: ['Waiting'] },
        Waiting: { children: ['Waiting', 'Expired', 'End'], deadline: { after: '10m', then: 'Expired' }, retry: { attempts: 3 }, cancellable: true },
        Expired: { children: ['End'] },
        End: {},
      },
    });
    const layout = layoutGraph(graph);
    expect(layout.edges.find((e) => e.from === 'Waiting' && e.to === 'Expired')?.label).toBe('timeout 10m');
    expect(layout.edges.find((e) => e.from === 'Waiting' && e.to === 'Waiting')?.back).toBe(true);
    expect(layout.side).toEqual([]);
    expect(layout.nodes.find((n) => n.name === 'Waiting')?.notes).toEqual(['retry 3x', 'cancellable', 'deadline 10m → Expired']);
    expect(layout.columns).toEqual([['Start'], ['Waiting'], ['Expired'], ['End']]);
  });
});

describe('crView', () => {
  it('reads where a CR is, how it stands and what runs', () => {
    const view = crView(database('pg', 'Stopping', { desired: 'Stopping', transition: 2, from: 'Running', operation: { id: 'uid-pg-2', node: 'Stopping', phase: 'Pending', startedAt: ago(5) } }));
    expect(view).toMatchObject({
      key: 'demo/pg', state: 'Stopping', desired: 'Stopping', health: 'progressing', reason: 'Progressing', transition: 2,
      operation: { id: 'uid-pg-2', node: 'Stopping', phase: 'Pending', startedAt: ago(5) },
      lastTransition: { from: 'Running', to: 'Stopping', events: ['Stopping'] },
    });
    expect(crView(database('pg', 'Running', { ready: true })).health).toBe('ready');
    expect(crView(database('pg', 'End', { stalled: 'UnreachableState' }))).toMatchObject({ health: 'stalled', reason: 'UnreachableState', message: 'cannot get there' });
    expect(crView(database('fresh', undefined))).toMatchObject({ health: 'new', state: null, conditions: [] });
  });

  it('says what is wrong with a status it cannot read, and keeps its conditions', () => {
    const broken = { ...database('pg', 'Running'), status: { state: 'Running', conditions: [condition('Ready', 'False', 'Progressing')] } };
    const view = crView(broken);
    expect(view.health).toBe('invalid');
    expect(view.message).toMatch(/status\.observedGeneration/);
    expect(view.conditions).toHaveLength(1);
  });
});

describe('eventsBetween', () => {
  const view = (...args: Parameters<typeof database>): CrView => crView(database(...args));

  it('tells of a transition, the action it started and how the action ended', () => {
    const before = view('pg', 'Running', { ready: true, transition: 1 });
    const moved = view('pg', 'Stopping', { desired: 'Stopping', transition: 2, from: 'Running', operation: { id: 'op-2', node: 'Stopping', phase: 'Pending', startedAt: ago(1) } });
    expect(eventsBetween(before, moved, now).map((e) => [e.kind, e.text])).toEqual([
      ['desired', 'desired Running → Stopping'],
      ['transition', 'Running → Stopping on [Stopping]'],
      ['action', 'action of Stopping started'],
    ]);
    const done = view('pg', 'Stopping', { desired: 'Stopping', transition: 2, from: 'Running', ready: true, operation: { id: 'op-2', node: 'Stopping', phase: 'Succeeded', finishedAt: ago(0) } });
    expect(eventsBetween(moved, done, now).map((e) => [e.kind, e.tone, e.text])).toEqual([
      ['action', 'good', 'action of Stopping succeeded'],
      ['ready', 'good', 'ready at Stopping'],
    ]);
    const failed = view('pg', 'Stopping', { desired: 'Stopping', transition: 2, operation: { id: 'op-2', node: 'Stopping', phase: 'Failed', reason: 'ExitCode', message: 'exit 1' } });
    expect(eventsBetween(moved, failed, now).map((e) => [e.tone, e.text])).toEqual([['bad', 'action of Stopping failed (ExitCode: exit 1)']]);
    expect(eventsBetween(done, done, now)).toEqual([]);
  });

  it('tells of a stall and its end, a creation and a deletion, and several transitions missed at once', () => {
    const running = view('pg', 'End', { ready: true, transition: 3 });
    const stalled = view('pg', 'End', { desired: 'Running', transition: 3, stalled: 'UnreachableState' });
    expect(eventsBetween(running, stalled, now).map((e) => [e.kind, e.tone, e.text])).toEqual([
      ['desired', 'info', 'desired End → Running'],
      ['stalled', 'bad', 'stalled: UnreachableState — cannot get there'],
    ]);
    expect(eventsBetween(stalled, running, now).map((e) => e.kind)).toEqual(['desired', 'recovered', 'ready']);
    expect(eventsBetween(undefined, running, now)).toEqual([{ time: now.toISOString(), key: 'demo/pg', kind: 'created', tone: 'info', text: 'created, desired End' }]);
    expect(eventsBetween(running, undefined, now)[0]).toMatchObject({ kind: 'deleted', text: 'deleted (was at End)' });
    const jumped = eventsBetween(view('pg', 'Running', { transition: 1 }), view('pg', 'End', { transition: 4, from: 'Servicing' }), now);
    expect(jumped.find((e) => e.kind === 'transition')?.text).toBe('Servicing → End on [End] (3 transitions since the last sight)');
  });

  it('starts with each CR\'s last transition, oldest first', () => {
    const events = initialEvents([view('b', 'Running', { transition: 1 }), view('a', 'End', { transition: 5 }), view('c', undefined)]);
    expect(events.map((e) => e.key)).toEqual(['demo/b', 'demo/a']);
  });
});

describe('UiState', () => {
  const title = { kind: 'Database', crd: 'databases.okt.dev', version: 'v1alpha1', namespace: 'demo' };

  it('sends every change to its subscribers, with events only once live, and keeps the last events', () => {
    const state = new UiState({ title, graphs: [databaseGraph], defaultRevision: databaseGraph.revision, maxEvents: 3, now: () => now });
    const messages: UiMessage[] = [];
    const stop = state.subscribe((m) => messages.push(m));
    state.upsert(database('pg', 'Running', { ready: true }));
    expect(messages.map((m) => m.type)).toEqual(['resource']);
    state.goLive();
    expect(state.snapshot().events.map((e) => e.text)).toEqual(['Start → Running on [Running]']);
    state.upsert(database('pg', 'Stopping', { desired: 'Stopping', transition: 2, from: 'Running' }));
    state.remove(database('pg', 'Stopping'));
    const snapshot = state.snapshot();
    expect(snapshot.resources).toEqual([]);
    expect(snapshot.events.map((e) => e.kind)).toEqual(['desired', 'transition', 'deleted']);
    expect(snapshot.events.map((e) => e.id)).toEqual([2, 3, 4]);
    expect(Object.keys(snapshot.graphs)).toEqual([databaseGraph.revision]);
    stop();
    state.upsert(database('other', 'Running'));
    expect(messages.at(-1)).toMatchObject({ type: 'event', event: { kind: 'deleted' } });
  });

  it('asks once for a revision it has no graph of, and sends the graph when it comes', () => {
    const asked: string[] = [];
    const state = new UiState({ title, graphs: [databaseGraph], defaultRevision: databaseGraph.revision, onUnknownRevision: (r) => asked.push(r) });
    const messages: UiMessage[] = [];
    state.subscribe((m) => messages.push(m));
    state.upsert(database('pg', 'Running', { revision: 'r-old' }));
    state.upsert(database('pg', 'Running', { revision: 'r-old', ready: true }));
    state.upsert(database('pg', 'Running', { revision: databaseGraph.revision }));
    expect(asked).toEqual(['r-old']);
    state.addGraph(reconciliationGraph);
    expect(messages.at(-1)).toMatchObject({ type: 'graph', graph: { name: 'reconciliation' } });
    expect(state.hasRevision(reconciliationGraph.revision)).toBe(true);
  });

  it('gives each CR the objects its inventory names, as last read: a read that changes nothing sends nothing, a change of the CR keeps them', () => {
    const state = new UiState({ title, graphs: [databaseGraph], defaultRevision: databaseGraph.revision });
    const messages: UiMessage[] = [];
    state.subscribe((m) => messages.push(m));
    const entry = { id: 'data', apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'pg-data', hash: 'h' };
    const withObjects = (ready: boolean): LifecycleResource => {
      const cr = database('pg', 'Running', { ready });
      return { ...cr, status: { ...(cr.status as object), objects: [entry] } };
    };
    state.upsert(withObjects(false));
    expect(state.snapshot().resources[0]!.objects).toEqual([{ id: 'data', kind: 'PersistentVolumeClaim', name: 'pg-data', readiness: 'Unknown', message: 'not read yet' }]);
    const pending = { id: 'data', kind: 'PersistentVolumeClaim', name: 'pg-data', readiness: 'InProgress' as const, message: 'PVC is not Bound. phase: Pending' };
    state.setObjects('demo/pg', [pending]);
    expect(messages.at(-1)).toMatchObject({ type: 'resource', resource: { objects: [pending] } });
    const sent = messages.length;
    state.setObjects('demo/pg', [pending]);
    expect(messages).toHaveLength(sent);
    state.upsert(withObjects(true));
    expect(state.snapshot().resources[0]!.objects).toEqual([pending]);
  });
});

describe('the page', () => {
  it('is a script that parses and a page that names no other site', () => {
    expect(() => new Function(APP_JS)).not.toThrow();
    for (const text of [PAGE_HTML, APP_CSS, APP_JS]) {
      expect(text).not.toMatch(/(https?:)?\/\/(?!www\.w3\.org\/2000\/svg)[a-z0-9.-]+\.[a-z]{2,}/i);
      expect(text).not.toContain('@import');
    }
    expect(PAGE_HTML).toContain('<script src="/app.js"></script>');
    // Data goes into the page as text, never as markup.
    expect(APP_JS).not.toMatch(/innerHTML|insertAdjacentHTML|document\.write/);
  });
});
