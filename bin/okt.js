#!/usr/bin/env node
// The `okt` command. In a checkout it runs the TypeScript sources as they are (Node >= 22.18 strips
// types); an installed package runs its build, since Node does not strip types under node_modules.
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < 22 || (major === 22 && minor < 19)) {
  process.stderr.write(
    `okt: Node ${process.versions.node} is too old; okt needs Node >= 22.19.\n` +
      `Run it through npm (npx okt, npm start), which uses the Node that npm install put in node_modules/.bin.\n`,
  );
  process.exit(2);
}
const fromSource = !import.meta.url.includes('/node_modules/');
await import(fromSource ? '../src/cli/main.ts' : '../dist/src/cli/main.js');
