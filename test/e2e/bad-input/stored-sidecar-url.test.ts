// A sidecar URL okt never calls is refused by the API server (the CRD's pattern on spec.sidecar.url).
// A CR stored under an earlier okt's CRD, which took such a URL, keeps its meaning under today's
// operator and CRD: SidecarNotAllowed naming the field, nothing sent, and it moves once repaired. One
// no operator saw before today's CRD cannot be written at all on Kubernetes 1.20.2 (it validates the
// whole object on every write, status too): the operator says so in one line naming the field. From
// 1.30 a server ratchets: a write that leaves the refused field as it was is taken, and that CR is
// refused as the stored ones are.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { databaseGraph } from '../../../graphs/database.ts';
import { startOperator, type RunningOperator } from '../../../src/controller/lifecycle/index.ts';
import { createLogger } from '../../../src/controller/index.ts';
import { generateCrd } from '../../../src/kube/crd.ts';
import { compareVersions } from '../../../src/cluster/kubernetes-version.ts';
import { applyCrd, createNamespace, deleteCrd, e2eKubeConfig, e2eKubernetesVersion, expectHttpError, waitFor, type CrdManifest } from '../helpers/index.ts';
import { conditionOf, lifecycleObjects, startNoopSidecar, waitForObject, type LifecycleObject } from '../helpers/lifecycle.ts';

// A kind of its own: this file replaces its CRD, which other files must not see.
const STORED = { group: 'stored-url.okt.dev', version: 'v1alpha1', plural: 'databases', kind: 'Database' } as const;
const todaysCrd = generateCrd(databaseGraph, STORED) as unknown as CrdManifest;
/** The CRD okt generated before the pattern: spec.sidecar.url had format "uri" only. */
const earlierCrd = withoutSidecarUrlPattern(todaysCrd);

const kc = e2eKubeConfig();
const api = lifecycleObjects(kc, STORED);
let namespace: string;
let sidecar: Awaited<ReturnType<typeof startNoopSidecar>>;
let operator: RunningOperator | undefined;

function withoutSidecarUrlPattern(crd: CrdManifest): CrdManifest {
  const earlier = structuredClone(crd) as unknown as { spec: { versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: { sidecar: { properties: { url: Record<string, unknown> } } } } } } } }[] } };
  const url = earlier.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.sidecar.properties.url;
  delete url.pattern;
  delete url.description;
  return earlier as unknown as CrdManifest;
}

/** The operator's log lines, parsed. */
const logLines: Record<string, unknown>[] = [];
const logDestination = new Writable({
  write(chunk: Buffer, _encoding, done) {
    for (const line of chunk.toString().split('\n')) if (line) logLines.push(JSON.parse(line) as Record<string, unknown>);
    done();
  },
});

async function runOperator(): Promise<RunningOperator> {
  return startOperator({
    kubeConfig: kc,
    graph: databaseGraph,
    resource: STORED,
    namespace,
    sidecar: { url: sidecar.url, token: sidecar.token },
    logger: createLogger({ level: 'warn', destination: logDestination }),
  });
}

const notAllowed = (o: LifecycleObject) => conditionOf(o, 'Stalled')?.reason === 'SidecarNotAllowed';

beforeAll(async () => {
  await applyCrd(kc, earlierCrd);
  namespace = await createNamespace(kc, 'okt-stored-url');
  sidecar = await startNoopSidecar();
});

afterAll(async () => {
  await operator?.stop();
  await sidecar?.close();
  await deleteCrd(kc, `${STORED.plural}.${STORED.group}`);
});

