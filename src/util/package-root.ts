// Where this okt's package.json is: a checkout's root, or node_modules/okt (its sources and its build, dist/, both below it).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The directory of the package.json named okt above this module. */
export function oktPackageRoot(): string {
  const from = import.meta.dirname;
  for (let dir = from; ; dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file) && (JSON.parse(readFileSync(file, 'utf8')) as { name?: string }).name === 'okt') return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json of okt above ${from}`);
  }
}
