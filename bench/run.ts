// The benchmark runner: `npm run bench` runs every area, `npm run bench -- engine` only that one.
// Each area is a module bench/<area>.bench.ts exporting run(): it prints its own table (with ratios
// against a baseline measured in the same run) and returns flat figures by key, merged here into
// bench/results.json (one flat JSON object; keys of areas not run this time are kept).
import { readFile, writeFile } from 'node:fs/promises';

/** Every benchmark area; add yours here. */
const AREAS = ['engine', 'kube-client', 'sidecar', 'events', 'e2e', 'objects'] as const;

const RESULTS = new URL('./results.json', import.meta.url);

async function main(): Promise<void> {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((area) => !(AREAS as readonly string[]).includes(area));
  if (unknown.length > 0) {
    throw new Error(`unknown benchmark area(s): ${unknown.join(', ')}; known: ${AREAS.join(', ')}`);
  }
  const areas = asked.length > 0 ? asked : AREAS;
  const figures: Record<string, number> = {};
  for (const area of areas) {
    console.log(`\n## ${area}\n`);
    const module = (await import(`./${area}.bench.ts`)) as { run(): Promise<Record<string, number>> };
    Object.assign(figures, await module.run());
  }
  const previous = await readFile(RESULTS, 'utf8').then((text) => JSON.parse(text) as Record<string, number>, () => ({}));
  const merged = { ...previous, ...figures };
  const sorted = Object.fromEntries(Object.keys(merged).sort().map((key) => [key, merged[key]]));
  await writeFile(RESULTS, `${JSON.stringify(sorted, null, 2)}\n`);
  console.log(`\nwrote ${Object.keys(figures).length} figures to bench/results.json`);
}

await main();
