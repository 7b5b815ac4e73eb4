import picocolors from 'picocolors';
import { stringify } from 'yaml';

export type Colors = ReturnType<typeof picocolors.createColors>;

/** Colours for a stream: on for a terminal unless NO_COLOR is set, or when FORCE_COLOR is. */
export function colorsFor(stream: NodeJS.WriteStream): Colors {
  const forced = process.env.FORCE_COLOR !== undefined && process.env.FORCE_COLOR !== '0';
  const enabled = forced || (stream.isTTY === true && process.env.NO_COLOR === undefined && process.env.TERM !== 'dumb');
  return picocolors.createColors(enabled);
}

/** Plain text: the colours the pure renderers take in tests and files. */
export const NO_COLORS: Colors = picocolors.createColors(false);

/** Kubernetes objects as one multi-document YAML stream (what `kubectl apply -f -` reads). */
export function toYamlDocuments(objects: readonly unknown[]): string {
  return objects.map((object) => stringify(object, { lineWidth: 0, aliasDuplicateObjects: false })).join('---\n');
}

/** A comma-separated or repeated flag value, accumulated: `--events A,B --events C`. */
export function collectList(value: string, previous: string[] = []): string[] {
  return [...previous, ...value.split(',').map((v) => v.trim()).filter((v) => v !== '')];
}

/** A repeatable flag's values, each kept whole: `--sidecar-url-allow A --sidecar-url-allow B`. */
export function collectRepeated(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}
