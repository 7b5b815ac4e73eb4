import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { run } from '../fixtures/okt-process.ts';

// What a start of okt loads: the OpenTelemetry SDK (about 0.1 s of CPU) only when tracing is configured
// (docs/use-as-dependency.md, "Start-up and size"). A real Node process records, through a module resolve hook,
// every package it loads.

const ROOT = path.resolve(import.meta.dirname, '../..');
const NODE = path.join(ROOT, 'node_modules/.bin/node');
const SDK = ['@opentelemetry/sdk-trace', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/resources'];

const dir = mkdtempSync(path.join(tmpdir(), 'okt-start-up-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const recorder = path.join(dir, 'record-packages.mjs');
writeFileSync(
  recorder,
  `import { registerHooks } from 'node:module';
const loaded = new Set();
registerHooks({
  resolve(specifier, context, nextResolve) {
    const result = nextResolve(specifier, context);
    const name = /\\/node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(result.url)?.[1];
    if (name !== undefined) loaded.add(name);
    return result;
  },
});
process.on('exit', () => process.stderr.write('loaded packages: ' + JSON.stringify([...loaded]) + '\\n'));
`,
);

/** The packages a Node process running `script` (an ES module) loaded. */
async function packagesLoadedBy(script: string, env: NodeJS.ProcessEnv = {}): Promise<string[]> {
  const result = await run(NODE, ['--import', pathToFileURL(recorder).href, '--input-type=module', '-e', script], { env });
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(/^loaded packages: (.*)$/m.exec(result.stderr)![1]!) as string[];
}

const tracing = pathToFileURL(path.join(ROOT, 'src/controller/tracing.ts')).href;
const entry = pathToFileURL(path.join(ROOT, 'src/entry/index.ts')).href;

describe('what a start of okt loads', { timeout: 60_000 }, () => {
  it("import 'okt' and the operator without tracing configured: no OpenTelemetry SDK", async () => {
    const loaded = await packagesLoadedBy(`const { startTracing } = await import('${tracing}'); await import('${entry}'); if (await startTracing({}, {}) !== undefined) process.exit(3);`);
    expect(loaded).toContain('@opentelemetry/api');
    expect(loaded.filter((name) => SDK.includes(name))).toEqual([]);
  });

  it('tracing configured: the SDK, loaded when tracing starts', async () => {
    const loaded = await packagesLoadedBy(
      `const { startTracing } = await import('${tracing}'); const tracing = await startTracing({ endpoint: 'http://127.0.0.1:9' }, {}); await tracing.shutdown();`,
    );
    expect(loaded).toEqual(expect.arrayContaining(SDK));
  });
});
