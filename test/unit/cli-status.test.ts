import { describe, expect, it } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { defineGraph } from '../../src/graph/index.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import { NO_COLORS } from '../../src/cli/output.ts';
import { age, renderStatusHtml, renderStatusText, type LifecycleResource } from '../../src/cli/status-view.ts';
import { lifecycleStatusSchema } from '../../src/kube/lifecycle-resource.ts';
import { brokerGraph } from '../fixtures/params-graphs.ts';

const now = new Date('2025-01-01T00:10:00Z');
const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString().replace(/\.\d+Z$/, 'Z');

/** A database that went Start > Running > Servicing > Running and is asked to stop. */
function database(overrides: Partial<LifecycleResource> = {}): LifecycleResource {
  const status = lifecycleStatusSchema.parse({
    state: 'Running',
    observedGeneration: 3,
    transition: 3,
    sequence: 6,
    path: ['Start', 'Running', 'Servicing', 'Running'],
    pathSummary: '>Start>(Running<<>>Servicing)x1>Running',
    lastTransition: { from: 'Servicing', to: 'Running', events: ['Running'], time: ago(90), generation: 3 },
    operation: { id: 'uid-1-3', node: 'Running', phase: 'Running', startedAt: ago(80), message: 'starting postgres' },
    conditions: [
      { type: 'Start', status: 'False', reason: 'Left', message: 'left for Running', lastTransitionTime: ago(500) },
      { type: 'Servicing', status: 'False', reason: 'Left', message: 'left for Running', lastTransitionTime: ago(90) },
      { type: 'Running', status: 'True', reason: 'Entered', message: 'entered from Servicing', lastTransitionTime: ago(90) },
      { type: 'Ready', status: 'False', reason: 'Progressing', message: 'on the way to Stopping', lastTransitionTime: ago(3700) },
    ],
  });
  return {
    kind: 'Database',
    metadata: { name: 'pg', namespace: 'demo', generation: 4, creationTimestamp: ago(600) },
    spec: { desiredState: 'Stopping' },
    status,
    ...overrides,
  };
}

