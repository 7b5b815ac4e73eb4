import { createActor, initialTransition, transition } from 'xstate';
import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import { DEFAULT_STATE, defineGraph } from '../../src/graph/index.ts';
import {
  appendToPath,
  compileGraph,
  decide,
  nodeOfXStateKey,
  renderPath,
  toXStateConfig,
  toXStateMachine,
  toXStateSource,
  XSTATE_EVENT,
  xstateKey,
} from '../../src/machine/index.ts';

describe('decide: OKT EnterNextState', () => {
  test('an event names a child', () => {
    expect(decide(databaseGraph, 'Running', ['Servicing'])).toBe('Servicing');
    expect(decide(databaseGraph, 'Running', ['Stopping'])).toBe('Stopping');
  });

  test('DefaultState triggers only the default (last) child', () => {
    expect(decide(databaseGraph, 'Running', [DEFAULT_STATE])).toBe('Stopping');
    expect(decide(databaseGraph, 'Servicing', [DEFAULT_STATE])).toBe('End');
  });

  test('priority beats the order of the events', () => {
    expect(decide(databaseGraph, 'Running', ['Stopping', 'Servicing'])).toBe('Servicing');
    expect(decide(databaseGraph, 'Running', [DEFAULT_STATE, 'Servicing'])).toBe('Servicing');
  });

  test('an event that is not a child, or no event: stay', () => {
    expect(decide(databaseGraph, 'Running', ['Start'])).toBe('Running');
    expect(decide(databaseGraph, 'Running', ['NotANode'])).toBe('Running');
    expect(decide(databaseGraph, 'Running', [])).toBe('Running');
  });

  test('a leaf never moves', () => {
    expect(decide(databaseGraph, 'End', [DEFAULT_STATE, 'Start', 'Running'])).toBe('End');
  });

  test('at most one transition per decision', () => {
    expect(decide(databaseGraph, 'Start', ['Running', 'Stopping', 'End'])).toBe('Running');
  });

  test('triggers win over ordinary children and the default', () => {
    expect(decide(reconciliationGraph, 'CRChecker', ['CRFinalizer', 'ErrorManager', DEFAULT_STATE])).toBe('ErrorManager');
    expect(decide(reconciliationGraph, 'CRChecker', ['GiveupManager', 'ErrorManager'])).toBe('ErrorManager');
    expect(decide(reconciliationGraph, 'CRChecker', ['CRFinalizer', DEFAULT_STATE])).toBe('CRFinalizer');
    expect(decide(reconciliationGraph, 'CRChecker', [DEFAULT_STATE])).toBe('ObjectsGetter');
    expect(decide(reconciliationGraph, 'ErrorManager', [DEFAULT_STATE])).toBe('End');
  });

  test('accepts any iterable of events', () => {
    expect(decide(databaseGraph, 'Running', new Set(['Servicing']))).toBe('Servicing');
  });

  test('rejects an unknown current node', () => {
    expect(() => decide(databaseGraph, 'Nowhere' as 'Start', [])).toThrow(/no node "Nowhere"/);
    expect(() => decide(databaseGraph, DEFAULT_STATE as 'Start', [])).toThrow(/no node/);
  });

  test('OKT walk: the default path from Start ends at End', () => {
    let state: string = databaseGraph.entry;
    const seen = [state];
    while (!databaseGraph.node(state as 'Start').isLeaf) {
      state = decide(databaseGraph, state as 'Start', [DEFAULT_STATE]);
      seen.push(state);
    }
    expect(seen).toEqual(['Start', 'Running', 'Stopping', 'End']);
  });
});

describe('compiled form', () => {
  test('interned ids and a reusable event set give the same decisions', () => {
    const form = compileGraph(databaseGraph);
    expect(compileGraph(databaseGraph)).toBe(form);
    const events = form.events();
    events.add('Stopping');
    events.add('Servicing');
    expect(form.name(form.next(form.id('Running'), events))).toBe('Servicing');
    events.clear();
    expect(events.hasId(form.id('Servicing'))).toBe(false);
    expect(form.next(form.id('Running'), events)).toBe(form.id('Running'));
    events.addId(form.defaultEvent);
    expect(form.name(form.next(form.id('Running'), events))).toBe('Stopping');
    expect(events.add('Unknown')).toBe(false);
    expect(form.id('Unknown')).toBe(-1);
    expect(form.id(DEFAULT_STATE)).toBe(form.defaultEvent);
    expect(form.isLeaf(form.id('End'))).toBe(true);
    expect(form.name(form.entry)).toBe('Start');
    expect(() => form.name(99)).toThrow(RangeError);
  });

  test('clearing the event set many times keeps it correct (generation stamps)', () => {
    const form = compileGraph(databaseGraph);
    const events = form.events();
    for (let i = 0; i < 1000; i++) {
      events.clear();
      if (i % 2 === 0) events.add('Servicing');
      expect(form.name(form.next(form.id('Running'), events))).toBe(i % 2 === 0 ? 'Servicing' : 'Running');
    }
  });
});

