import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { GraphDefinitionError, isGraph, loadGraph, type Graph } from '../graph/index.ts';
import { oktPackageRoot } from '../util/package-root.ts';
import { CliError, EXIT } from './errors.ts';

const MODULE_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']);
const DATA_EXTENSIONS = new Set(['.json', '.yaml', '.yml']);

/** Where a graph came from, for messages: `graphs/database.ts (export databaseGraph)`. */
export interface LoadedGraph {
  readonly graph: Graph;
  readonly file: string;
  /** The export it was found under, for a module; undefined for JSON/YAML. */
  readonly exportName: string | undefined;
}

/**
 * Loads a graph from a file: a TS/JS module (its default export, the single exported Graph, or the
 * export `exportName`) or a JSON/YAML document. Every failure is a CliError naming the file:
 * an invalid graph lists every problem (EXIT.failed when `invalidGraphCode` says so, e.g. for
 * `graph validate`), anything else is bad input (EXIT.usage).
 */
export async function loadGraphFile(
  file: string,
  options: { exportName?: string; invalidGraphCode?: typeof EXIT.failed | typeof EXIT.usage } = {},
): Promise<LoadedGraph> {
  const invalidCode = options.invalidGraphCode ?? EXIT.usage;
  const absolute = path.resolve(file);
  const extension = path.extname(file).toLowerCase();
  try {
    if (!statSync(absolute).isFile()) throw new CliError(EXIT.usage, `${file}: not a file`);
  } catch (error) {
    if (error instanceof CliError) throw error;
    throw new CliError(EXIT.usage, `${file}: no such file`, 'Give the path of a graph module (.ts/.js) or a JSON/YAML graph.');
  }
  try {
    if (DATA_EXTENSIONS.has(extension)) {
      if (options.exportName !== undefined) throw new CliError(EXIT.usage, `${file}: --export applies to modules, not to ${extension} files`);
      return { graph: loadGraph(parseData(file, absolute, extension)), file, exportName: undefined };
    }
    if (!MODULE_EXTENSIONS.has(extension)) {
      throw new CliError(EXIT.usage, `${file}: unsupported file type "${extension || '(none)'}"`, `Use a module (${[...MODULE_EXTENSIONS].join(', ')}) or data (${[...DATA_EXTENSIONS].join(', ')}).`);
    }
    const module = await importModule(file, absolute);
    return pickGraph(file, module, options.exportName);
  } catch (error) {
    if (error instanceof GraphDefinitionError) {
      // The message already lists every problem, one per line.
      throw new CliError(invalidCode, `${file}: ${error.message}`);
    }
    throw error;
  }
}

function parseData(file: string, absolute: string, extension: string): unknown {
  const text = readFileSync(absolute, 'utf8');
  try {
    return extension === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (error) {
    const reason = error instanceof Error ? firstLine(error.message) : String(error);
    throw new CliError(EXIT.usage, `${file}: not valid ${extension === '.json' ? 'JSON' : 'YAML'}: ${reason}`);
  }
}

async function importModule(file: string, absolute: string): Promise<Record<string, unknown>> {
  try {
    return (await import(pathToFileURL(builtTwin(absolute) ?? absolute).href)) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof GraphDefinitionError) throw error;
    const reason = error instanceof Error ? firstLine(error.message) : String(error);
    const hint = reason.includes('Cannot use import statement outside a module')
      ? 'It is an ES module in a "commonjs" package: set "type": "module" in its package.json (npm pkg set type=module), or name it .mts.'
      : 'Run it with `node` to see the whole error.';
    throw new CliError(EXIT.usage, `${file}: the module failed to load: ${reason}`, hint);
  }
}

/**
 * The build of one of okt's own TypeScript modules in an installed package (node_modules/okt/graphs/
 * database.ts, which the packaged graphs/database.sidecar.yaml names): Node strips no types under
 * node_modules, so it imports dist/graphs/database.js instead. Undefined for any other file.
 */
function builtTwin(absolute: string): string | undefined {
  if (!/\.[mc]?ts$/.test(absolute) || !absolute.split(path.sep).includes('node_modules')) return undefined;
  const root = oktPackageRoot();
  const relative = path.relative(root, absolute);
  if (relative.startsWith('..') || path.isAbsolute(relative)) return undefined;
  const built = path.join(root, 'dist', relative.replace(/\.([mc]?)ts$/, '.$1js'));
  return existsSync(built) ? built : undefined;
}

function pickGraph(file: string, module: Record<string, unknown>, exportName: string | undefined): LoadedGraph {
  const found = (name: string, value: Graph): LoadedGraph => ({ graph: asEngineGraph(value), file, exportName: name });
  if (exportName !== undefined) {
    if (!(exportName in module)) {
      throw new CliError(EXIT.usage, `${file}: no export named "${exportName}"`, `Its exports: ${Object.keys(module).join(', ') || '(none)'}.`);
    }
    if (!isGraph(module[exportName])) throw new CliError(EXIT.usage, `${file}: export "${exportName}" is not a Graph (make it with defineGraph)`);
    return found(exportName, module[exportName]);
  }
  if (isGraph(module.default)) return found('default', module.default);
  const graphs = Object.entries(module).filter((entry): entry is [string, Graph] => entry[0] !== 'default' && isGraph(entry[1]));
  if (graphs.length === 1) return found(graphs[0]![0], graphs[0]![1]);
  if (graphs.length > 1) {
    throw new CliError(EXIT.usage, `${file}: exports ${graphs.length} graphs (${graphs.map(([n]) => n).join(', ')})`, 'Choose one with --export NAME.');
  }
  // A module may also export the plain data form (what a JSON file holds).
  if (module.default !== undefined && typeof module.default === 'object') return { graph: loadGraph(module.default), file, exportName: 'default' };
  throw new CliError(EXIT.usage, `${file}: exports no Graph`, 'Export one made with defineGraph (as the default export or a named one).');
}

/** The same graph made by this copy of the engine (the planner needs its own tables). */
function asEngineGraph(graph: Graph): Graph {
  const data = graph.toData();
  // The objects' functions stay code, out of the data: the copy takes them back, by id.
  const objects = data.objects?.map((object) => {
    const declared = graph.objects.find((o) => o.id === object.id);
    return { ...object, ...(declared?.render === undefined ? {} : { render: declared.render }), ...(declared?.ready === undefined ? {} : { ready: declared.ready }) };
  });
  return loadGraph(objects === undefined ? data : { ...data, objects });
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0]!.trim();
}
