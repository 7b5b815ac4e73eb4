// What `okt init` writes, as pure functions of the names: the checks of the names, the package.json,
// the commands that make k8s/, and the templates' placeholders (templates/init/ holds the files).
import { crdNameProblems } from './crd-names.ts';

/** The names a new project is made of. */
export interface ProjectNames {
  /** The package's, the graph's and the image's name: a lower-case DNS label. */
  name: string;
  kind: string;
  group: string;
  version: string;
}

/** How the project depends on okt: the spec in package.json, and for the README, where it comes from. */
export interface OktDependency {
  spec: string;
  /** The tarball `okt init` packed into the project (`vendor/okt-0.1.0.tgz`), when it did. */
  vendored?: string;
}

/** The ranges the project's dependencies take from okt's own package.json, so that npm installs one copy of each. */
export interface OktPackage {
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
}

const NAME = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
/** So that every name okt derives from it (`okt-<kind>-leader-election`, `<kind>-okt-sidecar`) stays within 63 characters. */
export const MAX_NAME_LENGTH = 40;

/** What is wrong with a project name, or undefined: it names the npm package, the graph and the image. */
export function projectNameProblem(name: string): string | undefined {
  if (!NAME.test(name)) return `"${name}" is not a lower-case name of letters, digits and "-", starting with a letter and not ending with "-" (it names the npm package, the graph and the image)`;
  if (name.length > MAX_NAME_LENGTH) return `"${name}" is longer than ${MAX_NAME_LENGTH} characters`;
  return undefined;
}

/** The kind a name gives by default: `my-app` is `MyApp`. */
export function kindOf(name: string): string {
  return name
    .split('-')
    .filter((part) => part !== '')
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');
}

/** Every problem of the names, each naming its flag (`--name`, `--kind`, `--group`, `--version`). */
export function projectNamesProblems(names: ProjectNames, nameFrom: string): string[] {
  const nameProblem = projectNameProblem(names.name);
  // A kind made of a bad name is that name's problem, said once.
  const kind = nameProblem !== undefined && names.kind === kindOf(names.name) ? undefined : names.kind;
  return [...(nameProblem === undefined ? [] : [`--name: ${nameProblem}${nameFrom}`]), ...crdNameProblems({ ...names, kind })];
}

/** Where graph.ts is in the project's image (its Dockerfile): the operator loads the graph's objects' renders from there. */
const GRAPH_IN_IMAGE = '/app/graph.ts';

/** `okt crd` and `okt manifests` as the project's scripts run them (without the leading `okt`). */
export function generateCommands(names: ProjectNames): { crd: string[]; manifests: string[] } {
  // A new project's CRs have no readers yet: they start with the lean status (docs/operator.md).
  const crd = ['crd', 'graph.ts', '--group', names.group, '--version', names.version, '--kind', names.kind, '--status-format', 'lean'];
  // No --sidecar-url: each resource's sidecar is at the Service its graph makes (workload.ts).
  return { crd, manifests: ['manifests', ...crd.slice(1), '--image', `${names.name}:latest`, '--graph-module', GRAPH_IN_IMAGE] };
}

/** The generated files `npm run generate` rewrites, by script. */
export const GENERATED = { crd: 'k8s/crd.yaml', manifests: 'k8s/manifests.yaml' } as const;

export function packageJson(names: ProjectNames, okt: OktDependency, from: OktPackage): Record<string, unknown> {
  const commands = generateCommands(names);
  const range = (name: string): string => {
    const found = from.dependencies[name] ?? from.devDependencies[name];
    if (found === undefined) throw new Error(`okt's package.json names no version of ${name}`);
    return found;
  };
  return {
    name: names.name,
    version: '0.1.0',
    private: true,
    description: `The lifecycle of ${names.name}, driven by okt`,
    type: 'module',
    engines: { node: '>=22.19' },
    scripts: {
      test: 'tsc --noEmit -p . && node --test --test-reporter=spec test/*.test.ts',
      generate: `npm run --silent crd > ${GENERATED.crd} && npm run --silent manifests > ${GENERATED.manifests}`,
      crd: ['okt', ...commands.crd].join(' '),
      manifests: ['okt', ...commands.manifests].join(' '),
    },
    dependencies: { okt: okt.spec },
    devDependencies: Object.fromEntries(['@kubernetes/client-node', '@types/node', 'node', 'typescript'].map((name) => [name, range(name)])),
    // npm 11 runs a dependency's install script only when allowed: `node`'s installs Node 24.
    allowScripts: { node: true },
  };
}

/** The values of the templates' `{{placeholders}}`. */
export function templateValues(names: ProjectNames, okt: OktDependency, oktVersion: string): Record<string, string> {
  const oktSource =
    okt.vendored === undefined
      ? `okt is the dependency \`${okt.spec}\` (package.json).`
      : `okt ${oktVersion} is \`${okt.vendored}\`, packed by the \`okt init\` that made this project; once okt is on the registry: \`npm install okt@^${oktVersion}\`, then delete vendor/ and its COPY line in the Dockerfile.`;
  return {
    name: names.name,
    kind: names.kind,
    group: names.group,
    version: names.version,
    oktSource,
    copyVendor: okt.vendored === undefined ? '' : 'COPY vendor vendor\n',
  };
}

/** A template's text with every `{{name}}` replaced; an unknown placeholder is a bug of okt's templates. */
export function renderTemplate(text: string, values: Record<string, string>, file: string): string {
  return text.replace(/\{\{(\w+)\}\}/g, (_, key: string) => {
    const value = values[key];
    if (value === undefined) throw new Error(`template ${file}: no value for {{${key}}}`);
    return value;
  });
}

/** Where a template file goes: npm's pack leaves out or renames dotfiles, so they are kept without the dot. */
export function templateTarget(relativePath: string): string {
  return relativePath.replace(/(^|\/)(gitignore|dockerignore)$/, '$1.$2');
}