describe('renderStatusText', () => {
  it("shows spec.params and how they stand to the operation's: ran with them, or will run again, or do not fit", () => {
    const graph = brokerGraph();
    const broker = (params: Record<string, unknown>): LifecycleResource => ({
      kind: 'Broker',
      metadata: { name: 'mq', namespace: 'demo', generation: 2, creationTimestamp: ago(600) },
      spec: { desiredState: 'Running', params },
      status: lifecycleStatusSchema.parse({
        state: 'Running', graphRevision: graph.revision, observedGeneration: 2, transition: 1, sequence: 3, path: ['Start', 'Running'],
        operation: { id: 'uid-1', node: 'Running', phase: 'Succeeded', params: { replicas: 2 } }, conditions: [],
      }),
    });
    const paramsLine = (params: Record<string, unknown>) => /\n +params +(.+)\n/.exec(renderStatusText({ graph, resource: broker(params), now }, NO_COLORS))?.[1];
    expect(paramsLine({ replicas: 2 })).toBe('{"replicas":2}; the action of Running ran with them');
    expect(paramsLine({ replicas: 4 })).toBe('{"replicas":4}; the action of Running ran with {"replicas":2}: it runs again with these (onParamsChange: Rerun)');
    expect(paramsLine({ replicas: 0 })).toBe('{"replicas":0}; they do not fit Running: spec.params.replicas: Too small: expected number to be >=1');
    expect(renderStatusText({ graph: databaseGraph, resource: database(), now }, NO_COLORS)).not.toMatch(/ params /);
  });

  it('draws the graph as a tree with the current node, the path and the desired node marked', () => {
    const text = renderStatusText({ graph: databaseGraph, resource: database(), now }, NO_COLORS);
    const tree = text.split('\n\n')[1]!.split('\n');
    expect(tree.slice(0, 7)).toEqual([
      '  Start ✓',
      '  └─▶ Running ● current',
      '      ├─▶ Servicing ✓',
      '      │   ├─↩ Running',
      '      │   └─▶ End',
      '      └─▶ Stopping ◎ desired',
      '          └─↩ End',
    ]);
  });

  it('states the facts a person looks for: state, desired with its route, path, operation, Ready', () => {
    const text = renderStatusText({ graph: databaseGraph, resource: database(), now }, NO_COLORS);
    expect(text.split('\n')[0]).toBe('Database demo/pg');
    expect(text).toMatch(/ state +Running\n/);
    expect(text).toMatch(/ desired +Stopping \(1 move: >Stopping\)\n/);
    expect(text).toMatch(/ ready +False \(Progressing\)\n/);
    expect(text).toMatch(/ path +>Start>\(Running<<>>Servicing\)x1>Running\n/);
    expect(text).toMatch(/ last transition +Servicing -> Running on \[Running\] 90s ago \(generation 3\)\n/);
    expect(text).toMatch(/ operation +Running, action of Running, started 80s ago \(id uid-1-3\) — starting postgres\n/);
    expect(text).toMatch(/ generation +4 \(observed 3\), transition 3\n/);
    expect(text).toMatch(/ age +10m\n/);
  });

  it('names the revision drawn, and the resource\'s own when it is another', () => {
    const on = (graphRevision: string) => database({ status: { ...(database().status as object), graphRevision } });
    const same = renderStatusText({ graph: databaseGraph, resource: on(databaseGraph.revision), now }, NO_COLORS);
    expect(same).toMatch(new RegExp(` graph +database \\(5 nodes\\), revision ${databaseGraph.revision}\n`));
    const other = renderStatusText({ graph: databaseGraph, resource: on('0123456789abcdef'), now }, NO_COLORS);
    expect(other).toMatch(new RegExp(` graph +database \\(5 nodes\\), revision ${databaseGraph.revision}; the resource is on revision 0123456789abcdef\n`));
  });

  it('prints the conditions as an aligned table with ages', () => {
    const text = renderStatusText({ graph: databaseGraph, resource: database(), now }, NO_COLORS);
    const table = text.trimEnd().split('\n').slice(-5);
    expect(table).toEqual([
      '  TYPE       STATUS  REASON       AGE  MESSAGE',
      '  Start      False   Left         8m   left for Running',
      '  Servicing  False   Left         90s  left for Running',
      '  Running    True    Entered      90s  entered from Servicing',
      '  Ready      False   Progressing  61m  on the way to Stopping',
    ]);
  });

  it('says so when there is no status yet, or when it does not parse', () => {
    const none = renderStatusText({ graph: databaseGraph, resource: database({ status: undefined }), now }, NO_COLORS);
    expect(none).toMatch(/status +none yet: no operator has reconciled this resource/);
    expect(none).not.toMatch(/\w ● current/);
    expect(none).toContain('no conditions');
    const bad = renderStatusText({ graph: databaseGraph, resource: database({ status: { state: 'Running', path: 'oops' } }), now }, NO_COLORS);
    expect(bad).toMatch(/status +unreadable: status\.\w+: /);
  });

  it('flags a state that is not a node of the graph, an unreachable desired node, pause and deletion', () => {
    const resource = database({
      metadata: { name: 'pg', namespace: 'demo', deletionTimestamp: ago(30) },
      spec: { desiredState: 'Stopping', paused: true },
    });
    const stranger = { ...(resource.status as object), state: 'Elsewhere' };
    const text = renderStatusText({ graph: databaseGraph, resource: { ...resource, status: stranger }, now }, NO_COLORS);
    expect(text).toMatch(/state +Elsewhere \(not a node of graph "database"\)/);
    expect(text).toMatch(/note +paused; deleting since 30s ago/);
    const ended = database({ spec: { desiredState: 'Running' } });
    const endedText = renderStatusText(
      { graph: databaseGraph, resource: { ...ended, status: { ...(ended.status as object), state: 'End' } }, now },
      NO_COLORS,
    );
    expect(endedText).toMatch(/desired +Running \(unreachable from here\)/);
  });

  it('sums up triggers to nodes drawn elsewhere on the node line', () => {
    const text = renderStatusText(
      { graph: reconciliationGraph, resource: { kind: 'Reconciliation', metadata: { name: 'r' }, spec: { desiredState: 'End' } }, now },
      NO_COLORS,
    );
    expect(text).toContain('  ├─▶ CRFinalizer  ⚡ ErrorManager, GiveupManager\n');
    expect(text).toContain('  ├─⚡ ErrorManager  ⚡ GiveupManager\n');
    // Every node is drawn exactly once as a tree node (▶/⚡ or the root), the rest are references.
    for (const node of reconciliationGraph.nodeNames) {
      const drawn = text.split('\n').filter((line) => new RegExp(`(^  |─[▶⚡] )${node}( |$)`).test(line));
      expect(drawn, node).toHaveLength(1);
    }
  });
});

