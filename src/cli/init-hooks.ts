// Loaded with `node --import` by `okt init`, which makes the new project's k8s/ before the project has
// node_modules: `okt` and its subpaths, imported by the project's graph.ts, resolve to the okt running
// `okt init` (OKT_INIT_MODULES: specifier -> file URL).
import { registerHooks } from 'node:module';

const modules = JSON.parse(process.env.OKT_INIT_MODULES ?? '{}') as Record<string, string>;
registerHooks({
  resolve(specifier, context, nextResolve) {
    const url = modules[specifier];
    return url === undefined ? nextResolve(specifier, context) : { url, shortCircuit: true };
  },
});
