import { Option, type Command } from 'commander';
import type { CrdNames } from '../kube/crd.ts';
import { collectList } from './output.ts';
import { CliError, EXIT } from './errors.ts';

// What the API server accepts (apimachinery's validation), checked here so that a typo fails before
// anything is applied, naming the flag.
const DNS_SUBDOMAIN_WITH_DOT = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/;
const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;

export interface CrdNameFlags {
  group: string;
  version: string;
  kind: string;
  plural?: string;
  shortNames?: string[];
}

/** Adds --group, --version, --kind (required), --plural and --short-names to a command. */
export function addCrdNameFlags(command: Command): Command {
  return command
    .requiredOption('--group <group>', 'API group of the custom resource, a domain (okt.dev)')
    .requiredOption('--version <version>', 'API version (v1alpha1)')
    .requiredOption('--kind <kind>', 'kind, in CamelCase (Database)')
    .option('--plural <plural>', 'plural resource name (default: the kind in lower case plus "s")')
    .addOption(new Option('--short-names <names>', 'short names, comma-separated (odb)').argParser(collectList));
}

/** The CRD names from the flags, each checked: a bad one is a usage error naming the flag. */
export function crdNamesFromFlags(flags: CrdNameFlags): CrdNames {
  check('--group', flags.group, DNS_SUBDOMAIN_WITH_DOT, 'a lower-case domain with at least one dot, e.g. okt.dev');
  check('--version', flags.version, DNS_LABEL, 'a lower-case DNS label, e.g. v1alpha1');
  check('--kind', flags.kind, KIND, 'CamelCase letters and digits, e.g. Database');
  if (flags.plural !== undefined) check('--plural', flags.plural, DNS_LABEL, 'a lower-case DNS label, e.g. databases');
  for (const name of flags.shortNames ?? []) check('--short-names', name, DNS_LABEL, 'lower-case DNS labels, e.g. odb');
  return {
    group: flags.group,
    version: flags.version,
    kind: flags.kind,
    ...(flags.plural === undefined ? {} : { plural: flags.plural }),
    ...(flags.shortNames === undefined ? {} : { shortNames: flags.shortNames }),
  };
}

function check(flag: string, value: string, pattern: RegExp, expected: string): void {
  if (!pattern.test(value)) throw new CliError(EXIT.usage, `${flag}: "${value}" is not ${expected}`);
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
