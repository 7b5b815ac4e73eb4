import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { okAsUser as ok, packOkt, PACKAGE, projectEnv as envOf, REPO, runAsUser as run, stepTimer, userEnv, type PackedOkt } from '../../fixtures/npm-project.ts';

// What a user does with okt as a dependency, from a tarball of this checkout (`npm pack`): a new ESM
// project outside the repository, Node 24 brought by the project (the `node` package, as docs/use-as-dependency.md
// says), okt installed from the tarball; then a TypeScript file that imports
// every documented subpath, type-checked and run by that Node, `npx okt --version`, and the packaged
// example sidecar config started as it is. The project installs the Kubernetes client itself, as code
// that starts the operator does: npm keeps one copy, okt's and the project's. npm fetches what its cache lacks from the registry. The
// user's shell (npm on the machine's Node, the project's Node inside it) is test/fixtures/npm-project.ts.

const NODE_PACKAGE_VERSION = (JSON.parse(readFileSync(path.join(REPO, 'node_modules/node/package.json'), 'utf8')) as { version: string }).version;
const TSC = path.join(REPO, 'node_modules/.bin/tsc');

const work = mkdtempSync(path.join(tmpdir(), 'okt-pkg-'));
const project = path.join(work, 'my-app');
afterAll(() => rmSync(work, { recursive: true, force: true }));
const projectEnv = () => envOf(project);

let packed: PackedOkt;
const { timings, timed } = stepTimer();

beforeAll(async () => {
  // `npm pack` runs prepack (a fresh build into dist/) and says, with --json, what the tarball holds.
  packed = await timed('npm pack', () => packOkt(work));
  const tarball = packed.tarball;

  mkdirSync(project);
  await timed('npm init', async () => {
    await ok('npm', ['init', '-y'], { cwd: project });
    await ok('npm', ['pkg', 'set', 'type=module'], { cwd: project });
    await ok('npm', ['pkg', 'set', 'allowScripts.node=true', '--json'], { cwd: project });
  });
  await timed('npm install node', () => ok('npm', ['install', '--save-dev', `node@${NODE_PACKAGE_VERSION}`], { cwd: project }));
  await timed('npm install okt', () => ok('npm', ['install', tarball], { cwd: project }));
  // With okt's range (what `okt init` writes, and what makes npm dedupe the two).
  const clientNode = `@kubernetes/client-node@${PACKAGE.dependencies['@kubernetes/client-node']}`;
  await timed('npm install @kubernetes/client-node', () => ok('npm', ['install', clientNode], { cwd: project }));
  // For tsc: Node's own types (main.ts imports node:fs), which a TypeScript user installs; okt brings none.
  await timed('npm install @types/node', () => ok('npm', ['install', '--save-dev', `@types/node@${PACKAGE.devDependencies['@types/node']}`], { cwd: project }));
}, 300_000);

afterAll(() => console.log(`okt as a dependency, step times (ms): ${JSON.stringify(timings)}`));