describe('sidecar URLs okt never calls', () => {
  const stored = {
    'not-http': { url: 'xP7:', problem: 'not http or https' },
    'user-info': { url: '', problem: 'user info' },
  };

  test('stored under the earlier CRD: SidecarNotAllowed naming spec.sidecar.url, kept under today\'s CRD, which refuses such a URL at the door; one never seen gets one log line naming the field; repaired, each moves', async () => {
    stored['user-info'].url = sidecar.url.replace('http://', 'http://okt@');
    for (const [name, { url }] of Object.entries(stored)) await api.create(namespace, name, { desiredState: 'Running', onLeaf: 'Keep', sidecar: { url } });
    operator = await runOperator();
    for (const [name, { problem }] of Object.entries(stored)) {
      const db = await waitForObject(api, namespace, name, 'SidecarNotAllowed', notAllowed);
      expect(conditionOf(db, 'Stalled')?.message).toContain('spec.sidecar.url');
      expect(conditionOf(db, 'Stalled')?.message).toContain(problem);
      expect(db.status?.state).toBe('Start');
    }
    const before = await Promise.all(Object.keys(stored).map((name) => api.get(namespace, name)));
    // Stored while no operator runs, so under the earlier CRD with no status at all.
    await operator.stop();
    await api.create(namespace, 'unseen', { desiredState: 'Running', onLeaf: 'Keep', sidecar: { url: 'xP7:' } });

    await applyCrd(kc, todaysCrd);
    // The server takes a new schema a moment after it is Established: probe until it refuses.
    const refusal = await waitFor('today\'s CRD to refuse "xP7:"', async () => {
      const created = await api.create(namespace, `probe-${Date.now()}`, { desiredState: 'Running', sidecar: { url: 'xP7:' } }).then(() => undefined, (error: unknown) => error);
      return created === undefined ? undefined : expectHttpError(Promise.reject(created));
    });
    expect(refusal.status).toBe(422);
    expect(refusal.message).toContain('spec.sidecar.url');
    const userInfo = await expectHttpError(api.create(namespace, 'user-info-new', { desiredState: 'Running', sidecar: { url: stored['user-info'].url } }));
    expect(userInfo.message).toContain('spec.sidecar.url');

    // A new operator reads every CR again: the stored ones keep their meaning, their status untouched.
    const restartedAt = logLines.length;
    operator = await runOperator();
    if (compareVersions(e2eKubernetesVersion(), '1.30.0') >= 0) {
      // Kubernetes 1.35.4 and 1.37.2 (servers from 1.30 on ratchet CRD validation): a write that leaves the refused
      // field as it was is taken, so the unseen CR gets the stored ones' condition, naming the field.
      const unseen = await waitForObject(api, namespace, 'unseen', 'SidecarNotAllowed', notAllowed);
      expect(conditionOf(unseen, 'Stalled')?.message).toContain('spec.sidecar.url');
    } else {
      // Kubernetes 1.20.2: every write of the unseen CR is refused; the operator says so in one line.
      const unseenLine = await waitFor('the operator\'s line about unseen', async () => logLines.find((line) => line.key === `${namespace}/unseen`));
      expect(unseenLine.msg).toContain('spec.sidecar.url in body should match');
      expect(unseenLine.msg).toContain('edit the fields named');
      expect(unseenLine).not.toHaveProperty('err');
    }
    // The stored ones were listed with it; 2 s is many reconciles here, for a write they must not get.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    for (const [i, name] of Object.keys(stored).entries()) {
      const now = await api.get(namespace, name);
      expect(now.status, name).toEqual(before[i]!.status);
      expect(now.metadata.finalizers ?? [], `${name}: no finalizer while refused`).toEqual([]);
    }
    const storedErrors = logLines.slice(restartedAt).filter((line) => line.level === 'error' && Object.keys(stored).some((name) => line.key === `${namespace}/${name}`));
    expect(storedErrors, 'no write tried for the stored ones').toEqual([]);

    // Repaired, each moves on.
    for (const name of [...Object.keys(stored), 'unseen']) {
      await api.patchSpec(namespace, name, { sidecar: { url: sidecar.url } });
      await waitForObject(api, namespace, name, 'Ready at Running', (o) => o.status?.state === 'Running' && conditionOf(o, 'Ready')?.status === 'True');
    }
  });
});
