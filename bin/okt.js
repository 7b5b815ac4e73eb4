#!/usr/bin/env node
// The `okt` command. In a checkout it runs the TypeScript sources as they are (Node >= 22.18 strips
// types); an installed package runs its build, since Node does not strip types under node_modules.
// The Node check is src/node-version.ts's, in plain JavaScript: an older Node cannot read TypeScript.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `okt needs Node >= 22.19 (this is ${process.versions.node}): run it through npm (npx okt, npm test, npm start) ` +
      `with Node 24 in the project: npm pkg set allowScripts.node=true --json && npm install --save-dev node@24\n`,
  );
  process.exit(2);
}
// V8's compiled code (and Node's type-stripped sources) kept on disk across runs: each okt process
// (the operator, the sidecar, every command) starts faster. NODE_DISABLE_COMPILE_CACHE=1 turns it off.
const { enableCompileCache } = await import('node:module');
enableCompileCache?.();
const fromSource = !import.meta.url.includes('/node_modules/');
await import(fromSource ? '../src/cli/main.ts' : '../dist/src/cli/main.js');
