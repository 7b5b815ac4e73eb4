// `okt init [DIR]`: a new project of the user's own that okt drives (templates/init/, init-project.ts):
// checks the names and the directory, writes the files, packs this okt into vendor/ (unless --okt
// says which okt to depend on), and makes k8s/ with this okt's own `okt crd` and `okt manifests`.
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Command } from 'commander';
import { CliError, EXIT, runAction, usageError } from './errors.ts';
import { oktPackageRoot } from '../util/package-root.ts';
import {
  GENERATED,
  generateCommands,
  kindOf,
  packageJson,
  projectNamesProblems,
  renderTemplate,
  templateTarget,
  templateValues,
  type OktDependency,
  type OktPackage,
  type ProjectNames,
} from './init-project.ts';

interface InitFlags {
  name?: string;
  kind?: string;
  group: string;
  version: string;
  okt?: string;
  force: boolean;
}

/** This okt: its package root, and whether it runs from a checkout's TypeScript sources or its build. */
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const ROOT = oktPackageRoot();
const run = promisify(execFile);

export function initCommand(): Command {
  return new Command('init')
    .description('Create a project of your own that okt drives: a typed graph, a sidecar config with a TypeScript module action and a command action, a test that walks a resource on a real control plane, the CRD and manifests, a Dockerfile')
    .argument('[dir]', 'the directory of the new project (made if missing; it must be empty)', '.')
    .option('--name <name>', "the name of the package, the graph and the image (default: the directory's name)")
    .option('--kind <kind>', 'the kind of the custom resource, in CamelCase (default: the name in CamelCase: my-app is MyApp)')
    .option('--group <group>', 'the API group of the custom resource, a domain of yours', 'example.com')
    .option('--version <version>', 'the API version of the custom resource', 'v1alpha1')
    .option('--okt <spec>', 'the okt to depend on, as npm takes it (^0.2.0 once okt is on the registry, a tarball\'s path); default: this okt, packed into vendor/')
    .option('--force', 'write into a directory that is not empty (the files okt writes replace those of the same name)', false)
    .action(
      runAction('init', async (dirArgument: string, flags: InitFlags) => {
        const dir = path.resolve(dirArgument);
        const name = flags.name ?? path.basename(dir);
        const names: ProjectNames = { name, kind: flags.kind ?? kindOf(name), group: flags.group, version: flags.version };
        const nameFrom = flags.name === undefined ? ` (the name of the directory ${dirArgument}: give --name NAME)` : '';
        const problems: unknown[] = [...projectNamesProblems(names, nameFrom), ...directoryProblems(dir, dirArgument, flags.force)];
        if (flags.okt !== undefined && flags.okt.trim() === '') problems.push('--okt: give a version range, a tarball or a path npm can install');
        if (problems.length > 0) throw usageError(problems);

        const oktPackage = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as OktPackage & { exports: Record<string, unknown> };
        mkdirSync(dir, { recursive: true });
        const okt = flags.okt === undefined ? await vendorOkt(dir, oktPackage.version) : { spec: flags.okt };
        const values = templateValues(names, okt, oktPackage.version);
        const written = writeTemplates(dir, values);
        writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(packageJson(names, okt, oktPackage), null, 2)}\n`);
        await generateK8s(dir, names, oktPackage.exports);

        const shown = dirArgument;
        process.stdout.write(
          `okt init: made ${shown}: package.json, ${written.join(', ')}, ${GENERATED.crd}, ${GENERATED.manifests}` +
            ` (${names.kind}.${names.group}/${names.version}; okt ${okt.vendored ?? okt.spec})\n` +
            `Next: ${shown === '.' ? '' : `cd ${shown} && `}npm install && npm test\n`,
        );
      }),
    );
}

/** The directory must be new or empty (a `.git` alone counts as empty), unless --force. */
function directoryProblems(dir: string, shown: string, force: boolean): CliError[] {
  if (!existsSync(dir)) return [];
  if (!statSync(dir).isDirectory()) return [new CliError(EXIT.usage, `DIR: ${shown} is not a directory`)];
  const entries = readdirSync(dir).filter((entry) => entry !== '.git');
  if (entries.length === 0 || force) return [];
  const listed = entries.length > 3 ? `${entries.slice(0, 3).join(', ')}, …` : entries.join(', ');
  return [new CliError(EXIT.usage, `DIR: ${shown} is not empty (it holds ${listed})`, 'Give a new or empty directory, or --force to write the project over what is there.')];
}

/** Packs this okt into DIR/vendor: the project keeps working when the okt that made it moves or goes. */
async function vendorOkt(dir: string, version: string): Promise<OktDependency> {
  const vendor = path.join(dir, 'vendor');
  mkdirSync(vendor, { recursive: true });
  // A checkout packs with its prepack script (a fresh build into dist/); an installed okt has its build.
  process.stderr.write(`okt init: packing okt ${version} (${ROOT}) into vendor/${FROM_SOURCE ? ', building it first' : ''}\n`);
  const args = ['pack', '--json', '--pack-destination', vendor, ...(FROM_SOURCE ? [] : ['--ignore-scripts'])];
  let stdout: string;
  try {
    ({ stdout } = await run('npm', args, { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 }));
  } catch (error) {
    const { stderr = '' } = error as { stderr?: string };
    throw new CliError(EXIT.failed, `npm pack of okt (${ROOT}) failed: ${stderr.trim().split('\n').slice(-3).join(' ') || (error as Error).message}`, 'Give the okt to depend on with --okt SPEC instead.');
  }
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  const tarball = `vendor/${packed!.filename}`;
  return { spec: `file:${tarball}`, vendored: tarball };
}

/** Writes templates/init/ into dir; returns what it wrote, a directory as `actions/`. */
function writeTemplates(dir: string, values: Record<string, string>): string[] {
  const templates = path.join(ROOT, 'templates/init');
  const written = new Set<string>();
  for (const entry of readdirSync(templates, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const source = path.join(entry.parentPath, entry.name);
    const relative = path.relative(templates, source).split(path.sep).join('/');
    const target = path.join(dir, templateTarget(relative));
    mkdirSync(path.dirname(target), { recursive: true });
    writeFileSync(target, renderTemplate(readFileSync(source, 'utf8'), values, relative));
    if (statSync(source).mode & 0o111) chmodSync(target, 0o755);
    written.add(relative.includes('/') ? `${relative.split('/')[0]}/` : templateTarget(relative));
  }
  return [...written].sort();
}

/**
 * k8s/ as `npm run generate` makes it: this okt's `okt crd` and `okt manifests`, in DIR. The project
 * has no node_modules yet, so its graph.ts's `import ... from 'okt'` is resolved to this okt (init-hooks.ts).
 */
async function generateK8s(dir: string, names: ProjectNames, exports: Record<string, unknown>): Promise<void> {
  const hooks = pathToFileURL(path.join(path.dirname(fileURLToPath(import.meta.url)), `init-hooks${FROM_SOURCE ? '.ts' : '.js'}`)).href;
  const env = { ...process.env, OKT_INIT_MODULES: JSON.stringify(entryModules(exports)) };
  mkdirSync(path.join(dir, 'k8s'), { recursive: true });
  const commands = generateCommands(names);
  for (const script of ['crd', 'manifests'] as const) {
    try {
      const { stdout } = await run(process.execPath, ['--import', hooks, path.join(ROOT, 'bin/okt.js'), ...commands[script]], { cwd: dir, env, maxBuffer: 64 * 1024 * 1024 });
      writeFileSync(path.join(dir, GENERATED[script]), stdout);
    } catch (error) {
      const { stderr = '' } = error as { stderr?: string };
      throw new CliError(EXIT.failed, `making ${GENERATED[script]} failed: ${stderr.trim() || (error as Error).message}`);
    }
  }
}

/** `okt`, `okt/sidecar`, … -> the file of this okt each names (its sources in a checkout, else its build). */
function entryModules(exports: Record<string, unknown>): Record<string, string> {
  const modules: Record<string, string> = {};
  for (const [subpath, target] of Object.entries(exports)) {
    const file = typeof target === 'object' && target !== null ? (target as { default?: string }).default : undefined;
    if (file === undefined || !file.endsWith('.js')) continue;
    const own = FROM_SOURCE ? file.replace(/^\.\/dist\//, './').replace(/\.js$/, '.ts') : file;
    modules[`okt${subpath.slice(1)}`] = pathToFileURL(path.join(ROOT, own)).href;
  }
  return modules;
}
