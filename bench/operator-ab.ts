// okt run's CPU per transition, one checkout against another: each side an `okt run` process of its
// checkout (its bin/okt.js and graphs/database.ts) on the stage of bench/okt-run-stage.ts (one control
// plane started here, one no-op sidecar in this process), in a fresh namespace per walk, warmed up as
// the e2e bench's like-for-like walk is (OKT_BENCH_E2E_WARM_UP CRs, default 2000, created with the
// COUNT measured and walked Running -> End first, then settled), then COUNT CRs walked Running -> End
// (okt run as that walk runs it: OKT_BENCH_E2E_WORKERS, OKT_BENCH_E2E_STATUS_FORMAT), readiness seen
// by an informer of this process; the process's CPU (utime + stime from /proc) per transition of that
// walk. The sides alternate, the first of each pair turned each pair; prints every pair's B/A and the
// median of them. A tool to judge a cut that one e2e run cannot, not a goal: run a checkout against
// itself first, the spread of its pairs is the resolution (docs/benchmarks.md: about 10% on a 2-core
// VM). Each checkout needs its node_modules. OKT_AB_A_NODE_FLAGS and OKT_AB_B_NODE_FLAGS give a side's
// process Node's and V8's flags (a checkout against itself with a flag on one side judges that flag).
//   node bench/operator-ab.ts A_DIR B_DIR [PAIRS (default 6)] [COUNT (default 1000)]
import { moveAll, MULTI_HOP, RESOURCE, WARM_UP } from './e2e.bench.ts';
import { startOktRunStage, startWarmOktRun } from './okt-run-stage.ts';
import { median } from './median.ts';

const [aDir, bDir, pairsArg, countArg] = process.argv.slice(2);
if (aDir === undefined || bDir === undefined) throw new Error('usage: node bench/operator-ab.ts A_DIR B_DIR [PAIRS] [COUNT]');
const PAIRS = Number(pairsArg ?? 6);
const COUNT = Number(countArg ?? 1000);
/** Node's and V8's flags for each side's process (OKT_AB_A_NODE_FLAGS, OKT_AB_B_NODE_FLAGS, space-separated): to judge a runtime flag on one checkout. */
const NODE_FLAGS = { a: nodeFlags(process.env.OKT_AB_A_NODE_FLAGS), b: nodeFlags(process.env.OKT_AB_B_NODE_FLAGS) };

const stage = await startOktRunStage();
try {
  console.log(`okt's finalizer policy ${stage.policy ? 'in force' : 'not served by this release'}; ${COUNT} CRs walked Running -> End after a warm-up of ${WARM_UP}`);

  /** CPU ms per transition of one side's measured walk, in a fresh namespace and process. */
  const walk = async (side: 'a' | 'b', pair: number): Promise<number> => {
    const namespace = `ab-${side}-${pair}`;
    const run = await startWarmOktRun(stage, side === 'a' ? aDir : bDir, namespace, COUNT, { nodeFlags: NODE_FLAGS[side] });
    try {
      const before = run.cpu();
      await moveAll(stage.raw, run.tracker, RESOURCE, namespace, run.names, 'End', run.timeoutMs);
      return ((run.cpu() - before) * 1000) / (COUNT * MULTI_HOP.transitions);
    } finally {
      await run.stop();
    }
  };

  if (NODE_FLAGS.a.length + NODE_FLAGS.b.length > 0) console.log(`node flags: A ${NODE_FLAGS.a.join(' ') || '(none)'}, B ${NODE_FLAGS.b.join(' ') || '(none)'}`);
  const ratios: number[] = [];
  for (let pair = 0; pair < PAIRS; pair++) {
    const first = pair % 2 === 0 ? 'a' : 'b';
    const figures = { a: NaN, b: NaN };
    figures[first] = await walk(first, pair);
    const second = first === 'a' ? 'b' : 'a';
    figures[second] = await walk(second, pair);
    ratios.push(figures.b / figures.a);
    console.log(`pair ${pair}: A ${figures.a.toFixed(3)}, B ${figures.b.toFixed(3)} ms per transition; B/A ${(figures.b / figures.a).toFixed(3)}`);
  }
  console.log(`B/A, the median of ${PAIRS} pairs: ${median(ratios).toFixed(3)} (pairs ${Math.min(...ratios).toFixed(3)}-${Math.max(...ratios).toFixed(3)})`);
} finally {
  await stage.close();
}

function nodeFlags(value: string | undefined): string[] {
  return (value ?? '').split(' ').filter((flag) => flag !== '');
}
