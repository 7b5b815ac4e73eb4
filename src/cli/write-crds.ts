// `npm run crds`: rewrites crds/<graph>.yaml for every bundled graph (test/unit/crds.test.ts checks them).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { BUNDLED_GRAPHS } from './bundled.ts';
import { bundledCrdPath, bundledCrdYaml } from './crd.ts';

const root = path.resolve(import.meta.dirname, '../..');
for (const bundled of BUNDLED_GRAPHS) {
  writeFileSync(path.join(root, bundledCrdPath(bundled)), bundledCrdYaml(bundled));
  process.stdout.write(`wrote ${bundledCrdPath(bundled)}\n`);
}
