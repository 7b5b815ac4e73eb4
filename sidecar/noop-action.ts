// A module action that does nothing and raises nothing: the node rests (see sidecar/noop.ts).
export default function noop(): string[] {
  return [];
}
