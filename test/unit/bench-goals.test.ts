import { describe, expect, it } from 'vitest';
import { operatorRequests, parseRequestCounts, requestDelta } from '../../bench/api-requests.ts';
import { E2E_GOALS, goalMet, goalTable, latencyFloorMs, writeBoundPerSecond } from '../../bench/goals.ts';
import { medianRound } from '../../bench/e2e.bench.ts';

describe('the e2e goals (bench/goals.ts)', () => {
  it('a goal is met at its bound and on its side of it, never by a figure not measured', () => {
    const atLeast = { key: 'k', op: '>=', bound: 0.9 } as const;
    const atMost = { key: 'k', op: '<=', bound: 1.3 } as const;
    expect([0.9, 1.2].map((x) => goalMet(atLeast, x))).toEqual([true, true]);
    expect(goalMet(atLeast, 0.899)).toBe(false);
    expect([1.3, 0.4].map((x) => goalMet(atMost, x))).toEqual([true, true]);
    expect(goalMet(atMost, 1.31)).toBe(false);
    expect([undefined, NaN].map((x) => goalMet(atLeast, x))).toEqual([false, false]);
    expect([undefined, NaN].map((x) => goalMet(atMost, x))).toEqual([false, false]);
  });

  it('the table has one row per goal, in order, with its figure, its bound and whether it is met', () => {
    const rows = goalTable(E2E_GOALS, { 'e2e.okt_run_vs_cr_peer_ratio': 0.55, 'e2e.http_requests_vs_cr_peer_delta': -0.2 });
    expect(rows.map((r) => r.key)).toEqual(E2E_GOALS.map((g) => g.key));
    expect(rows[0]).toEqual({ key: 'e2e.okt_run_vs_cr_peer_ratio', measured: 0.55, goal: '>= 0.9', met: 'no' });
    expect(rows.find((r) => r.key === 'e2e.http_requests_vs_cr_peer_delta')).toEqual({ key: 'e2e.http_requests_vs_cr_peer_delta', measured: -0.2, goal: '<= 0.5', met: 'yes' });
    expect(rows.find((r) => r.key === 'e2e.latency_p99_vs_floor_ratio')).toMatchObject({ measured: 'not measured', met: 'no' });
  });

  it('the absolute p99 and the minimal-CR ratio are no goals any more', () => {
    expect(E2E_GOALS.map((g) => g.key)).not.toContain('events.latency_p99_ms');
    expect(E2E_GOALS.map((g) => g.key)).not.toContain('e2e.multihop_vs_minimal_raw_ratio');
  });

  it('the write bound: half a spec patch and one status update per transition', () => {
    // 200 patches/s and 300 updates/s: a transition costs 2.5 ms + 3.33 ms.
    expect(writeBoundPerSecond(200, 300)).toBeCloseTo(1 / (0.0025 + 1 / 300), 9);
    expect(writeBoundPerSecond(100, 100)).toBeCloseTo(66.667, 3);
  });

  it('the latency floor: N spec patches and N status updates at the raw rates, in ms', () => {
    expect(latencyFloorMs(100, 200, 250)).toBeCloseTo(500 + 400, 9);
  });
});

describe('API requests as the API server counts them (bench/api-requests.ts)', () => {
  const metrics = (n: { put: number; patch: number; watch: number; lease: number; list?: number }) => [
    '# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
    '# TYPE apiserver_request_total counter',
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="okt.dev",resource="databases",scope="resource",subresource="status",verb="UPDATE",version="v1alpha1"} ${n.put}`,
    `apiserver_request_total{code="409",component="apiserver",dry_run="",group="okt.dev",resource="databases",scope="resource",subresource="status",verb="UPDATE",version="v1alpha1"} 2`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="okt.dev",resource="databases",scope="resource",subresource="",verb="PATCH",version="v1alpha1"} ${n.patch}`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="okt.dev",resource="databases",scope="namespace",subresource="",verb="WATCH",version="v1alpha1"} ${n.watch}`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="okt.dev",resource="databases",scope="namespace",subresource="",verb="LIST",version="v1alpha1"} ${n.list ?? 1}`,
    `apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} ${n.lease}`,
    'apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/metrics",verb="GET",version=""} 40',
    'apiserver_request_duration_seconds_count{group="okt.dev",resource="databases",verb="UPDATE"} 99',
  ].join('\n');

  it('sums each verb and resource over codes, and leaves out non-resource requests', () => {
    expect(parseRequestCounts(metrics({ put: 10, patch: 5, watch: 1, lease: 3 }))).toEqual({
      'UPDATE okt.dev/databases/status': 12,
      'PATCH okt.dev/databases': 5,
      'WATCH okt.dev/databases': 1,
      'LIST okt.dev/databases': 1,
      'PUT coordination.k8s.io/leases': 3,
    });
  });

  it("an operator's requests: its group's, watches and the bench's spec edits left out", () => {
    const before = parseRequestCounts(metrics({ put: 10, patch: 5, watch: 1, lease: 3 }));
    const after = parseRequestCounts(metrics({ put: 110, patch: 105, watch: 4, lease: 9, list: 2 }));
    const delta = requestDelta(before, after);
    expect(delta).toEqual({ 'UPDATE okt.dev/databases/status': 100, 'PATCH okt.dev/databases': 100, 'WATCH okt.dev/databases': 3, 'LIST okt.dev/databases': 1, 'PUT coordination.k8s.io/leases': 6 });
    // 100 status updates and one LIST of the operator; the 100 PATCHes are the bench's spec edits.
    expect(operatorRequests(delta, 'okt.dev', 100)).toBe(101);
  });
});

describe('medianRound', () => {
  it('takes the round of median transitions/s (of an even count, the upper middle one)', () => {
    expect(medianRound([{ perSecond: 3 }, { perSecond: 1 }, { perSecond: 2 }])).toEqual({ perSecond: 2 });
    expect(medianRound([{ perSecond: 4 }, { perSecond: 1 }, { perSecond: 2 }, { perSecond: 3 }])).toEqual({ perSecond: 3 });
  });
});
