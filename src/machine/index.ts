export { decide, compileGraph, CompiledGraph, EventSet } from './decide.ts';
export { renderPath, appendToPath, DEFAULT_PATH_LIMIT } from './path.ts';
export { toXStateMachine, toXStateConfig, toXStateSource, xstateKey, nodeOfXStateKey, XSTATE_EVENT } from './xstate.ts';
export type { OktXStateEvent, OktXStateMachine, OfferedParams, XStateConfig } from './xstate.ts';
