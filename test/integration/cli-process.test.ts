import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { okt } from '../fixtures/okt-process.ts';
import { moduleReleaseVersions } from '../../src/cluster/kubernetes-modules.ts';

// The documented exit codes and one- or two-line errors, from the real `okt` process (no cluster).

const dir = mkdtempSync(path.join(tmpdir(), 'okt-cli-process-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const noStack = (text: string) => expect(text).not.toMatch(/\n\s+at /);

describe.concurrent('okt graph', { timeout: 60_000 }, () => {
  it('validate: 0 and OK for a good graph, 1 and every problem for a bad one', async () => {
    const good = await okt(['graph', 'validate', 'graphs/reconciliation.ts']);
    expect(good).toMatchObject({ code: 0, stderr: '' });
    expect(good.stdout).toBe('OK: graph "reconciliation" (graphs/reconciliation.ts, export reconciliationGraph): 9 nodes, entry CRChecker, leaves End, revision 9c3ac743d22ab55c\n');

    const file = path.join(dir, 'bad.yaml');
    writeFileSync(file, 'name: bad\nentry: A\nnodes:\n  A: { children: [B, C] }\n  B: {}\n');
    const bad = await okt(['graph', 'validate', file]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toMatch(/^okt graph validate: .*bad\.yaml: graph "bad" is invalid/);
    expect(bad.stderr).toMatch(/\n- .*C/);
    noStack(bad.stderr);
  });

  it('validate: a graph whose actions can drive a cycle is valid (0, OK) with one warning line on stderr', async () => {
    const looping = await okt(['graph', 'validate', 'test/fixtures/cycle-graphs.ts', '--export', 'provisioningLoopGraph']);
    expect(looping.code).toBe(0);
    expect(looping.stdout).toMatch(/^OK: graph "provisioning" /);
    expect(looping.stderr).toBe('warning: graph "provisioning": its actions\' events can drive the cycle Provisioning > Failed > Provisioning with no spec edit; the operator brakes a resource that turns it fast (docs/operator.md#the-cycle-brake)\n');
  });

  it('simulate: 0 when the desired node is reached, 1 when it cannot be, 2 for an unknown node', async () => {
    const reached = await okt(['graph', 'simulate', 'graphs/database.ts', '--desired', 'Servicing']);
    expect(reached.code).toBe(0);
    expect(reached.stdout).toContain('path: >Start>Running>Servicing\n');
    const unreachable = await okt(['graph', 'simulate', 'graphs/database.ts', '--from', 'End', '--desired', 'Running']);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stdout).toContain('Running cannot be reached from End');
    const unknown = await okt(['graph', 'simulate', 'graphs/database.ts', '--desired', 'Nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe('okt graph simulate: --desired: graph "database" has no node "Nope"\n  Its nodes: Start, Running, Servicing, Stopping, End.\n');
  });

  it('render: the chosen format; 2 for a bad format, a missing file or a missing subcommand', async () => {
    const dot = await okt(['graph', 'render', 'graphs/database.ts', '--format', 'dot']);
    expect(dot.code).toBe(0);
    expect(dot.stdout).toMatch(/^digraph "database" \{/);
    const svg = await okt(['graph', 'render', 'graphs/database.ts', '--format', 'svg']);
    expect(svg.code).toBe(2);
    expect(svg.stderr).toMatch(/error: option .*--format.* argument 'svg' is invalid/);
    const missing = await okt(['graph', 'render', 'graphs/missing.ts']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('okt graph render: graphs/missing.ts: no such file\n  Give the path of a graph module (.ts/.js) or a JSON/YAML graph.\n');
    expect((await okt(['graph'])).code).toBe(2);
  });
});

describe.concurrent('okt crd and okt manifests', { timeout: 60_000 }, () => {
  it('reject a bad name naming the flag, with exit code 2', async () => {
    const bad = await okt(['crd', 'graphs/database.ts', '--group', 'okt', '--version', 'v1', '--kind', 'Database']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('okt crd: --group: "okt" is not a lower-case domain with at least one dot, e.g. okt.dev\n');
    const missing = await okt(['manifests', 'graphs/database.ts', '--group', 'okt.dev', '--version', 'v1']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('okt manifests: --kind: missing: the kind of the custom resources of FILE graphs/database.ts\n');
    const replicas = await okt(['manifests', 'graphs/database.ts', '--group', 'okt.dev', '--version', 'v1', '--kind', 'Database', '--replicas', '0']);
    expect(replicas.code).toBe(2);
    expect(replicas.stderr).toBe('okt manifests: --replicas: expected a positive integer, got "0"\n');
    const alias = await okt(['manifests', 'graphs/database.ts', '--group', 'okt.dev', '--version', 'v1', '--kind', 'Database', '--host-alias', 'postgres.a.svc:10.0.0.1']);
    expect(alias.code).toBe(2);
    expect(alias.stderr).toBe('okt manifests: --host-alias: "postgres.a.svc:10.0.0.1" is not NAME=IP (a host name, then an IPv4 or IPv6 address)\n');
  });

  it('manifests of a graph that declares objects runs the operator on the graph module in the image (--graph-module), else refuses naming the flag', async () => {
    const flags = ['manifests', 'test/fixtures/ready-graph.ts', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind', 'Vault'];
    const missing = await okt(flags);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('okt manifests: --graph-module: missing: graph "vault" declares objects, whose render functions the operator must load from its image: give the graph module\'s path in the image (okt run --graph PATH), e.g. --graph-module /app/graph.ts\n');
    const printed = await okt([...flags, '--graph-module', '/app/graph.ts']);
    expect(printed.code).toBe(0);
    const docs = parseAllDocuments(printed.stdout).map((d) => d.toJS() as { kind?: string; spec?: any } | null).filter((d) => d !== null);
    expect(docs.map((d) => d.kind)).not.toContain('ConfigMap');
    const operator = docs.find((d) => d.kind === 'Deployment')!.spec.template.spec;
    expect(operator.containers[0].args.slice(0, 3)).toEqual(['run', '--graph', '/app/graph.ts']);
    expect(operator.volumes.map((v: { name: string }) => v.name)).toEqual(['sidecar-token']);
    const several = await okt(['manifests', '--group', 'okt.dev', '--version', 'v1', '--kind-graph', 'Database=graphs/database.ts', '--kind-graph', 'Reconciliation=graphs/reconciliation.ts', '--graph-module', '/app/graph.ts']);
    expect(several.code).toBe(2);
    expect(several.stderr).toBe('okt manifests: --graph-module: serves one kind (give FILE and --kind, not --kind-graph)\n');
  });

  it('crd prints the same CRD as the committed file', async () => {
    const printed = await okt(['crd', 'graphs/database.ts', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind', 'Database', '--short-names', 'odb']);
    expect(printed.code).toBe(0);
    const { readFileSync } = await import('node:fs');
    expect(readFileSync('crds/database.yaml', 'utf8')).toContain(printed.stdout);
  });
});

describe.concurrent('okt run', { timeout: 60_000 }, () => {
  it('says every problem of its flags at once, each naming its flag, with exit code 2 and before any connection', async () => {
    const bad = await okt(
      ['run', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind-graph', 'Database=graphs/database.ts', '--kind-graph', 'Database=graphs/reconciliation.ts',
        '--kind-graph', 'Reconciliation', '--workers', '0', '--poll-interval', 'soon'],
      { env: { KUBECONFIG: path.join(dir, 'no-such-kubeconfig') } },
    );
    expect(bad.code).toBe(2);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toBe([
      'okt run: 4 problems:',
      '- --workers: expected an integer >= 1, got "0"',
      '- --kind-graph "Reconciliation": not KIND[:PLURAL]=FILE[#EXPORT], e.g. Database=graphs/database.ts',
      '- --kind-graph: kind "Database" is given twice',
      '- --poll-interval: expected a positive number of seconds, got "soon"',
      '',
    ].join('\n'));
  });

  it('one problem is said as before: the line naming the flag, and its hint', async () => {
    const missing = await okt(['run', '--graph', 'graphs/missing.ts', '--group', 'okt.dev', '--version', 'v1alpha1', '--kind', 'Database'], { env: { KUBECONFIG: path.join(dir, 'no-such-kubeconfig') } });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('okt run: graphs/missing.ts: no such file\n  Give the path of a graph module (.ts/.js) or a JSON/YAML graph.\n');
  });
});

describe.concurrent('okt cluster --kubernetes', { timeout: 60_000 }, () => {
  // Its own cache: nothing here may build, start or find what another run cached.
  const env = { XDG_CACHE_HOME: path.join(dir, 'cache') };
  // The releases pinned in k8s/, as the message lists them.
  const provisioned = moduleReleaseVersions().join(', ');

  it('refuses a release it cannot provision in one line naming those it can, before building anything', async () => {
    for (const command of ['provision', 'up']) {
      const done = await okt(['cluster', command, '--kubernetes', '1.36'], { env });
      expect(done).toMatchObject({ code: 1, stdout: '', stderr: `okt cluster: --kubernetes: okt cannot provision Kubernetes 1.36; it provisions ${provisioned}\n` });
    }
    const notAVersion = await okt(['cluster', 'provision', '--kubernetes', 'latest'], { env });
    expect(notAVersion).toMatchObject({ code: 1, stderr: 'okt cluster: --kubernetes: "latest" is not a Kubernetes version (write MAJOR.MINOR or MAJOR.MINOR.PATCH, e.g. 1.37 or 1.37.2)\n' });
  });

  it('names OKT_KUBERNETES_VERSION when that is what names an unknown release', async () => {
    const done = await okt(['cluster', 'provision'], { env: { ...env, OKT_KUBERNETES_VERSION: '1.19' } });
    expect(done).toMatchObject({ code: 1, stderr: `okt cluster: OKT_KUBERNETES_VERSION: okt cannot provision Kubernetes 1.19; it provisions ${provisioned}\n` });
  });

  it('provisions 1.35, the oldest release okt claims, as a control plane alone: --node is refused in one line, before building anything', async () => {
    for (const command of ['provision', 'up']) {
      const done = await okt(['cluster', command, '--kubernetes', '1.35', '--node'], { env });
      expect(done).toMatchObject({
        code: 1,
        stdout: '',
        stderr: 'okt cluster: Kubernetes 1.35.4 is provisioned as a control plane alone (its k8s/v1.35.4/tools.go names no node commands); a node (--node) runs 1.37.2\n',
      });
    }
  });
});
