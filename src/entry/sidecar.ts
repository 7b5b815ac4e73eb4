// `okt/sidecar`: the types of a module action (ModuleAction, ActionContext), the sidecar's config and
// server (sidecar/index.ts).
import './node-check.ts';
export * from '../../sidecar/index.ts';
