// The sidecar's public surface: load a config, start the server.
export { invalidConfig, loadSidecarConfig, parseSidecarConfig, SidecarConfigError, type ConfigProblem, type SidecarConfig } from './config.ts';
export { startSidecar, readToken, SidecarListenError, SidecarTokenError, type RunningSidecar, type SidecarOptions } from './server.ts';
export { JournalIOError } from './journal.ts';
export { JournalLockedError } from './journal-lock.ts';
export { killAllProcessGroups } from './process.ts';
export type { ActionContext, ModuleAction } from './actions.ts';
export { buildOpenApiDocument, renderOpenApiYaml } from './openapi.ts';
export { spawnSidecarProcess, type SidecarProcess } from './spawn.ts';
