import { Option, type Command } from 'commander';
import type { CrdNames } from '../kube/crd.ts';
import { DEFAULT_STATUS_FORMAT, STATUS_FORMATS, type StatusFormat } from '../kube/status-format.ts';
import { collectList } from './output.ts';
import { usageError } from './errors.ts';

// What the API server accepts (apimachinery's validation), checked here so that a typo fails before
// anything is applied, naming the flag.
const NAME_RULES = {
  group: [/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/, 'a lower-case domain with at least one dot, e.g. okt.dev'],
  version: [/^[a-z]([-a-z0-9]*[a-z0-9])?$/, 'a lower-case DNS label, e.g. v1alpha1'],
  kind: [/^[A-Z][A-Za-z0-9]*$/, 'CamelCase letters and digits, e.g. Database'],
  plural: [/^[a-z]([-a-z0-9]*[a-z0-9])?$/, 'a lower-case DNS label, e.g. databases'],
  shortName: [/^[a-z]([-a-z0-9]*[a-z0-9])?$/, 'lower-case DNS labels, e.g. odb'],
} as const satisfies Record<string, readonly [RegExp, string]>;

export interface CrdNameFlags {
  group: string;
  version: string;
  kind: string;
  plural?: string;
  shortNames?: string[];
  statusFormat?: StatusFormat;
}

/**
 * Adds --group, --version, --kind, --plural and --short-names to a command. --kind is required unless
 * `kindRequired` is false, where --kind-graph may name the kinds instead (kind-graphs.ts).
 */
export function addCrdNameFlags(command: Command, { kindRequired = true } = {}): Command {
  return command
    .requiredOption('--group <group>', 'API group of the custom resource, a domain (okt.dev)')
    .requiredOption('--version <version>', 'API version (v1alpha1)')
    .addOption(new Option('--kind <kind>', 'kind, in CamelCase (Database)').makeOptionMandatory(kindRequired))
    .option('--plural <plural>', 'plural resource name (default: the kind in lower case plus "s")')
    .addOption(new Option('--short-names <names>', 'short names, comma-separated (odb)').argParser(collectList))
    .addOption(new Option('--status-format <format>', `the shape of status in this version, the same for okt crd and okt run (docs/operator.md, "Status formats"); default ${DEFAULT_STATUS_FORMAT}`).choices(STATUS_FORMATS));
}

/** The CRD names from the flags, each checked: every bad one is a usage error naming its flag, all at once. */
export function crdNamesFromFlags(flags: CrdNameFlags): CrdNames {
  const problems = crdNameProblems(flags);
  if (problems.length > 0) throw usageError(problems);
  return crdNamesOf(flags);
}

/** What is wrong with the CRD name flags given (--kind may be absent), each naming its flag. */
export function crdNameProblems(flags: Omit<CrdNameFlags, 'kind'> & { kind?: string | undefined }): string[] {
  return [
    flagProblem('--group', 'group', flags.group),
    flagProblem('--version', 'version', flags.version),
    flags.kind === undefined ? undefined : flagProblem('--kind', 'kind', flags.kind),
    flags.plural === undefined ? undefined : flagProblem('--plural', 'plural', flags.plural),
    ...(flags.shortNames ?? []).map((name) => flagProblem('--short-names', 'shortName', name)),
  ].filter((problem) => problem !== undefined);
}

/** The CRD names the flags give, unchecked. */
export function crdNamesOf(flags: CrdNameFlags): CrdNames {
  return {
    group: flags.group,
    version: flags.version,
    kind: flags.kind,
    ...(flags.plural === undefined ? {} : { plural: flags.plural }),
    ...(flags.shortNames === undefined ? {} : { shortNames: flags.shortNames }),
    ...(flags.statusFormat === undefined ? {} : { statusFormat: flags.statusFormat }),
  };
}

/** What is wrong with a name, as `"okt" is not a lower-case domain …`, or undefined when it is good. */
export function nameProblem(rule: keyof typeof NAME_RULES, value: string): string | undefined {
  const [pattern, expected] = NAME_RULES[rule];
  return pattern.test(value) ? undefined : `"${value}" is not ${expected}`;
}

function flagProblem(flag: string, rule: keyof typeof NAME_RULES, value: string): string | undefined {
  const problem = nameProblem(rule, value);
  return problem === undefined ? undefined : `${flag}: ${problem}`;
}

/** The flags that name a CRD in the cluster outright (`okt status`, `okt graph check`). */
export interface CrdFinderFlags {
  crdName?: string;
  kind?: string;
  group?: string;
}

/** Adds --kind, --group and --crd-name; without them each command looks for its CRD its own way. */
export function addCrdFinderFlags(command: Command, resources: string): Command {
  return command
    .option('--kind <kind>', `kind of the ${resources} (with --group if several CRDs share it)`)
    .option('--group <group>', `API group of the ${resources}`)
    .option('--crd-name <name>', 'the CRD by name (databases.okt.dev)');
}