describe('okt as a dependency of a new project (npm pack, npm install)', () => {
  it('the tarball holds every file the exports map and the packaged examples name', () => {
    const files = new Map(packed.files.map((f) => [f.path, f.mode]));
    for (const [subpath, target] of Object.entries(PACKAGE.exports)) {
      for (const file of typeof target === 'string' ? [target] : Object.values(target)) {
        if (file.includes('*')) continue;
        expect(files.has(path.posix.normalize(file)), `${subpath}: ${file}`).toBe(true);
      }
    }
    expect(packed.files.some((f) => f.path.startsWith('src/events/schema/') && f.path.endsWith('.json'))).toBe(true);
    expect(files.get('bin/okt.js')! & 0o111).not.toBe(0);

    // Every sidecar config in the package: its graph files and the programs its commands run.
    const configs = packed.files.map((f) => f.path).filter((p) => /\.sidecar\.ya?ml$/.test(p));
    expect(configs).toContain('graphs/database.sidecar.yaml');
    for (const config of configs) {
      const referenced: { file: string; program: boolean }[] = [];
      const walk = (value: unknown, key?: string): void => {
        if (Array.isArray(value)) {
          if (key === 'argv' && typeof value[0] === 'string' && value[0].includes('/')) referenced.push({ file: value[0], program: true });
          value.forEach((v) => walk(v));
        } else if (value !== null && typeof value === 'object') {
          for (const [k, v] of Object.entries(value)) walk(v, k);
        } else if ((key === 'graph' || key === 'path') && typeof value === 'string') {
          referenced.push({ file: value, program: false });
        }
      };
      walk(parseYaml(readFileSync(path.join(REPO, config), 'utf8')));
      expect(referenced.length).toBeGreaterThan(0);
      for (const { file, program } of referenced) {
        const inPackage = path.posix.normalize(path.posix.join(path.posix.dirname(config), file));
        expect(files.has(inPackage), `${config} names ${file}`).toBe(true);
        if (program) expect(files.get(inPackage)! & 0o111, `${inPackage} is executable`).not.toBe(0);
      }
    }
  });

  it('installs without engine warnings or install scripts to approve, under the Node the project brings', async () => {
    // Installed again with the project's Node 24 in PATH (as `npm exec` or a script would): nothing to warn about.
    const again = await run('npm', ['install'], { cwd: project, env: projectEnv() });
    expect(again.code).toBe(0);
    expect(again.stderr).not.toMatch(/EBADENGINE|install-scripts/);
    expect(existsSync(path.join(project, 'node_modules/okt/dist/src/entry/index.js'))).toBe(true);
  });

  it("holds one copy of each of okt's dependencies: one @kubernetes/client-node, the project's and okt's", () => {
    const packageDirs = (readdirSync(path.join(project, 'node_modules'), { recursive: true }) as string[]).filter((file) => file.endsWith(`${path.sep}package.json`)).map(path.dirname);
    for (const name of Object.keys(PACKAGE.dependencies)) {
      const copies = packageDirs.filter((dir) => dir === name || dir.endsWith(`${path.sep}node_modules${path.sep}${name}`));
      expect(copies, name).toEqual([name]);
    }
  });

  it('a TypeScript file importing every documented subpath type-checks (tsc --noEmit) and runs on the project Node', async () => {
    writeFileSync(
      path.join(project, 'tsconfig.json'),
      JSON.stringify(
        {
          compilerOptions: {
            target: 'es2023',
            module: 'nodenext',
            strict: true,
            noEmit: true,
            allowImportingTsExtensions: true,
            verbatimModuleSyntax: true,
            erasableSyntaxOnly: true,
            skipLibCheck: true,
          },
        },
        null,
        2,
      ),
    );
    writeFileSync(
      path.join(project, 'upgrade.ts'),
      `import type { ModuleAction } from 'okt/sidecar';

const upgrade: ModuleAction<{ version: string }> = ({ params, log }) => {
  log(\`upgrading to \${params.version}\`);
  return 'Running';
};
export default upgrade;
`,
    );
    writeFileSync(
      path.join(project, 'main.ts'),
      `import { writeFileSync } from 'node:fs';
import { defineGraph, version, type StateOf } from 'okt';
import { parseSidecarConfig, startSidecar, type ActionContext, type ModuleAction } from 'okt/sidecar';
import { createLifecycleEventReceiver, LifecycleEventError, parseLifecycleEvent, type LifecycleEvent } from 'okt/events';
import { SidecarClient, type Operation } from 'okt/sidecar-client';
import { startControlPlane } from 'okt/cluster';
import { KubeConfig } from '@kubernetes/client-node';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeTransport } from 'okt';

const graph = defineGraph({
  name: 'broker',
  entry: 'Start',
  nodes: { Start: { children: ['Running'] }, Running: { children: ['Upgrading', 'End'] }, Upgrading: { children: ['Running'] }, End: {} },
});
const state: StateOf<typeof graph> = 'Upgrading';
// @ts-expect-error: not a node of the graph (the types are okt's, not any)
const notANode: StateOf<typeof graph> = 'Nowhere';
// @ts-expect-error: params.version is a string
const wrongParams: ModuleAction<{ version: string }> = ({ params }) => String(params.version satisfies number);
const context: ActionContext = { operationId: 'x', graph: 'broker', node: 'Upgrading', params: {}, signal: new AbortController().signal, log() {} };

// The sidecar, in process, running the module action of upgrade.ts and a command (through its spawner
// process, which the package ships); the typed client drives it.
writeFileSync('token', 'a-token-of-at-least-16-characters');
const sidecar = await startSidecar(
  parseSidecarConfig({ listen: { port: 0 }, tokenFile: 'token', journal: 'journal.jsonl', logLevel: 'warn', graphs: { broker: { nodes: { Upgrading: { module: { path: './upgrade.ts' } }, Running: { command: { argv: ['echo', 'okt-event: Upgrading'] } } } } } }, process.cwd()),
);
const client = new SidecarClient({ baseUrl: sidecar.url, token: 'a-token-of-at-least-16-characters' });
await client.startOperation('upgrade-1', { node: 'Upgrading', params: { version: '2.4.0' } });
const operation: Operation = await client.waitForOperation('upgrade-1', { timeoutMs: 10_000 });
await client.startOperation('running-1', { node: 'Running' });
const command: Operation = await client.waitForOperation('running-1', { timeoutMs: 10_000 });
await client.close();
await sidecar.close();

// The project's own KubeConfig through okt's API: a GET to a stand-in API server, with the user's token.
let authorization: string | undefined;
const apiServer = createServer((request, response) => {
  authorization = request.headers.authorization;
  response.setHeader('content-type', 'application/json');
  response.end(JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'default' }, data: { mode: 'fast' } }));
});
await new Promise<void>((resolve) => apiServer.listen(0, '127.0.0.1', resolve));
const kubeConfig = new KubeConfig();
kubeConfig.loadFromOptions({
  clusters: [{ name: 'local', server: \`http://127.0.0.1:\${(apiServer.address() as AddressInfo).port}\`, skipTLSVerify: true }],
  users: [{ name: 'me', token: 'my-token' }],
  contexts: [{ name: 'local', cluster: 'local', user: 'me' }],
  currentContext: 'local',
});
const transport = await KubeTransport.fromKubeConfig(kubeConfig);
const configMap = await transport.get({ group: '', version: 'v1', plural: 'configmaps' }, 'default', 'settings');
await transport.close();
apiServer.close();

// The consumer helpers: a receiver, and the parser's error naming the attribute.
const received: LifecycleEvent[] = [];
const receiver = await createLifecycleEventReceiver({ onEvent: (event) => void received.push(event) });
const refused = await fetch(receiver.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
await receiver.close();
let field: string | undefined;
try {
  parseLifecycleEvent({ 'content-type': 'application/json' }, '{}');
} catch (error) {
  if (error instanceof LifecycleEventError) field = error.field;
}

console.log(JSON.stringify({
  version,
  state,
  notANode,
  wrongParams: typeof wrongParams,
  node: context.node,
  operation: { phase: operation.phase, events: operation.events, outputTail: operation.outputTail },
  command: { phase: command.phase, events: command.events },
  receiver: { status: refused.status, received: received.length },
  parseError: field,
  startControlPlane: typeof startControlPlane,
  kube: { authorization, data: configMap.data },
}));
`,
    );
    const tsc = await timed('tsc', () => run(TSC, ['--noEmit', '-p', '.'], { cwd: project, env: projectEnv() }));
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.code).toBe(0);

    const main = await timed('node main.ts', () => run('node', ['main.ts'], { cwd: project, env: projectEnv() }));
    expect(main.stderr).toBe('');
    expect(main.code).toBe(0);
    expect(JSON.parse(main.stdout)).toEqual({
      version: PACKAGE.version,
      state: 'Upgrading',
      notANode: 'Nowhere',
      wrongParams: 'function',
      node: 'Upgrading',
      operation: { phase: 'Succeeded', events: ['Running'], outputTail: ['upgrading to 2.4.0'] },
      command: { phase: 'Succeeded', events: ['Upgrading'] },
      receiver: { status: 400, received: 0 },
      parseError: expect.any(String),
      startControlPlane: 'function',
      kube: { authorization: 'Bearer my-token', data: { mode: 'fast' } },
    });
  });

  it('npx okt --version and -V print the package version', async () => {
    for (const flag of ['--version', '-V']) {
      const result = await run('npx', ['okt', flag], { cwd: project });
      expect(result.code).toBe(0);
      expect(result.stdout).toBe(`${PACKAGE.version}\n`);
    }
  });

  it('the packaged example sidecar config starts as it is (its graph and pg.sh are in the package)', async () => {
    const validate = await run('npx', ['okt', 'graph', 'validate', 'node_modules/okt/graphs/database.ts'], { cwd: project });
    expect(validate.stdout).toMatch(/^OK: graph "database" \(node_modules\/okt\/graphs\/database\.ts, export databaseGraph\)/);
    expect(validate.code).toBe(0);

    writeFileSync(path.join(work, 'pg-token'), 'a-token-of-at-least-16-characters');
    const env = { ...userEnv, OKT_SIDECAR_PORT: '0', OKT_SIDECAR_TOKEN_FILE: path.join(work, 'pg-token'), OKT_PG_DIR: path.join(work, 'pg') };
    // The bin directly (npx would put a shell between this test and the sidecar to signal).
    const child = spawn(path.join(project, 'node_modules/.bin/okt'), ['sidecar', '--config', 'node_modules/okt/graphs/database.sidecar.yaml'], {
      cwd: project,
      env: { ...env, PATH: projectEnv().PATH },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const listening = await new Promise<string | undefined>((resolve) => {
      createInterface({ input: child.stdout }).on('line', (line) => line.includes('"listening"') && resolve(line));
      void exited.then(() => resolve(undefined));
    });
    child.kill('SIGTERM');
    await exited;
    expect(listening, stderr).toMatch(/"sidecar":"listening"/);
    expect(stderr).not.toMatch(/invalid sidecar config|failed to load/);
  });
});

