// Writes vendor/: the dependencies whose engines want Node >= 22, bundled into okt so that npm on an
// older Node warns about okt alone (okt's own engines say what Node it needs). @kubernetes/client-node
// is among them (it requires undici 8): okt runs its bundled copy, and the types of its public API
// (a KubeConfig) come from the user's own, an optional peer dependency. The code imports them as
// `#vendor/<name>` (package.json "imports"); they are devDependencies, so their types stay theirs.
// Each exports only what okt uses, by name: a CommonJS package's names cannot be re-exported wholesale
// from an ES module, nor the types of a package declared with `export =` (fastify) from its .d.ts.
// okt's dependencies stay outside the bundles: one @opentelemetry/api for the SDK and its users (okt's
// range for it is the SDK's peer range), one pino; so does undici inside client-node's bundle (okt's one).
// Usage: node scripts/bundle-vendor.ts   (npm runs it on install in this repository, and before a build,
// npm test and npm start, so a checkout that changed this list never runs a stale vendor/)
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { build, type PluginBuild } from 'esbuild';

/** Each vendor module: the packages it bundles, and what it exports from each (the bundle and its .d.ts alike). */
const VENDORED: Record<string, Record<string, string[]>> = {
  'client-node': {
    '@kubernetes/client-node': ['ApiException', 'ApiextensionsV1Api', 'CustomObjectsApi', 'KubeConfig', 'type V1CustomResourceDefinition'],
  },
  commander: { commander: ['Command', 'InvalidArgumentError', 'Option'] },
  fastify: { fastify: ['default', 'LogController', 'type FastifyReply', 'type FastifyRequest'] },
  opentelemetry: {
    '@opentelemetry/core': ['W3CTraceContextPropagator'],
    '@opentelemetry/exporter-trace-otlp-http': ['OTLPTraceExporter'],
    '@opentelemetry/resources': ['resourceFromAttributes'],
    '@opentelemetry/sdk-trace': ['BatchSpanProcessor', 'TracerProvider'],
  },
  // What okt uses, and what client-node's bundle imports of it (Agent, ProxyAgent, fetch).
  undici: { undici: ['Agent', 'errors', 'fetch', 'Pool', 'ProxyAgent', 'request', 'type Dispatcher'] },
};

/** One undici in okt: client-node's bundle takes okt's (#vendor/undici). */
const ONE_UNDICI = {
  name: 'one-undici',
  setup(build: PluginBuild) {
    build.onResolve({ filter: /^undici$/ }, () => ({ path: '#vendor/undici', external: true }));
  },
};

const ROOT = path.resolve(import.meta.dirname, '..');
const OUT = path.join(ROOT, 'vendor');
const { dependencies } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };

// Other okt processes may be starting from this checkout meanwhile (a test runs `npm start` or `npm
// pack`): each file is replaced whole (written aside, then renamed over), and only when it changed.
mkdirSync(OUT, { recursive: true });
const written = new Set<string>();
for (const [name, packages] of Object.entries(VENDORED)) {
  const reexports = `${Object.entries(packages)
    .map(([pkg, names]) => `export { ${names.join(', ')} } from '${pkg}';`)
    .join('\n')}\n`;
  const result = await build({
    stdin: { contents: reexports, resolveDir: ROOT, sourcefile: `vendor/${name}.ts`, loader: 'ts' },
    outfile: path.join(OUT, `${name}.js`),
    write: false,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    external: Object.keys(dependencies),
    plugins: name === 'undici' ? [] : [ONE_UNDICI],
    // The CommonJS inside an ES module bundle requires Node's builtins through this.
    banner: { js: "import { createRequire as __vendorRequire } from 'node:module';\nconst require = __vendorRequire(import.meta.url);" },
    legalComments: 'none',
    metafile: true,
    logLevel: 'warning',
  });
  replace(`${name}.js`, result.outputFiles[0]!.text);
  replace(`${name}.d.ts`, reexports);
  replace(`${name}.LICENSES.txt`, licenses(Object.keys(result.metafile.inputs)));
}
// What an earlier list bundled goes (not what another run is writing aside).
for (const file of readdirSync(OUT)) if (!written.has(file) && !file.endsWith('.tmp')) rmSync(path.join(OUT, file), { force: true });

function replace(file: string, text: string): void {
  written.add(file);
  const target = path.join(OUT, file);
  if (existsSync(target) && readFileSync(target, 'utf8') === text) return;
  const aside = `${target}.${process.pid}.tmp`;
  writeFileSync(aside, text);
  renameSync(aside, target);
}

/** The license of each package a bundle holds code of (their licenses ask that it travel with the code). */
function licenses(inputs: string[]): string {
  const packageDirs = new Set(inputs.flatMap((input) => /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input)?.[1] ?? []));
  return [...packageDirs]
    .sort()
    .map((dir) => {
      const { name, version, license } = JSON.parse(readFileSync(path.join(ROOT, dir, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
      const file = readdirSync(path.join(ROOT, dir)).find((entry) => /^licen[cs]e/i.test(entry));
      const text = file === undefined ? `License: ${license ?? 'see the package'}` : readFileSync(path.join(ROOT, dir, file), 'utf8').trim();
      return `${name}@${version}\n\n${text}\n`;
    })
    .join(`\n${'-'.repeat(72)}\n\n`);
}
