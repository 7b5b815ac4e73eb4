import { setup } from 'xstate';
import { DEFAULT_STATE, type Graph } from '../graph/index.ts';

/** The one xstate event type: it carries the whole set of events collected during a reconcile. */
export const XSTATE_EVENT = 'okt.events';

export interface OktXStateEvent {
  readonly type: typeof XSTATE_EVENT;
  readonly events: readonly string[];
}

/** Params of the `offered` guard: the child it guards, and whether that child is the default. */
export interface OfferedParams {
  readonly child: string;
  readonly isDefault: boolean;
}

interface XStateTransition {
  target: string;
  guard: { type: 'offered'; params: OfferedParams };
}

interface XStateStateConfig {
  description?: string;
  type?: 'final';
  on?: { [XSTATE_EVENT]: XStateTransition[] };
}

/** The machine config as plain JSON data (what Stately's JSON import and the source export carry). */
export interface XStateConfig {
  id: string;
  description?: string;
  initial: string;
  states: Record<string, XStateStateConfig>;
}

/**
 * The same semantics as decide(): each node has one guarded transition per child, listed in priority
 * order (xstate takes the first enabled one); leaves are final states. State keys are the node names,
 * except that '.' (legal in condition types, but xstate's path delimiter) becomes '∙': see xstateKey.
 */
export function toXStateConfig(graph: Graph): XStateConfig {
  const states: Record<string, XStateStateConfig> = {};
  for (const name of graph.nodeNames) {
    const node = graph.node(name);
    const state: XStateStateConfig = {};
    if (node.description !== '') state.description = node.description;
    if (node.isLeaf) state.type = 'final';
    else {
      state.on = {
        [XSTATE_EVENT]: node.children.map((child) => ({
          target: xstateKey(child),
          guard: { type: 'offered', params: { child, isDefault: child === node.defaultChild } },
        })),
      };
    }
    states[xstateKey(name)] = state;
  }
  return {
    id: graph.name,
    ...(graph.description === '' ? {} : { description: graph.description }),
    initial: xstateKey(graph.entry),
    states,
  };
}

const XSTATE_DOT = '\u2219'; // never in a node name: condition types are ASCII

/** The xstate state key of a node: its name, with '.' (xstate's path delimiter) as '\u2219'. */
export function xstateKey(node: string): string {
  return node.replaceAll('.', XSTATE_DOT);
}

/** The node name of an xstate state key (the inverse of xstateKey), e.g. of `snapshot.value`. */
export function nodeOfXStateKey(key: string): string {
  return key.replaceAll(XSTATE_DOT, '.');
}

function offered({ event }: { event: OktXStateEvent }, params: OfferedParams): boolean {
  return event.events.includes(params.child) || (params.isDefault && event.events.includes(DEFAULT_STATE));
}

const oktSetup = setup({
  types: { events: {} as OktXStateEvent },
  guards: { offered },
});

/** An xstate v5 machine with the graph's semantics, for simulation as an actor, inspection and export. */
export function toXStateMachine(graph: Graph) {
  return oktSetup.createMachine(toXStateConfig(graph));
}

export type OktXStateMachine = ReturnType<typeof toXStateMachine>;

/** Source code that the Stately visualizer imports (`setup({...}).createMachine({...})`). */
export function toXStateSource(graph: Graph): string {
  return [
    "import { setup } from 'xstate';",
    '',
    `// okt lifecycle graph "${graph.name}": send { type: '${XSTATE_EVENT}', events: [...] } with the collected events.`,
    'export const machine = setup({',
    '  guards: {',
    `    offered: ({ event }, params) => event.events.includes(params.child) || (params.isDefault && event.events.includes('${DEFAULT_STATE}')),`,
    '  },',
    `}).createMachine(${JSON.stringify(toXStateConfig(graph), null, 2)});`,
    '',
  ].join('\n');
}
