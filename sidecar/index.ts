// The sidecar's public surface: load a config, start the server.
export { invalidConfig, loadSidecarConfig, parseSidecarConfig, SidecarConfigError, type ConfigProblem, type SidecarConfig } from './config.ts';
export { startSidecar, readToken, SidecarTokenError, type RunningSidecar } from './server.ts';
export type { ActionContext, ModuleAction } from './actions.ts';
export { buildOpenApiDocument, renderOpenApiYaml } from './openapi.ts';
export { spawnSidecarProcess, type SidecarProcess } from './spawn.ts';
