import { defineConfig } from 'vitest/config';

// Three projects: pure code (fast), real processes and HTTP without a cluster, and the end-to-end
// suite against a real kube-apiserver + etcd started once per run. A fourth, the in-cluster suite,
// starts a real node (kubelet, containerd, kube-proxy): it changes the host's kernel settings and
// firewall rules while it runs, so it runs only where asked (OKT_IN_CLUSTER=1; .ci/run sets it).
// Every project: OKT_FC_RUNS and OKT_FC_SEED (docs/testing.md, "More seeds").
const FAST_CHECK_SETUP = 'test/fixtures/fast-check-setup.ts';
const inCluster = process.env.OKT_IN_CLUSTER === '1';
if (!inCluster && !process.env.VITEST_WORKER_ID) {
  process.stderr.write('okt: the in-cluster suite (a real node) is not run; run it with: OKT_IN_CLUSTER=1 npm test (as root; docs/testing.md: "okt in the cluster, on a real node")\n');
}

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          setupFiles: [FAST_CHECK_SETUP],
          include: ['test/unit/**/*.test.ts', 'test/property/**/*.test.ts'],
          // A property of 1,000 runs takes seconds, more on a loaded machine: speed is the benchmarks'
          // to judge, never a test's, so the limit only catches a hang.
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          setupFiles: [FAST_CHECK_SETUP],
          include: ['test/integration/**/*.test.ts'],
          testTimeout: 60_000,
          hookTimeout: 120_000,
        },
      },
      {
        test: {
          name: 'e2e',
          setupFiles: [FAST_CHECK_SETUP],
          include: ['test/e2e/**/*.test.ts'],
          globalSetup: ['test/e2e/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 600_000,
        },
      },
      ...(inCluster
        ? [
            {
              test: {
                name: 'in-cluster',
                setupFiles: [FAST_CHECK_SETUP],
                include: ['test/in-cluster/**/*.test.ts'],
                // One node per host: one file at a time, in a group of its own (not beside the CPU-heavy e2e files).
                fileParallelism: false,
                sequence: { groupOrder: 1 },
                testTimeout: 600_000,
                hookTimeout: 900_000,
              },
            },
          ]
        : []),
    ],
  },
});