describe('renderStatusHtml', () => {
  it('embeds the Mermaid diagram with the current, desired and visited nodes styled, and the conditions', () => {
    const html = renderStatusHtml({ graph: databaseGraph, resource: database(), now });
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<title>okt status: Database demo/pg</title>');
    const mermaid = html.slice(html.indexOf('<pre class="mermaid">'), html.indexOf('</pre>'));
    // Running is s1, Stopping s3, Start s0, Servicing s2 (the graph's node order).
    expect(mermaid).toContain('classDef current ');
    expect(mermaid).toContain('class s1 current');
    expect(mermaid).toContain('class s3 desired');
    expect(mermaid).toContain('class s0,s2 visited');
    expect(mermaid).toContain('s1 --&gt; s2 : 1');
    expect(html).toContain('<td>Running</td><td>True</td><td>Entered</td>');
    expect(html).toContain('mermaid.initialize');
  });

  it('escapes what the cluster says', () => {
    const resource = database();
    const status = { ...(resource.status as { conditions: object[] }) };
    status.conditions = [{ type: 'Ready', status: 'False', reason: 'X', message: '<script>alert(1)</script>', lastTransitionTime: ago(1) }];
    const html = renderStatusHtml({ graph: databaseGraph, resource: { ...resource, status }, now });
    expect(html).not.toContain('<script>alert');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
  });
});

describe('age', () => {
  it('reads like kubectl', () => {
    expect([5, 119, 120, 7199, 7200, 172799, 172800].map((s) => age(ago(s), now))).toEqual(['5s', '119s', '2m', '119m', '2h', '47h', '2d']);
    expect(age(undefined, now)).toBe('-');
    expect(age('not a time', now)).toBe('-');
  });
});

describe('the deadline of the current node', () => {
  const timed = defineGraph({
    name: 'database',
    entry: 'Start',
    nodes: {
      Start: { children: ['Running'] },
      Running: { children: ['Servicing', 'Stopping'], deadline: { after: '10m', then: 'Stopping' } },
      Servicing: { children: ['Running', 'End'], deadline: { after: '1h' } },
      Stopping: { children: ['End'] },
      End: {},
    },
  });

  it('shows the time left before it, counted from the transition that entered the node', () => {
    const text = renderStatusText({ graph: timed, resource: database(), now }, NO_COLORS);
    // Entered 90 s ago: 8m30s of 10m left.
    expect(text).toMatch(/ deadline +10m on Running, then Stopping: 8m30s left\n/);
  });

  it('says how long ago it passed, and when a pause holds it off', () => {
    const late = new Date(now.getTime() + 20 * 60_000);
    expect(renderStatusText({ graph: timed, resource: database(), now: late }, NO_COLORS)).toMatch(/ deadline +10m on Running, then Stopping: passed 11m ago\n/);
    const paused = database({ spec: { desiredState: 'Stopping', paused: true } });
    expect(renderStatusText({ graph: timed, resource: paused, now }, NO_COLORS)).toMatch(/ deadline +10m on Running, then Stopping: 8m30s left \(held off: paused\)\n/);
  });

  it('is absent on a node without one', () => {
    expect(renderStatusText({ graph: databaseGraph, resource: database(), now }, NO_COLORS)).not.toContain(' deadline ');
  });
});
