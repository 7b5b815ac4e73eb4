// The bearer token of the sidecar protocol, read from a file (a mounted Secret): one reader for the
// sidecar, which checks requests against it, and the operator, which sends it.
import { readFileSync } from 'node:fs';

export class SidecarTokenError extends Error {
  override name = 'SidecarTokenError';
}

/** The token in `file`, trimmed; throws SidecarTokenError naming the file when it cannot be read or is shorter than `minLength`. */
export function readTokenFile(file: string, minLength = 1): string {
  let token: string;
  try {
    token = readFileSync(file, 'utf8').trim();
  } catch (error) {
    throw new SidecarTokenError(`cannot read the sidecar token file ${file}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  if (token.length < minLength) {
    throw new SidecarTokenError(minLength === 1 ? `the sidecar token file ${file} is empty` : `the token in the sidecar token file ${file} is shorter than ${minLength} characters`);
  }
  return token;
}