describe('path history', () => {
  const loop = (pairs: number) => Array.from({ length: pairs }, () => ['Run', 'Servicing']).flat();

  test('renders like OKT', () => {
    expect(renderPath(['Start', 'End'])).toBe('>Start>End');
    expect(renderPath(['Start', 'Run', 'Stopping', 'End'])).toBe('>Start>Run>Stopping>End');
    expect(renderPath([...loop(12), 'Stopping', 'End'])).toBe('>(Run<<>>Servicing)x12>Stopping>End');
    expect(renderPath(['Start', ...loop(3), 'Stopping', 'End'])).toBe('>Start>(Run<<>>Servicing)x3>Stopping>End');
  });

  test('an odd back-and-forth run ends on its first node, as OKT prints it', () => {
    expect(renderPath(['Run', 'Servicing', 'Run'])).toBe('>(Run<<>>Servicing)x1>Run');
    expect(renderPath([...loop(2), 'Run', 'End'])).toBe('>(Run<<>>Servicing)x2>Run>End');
  });

  test('empty and repeated nodes', () => {
    expect(renderPath([])).toBe('');
    expect(renderPath(['A', 'A', 'B'])).toBe('>A>A>B');
  });

  test('appendToPath keeps the most recent nodes within the limit, without touching the input', () => {
    const path = ['A', 'B', 'C'];
    expect(appendToPath(path, 'D', 3)).toEqual(['B', 'C', 'D']);
    expect(path).toEqual(['A', 'B', 'C']);
    expect(appendToPath([], 'A')).toEqual(['A']);
    let long: string[] = [];
    for (let i = 0; i < 1000; i++) long = appendToPath(long, `N${i}`);
    expect(long).toHaveLength(256);
    expect(long[255]).toBe('N999');
    expect(() => appendToPath(path, 'D', 0)).toThrow(/positive integer/);
  });
});

describe('xstate machine', () => {
  const offer = (...events: string[]) => ({ type: XSTATE_EVENT, events }) as const;

  test('starts at the entry and follows the same rules', () => {
    const machine = toXStateMachine(databaseGraph);
    let [snapshot] = initialTransition(machine);
    expect(snapshot.value).toBe('Start');
    [snapshot] = transition(machine, snapshot, offer(DEFAULT_STATE));
    expect(snapshot.value).toBe('Running');
    [snapshot] = transition(machine, snapshot, offer('Stopping', 'Servicing'));
    expect(snapshot.value).toBe('Servicing');
    [snapshot] = transition(machine, snapshot, offer('Start'));
    expect(snapshot.value).toBe('Servicing');
    [snapshot] = transition(machine, snapshot, offer(DEFAULT_STATE));
    expect(snapshot.value).toBe('End');
    expect(snapshot.status).toBe('done');
  });

  test('runs as an actor; leaves are final', () => {
    const actor = createActor(toXStateMachine(reconciliationGraph)).start();
    actor.send(offer('ErrorManager', DEFAULT_STATE));
    expect(actor.getSnapshot().value).toBe('ErrorManager');
    actor.send(offer(DEFAULT_STATE));
    expect(actor.getSnapshot().status).toBe('done');
    expect(toXStateConfig(databaseGraph).states['End']?.type).toBe('final');
  });

  test('node names holding dots get an xstate-safe key and map back', () => {
    const graph = defineGraph({ name: 'dotted', entry: 'a.io/Start', nodes: { 'a.io/Start': { children: ['v1.End'] }, 'v1.End': {} } });
    const machine = toXStateMachine(graph);
    const [first] = initialTransition(machine);
    const [next] = transition(machine, first, offer('v1.End'));
    expect(nodeOfXStateKey(next.value as string)).toBe('v1.End');
    expect(xstateKey('v1.End')).not.toContain('.');
  });

  test('exports source the Stately visualizer imports, with the config as JSON', () => {
    const source = toXStateSource(databaseGraph);
    expect(source).toContain("import { setup } from 'xstate';");
    expect(source).toContain('}).createMachine(');
    const json = source.slice(source.indexOf('createMachine(') + 'createMachine('.length, source.lastIndexOf(');'));
    expect(JSON.parse(json)).toEqual(toXStateConfig(databaseGraph));
    const running = toXStateConfig(databaseGraph).states['Running']?.on?.[XSTATE_EVENT];
    expect(running?.map((t) => [t.target, t.guard.params.isDefault])).toEqual([['Servicing', false], ['Stopping', true]]);
  });
});
