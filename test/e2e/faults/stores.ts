// The object faults of a fault-injection run: CRs of the store graph (test/fixtures/store-graph.ts)
// walk Running <-> Servicing beside the databases, under an `okt run` child process of their own (so a
// kill aimed at an apply lands on the operator that applies), making and pruning their objects at
// every move; the faults delete an object they own, kill that operator between an apply and its status
// write, fight okt over a field with another field manager, refuse applies by an admission policy for a
// while, and send a CR to a node whose Job is never ready. Nothing is left over (checks.ts).
import { AdmissionregistrationV1Api, BatchV1Api, CoreV1Api, Watch, type KubeConfig, type V1Service } from '@kubernetes/client-node';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'vitest';
import { OBJECT_LABELS } from '../../../src/graph/index.ts';
import { FIGHT_REPAIRS } from '../../../src/controller/lifecycle/objects/owned.ts';
import { startNoopSidecar, type NoopSidecar } from '../../../sidecar/noop.ts';
import { storeGraph } from '../../fixtures/store-graph.ts';
import { applyGraphCrd } from '../helpers/crd.ts';
import { httpStatusOf, kubectl } from '../helpers/cluster.ts';
import { conditionOf, lifecycleObjects, type LifecycleObject } from '../helpers/lifecycle.ts';
import { killHard, spawnOperator } from '../helpers/operator-process.ts';
import { checkLeftAfterDeletion, checkNoOrphans, type LabelledObject } from './checks.ts';

export const STORES = { group: 'okt.dev', version: 'v1alpha1', plural: 'stores', kind: 'Store' } as const;
const STORE_GRAPH_FILE = fileURLToPath(new URL('../../fixtures/store-graph.ts', import.meta.url));
const STORE_CRS = 5;
/** The other field manager of a fight, and what it writes into the field okt applies. */
const FIGHTER = 'fighter';
/** What the admission policy says when it refuses an object: the CR's condition must carry it. */
const REFUSAL = 'okt-faults: config maps are refused for a while';
/** The walk's moves: each makes the one node's objects and prunes the other's. */
const WALKED = ['Running', 'Servicing'] as const;
const WAIT_MS = 40_000;

export function installStoreCrd(kc: KubeConfig): Promise<unknown> {
  return applyGraphCrd(kc, storeGraph, STORES);
}

/** What the object faults of a run did, for the report. */
export interface StoreTally {
  storeCrs: number;
  /** Owned objects deleted by a fault and made again. */
  objectsRemade: number;
  /** Kills aimed at an apply, and of those the ones that landed before the status write recording it. */
  midApplyKills: number;
  killsBeforeStatusWrite: number;
  /** okt's put-backs of a fought field before it said Contested. */
  fightPutBacks: number;
  refusedApplies: number;
  neverReady: number;
  /** Of those, the ones a read saw waiting at Upgrading (Ready=False naming the Job) before its deadline. */
  neverReadySeenWaiting: number;
  /** Objects checked for orphans and duplicates once settled; kept (disowned) ones left after deletion. */
  ownedObjects: number;
  keptObjects: number;
}

function settled(cr: LifecycleObject): boolean {
  return cr.status?.state === cr.spec.desiredState && conditionOf(cr, 'Ready')?.status === 'True' && cr.status?.observedGeneration === cr.metadata.generation;
}

export class StoresUnderTest {
  readonly tally: StoreTally = { ...NO_STORES, storeCrs: STORE_CRS };
  readonly #kc: KubeConfig;
  readonly #namespace: string;
  readonly #sidecar: NoopSidecar;
  readonly #names = Array.from({ length: STORE_CRS }, (_, i) => `store-${i}`);
  readonly #stores;
  readonly #core: CoreV1Api;
  /** CRs the walker leaves where they are: one sent to its never-ready node. */
  readonly #held = new Set<string>();
  /** The CR whose field was fought over: Contested for the rest of the run, unless a restart since forgot the fight. */
  #fought: string | undefined;
  #operator: ReturnType<typeof spawnOperator>;
  #logs: string[] = [];
  #walking: Promise<void> | undefined;
  #stopping = false;
  #turn = Promise.resolve();

  private constructor(kc: KubeConfig, namespace: string, sidecar: NoopSidecar) {
    this.#kc = kc;
    this.#namespace = namespace;
    this.#sidecar = sidecar;
    this.#stores = lifecycleObjects(kc, STORES);
    this.#core = kc.makeApiClient(CoreV1Api);
    this.#operator = this.#spawn();
  }

  static async start(kc: KubeConfig, namespace: string): Promise<StoresUnderTest> {
    const sidecar = await startNoopSidecar({ graph: storeGraph, maxActiveOperations: 16 });
    const stores = new StoresUnderTest(kc, namespace, sidecar);
    await Promise.all(stores.#names.map((name) => stores.#stores.create(namespace, name, { desiredState: 'Running', onLeaf: 'Keep' })));
    stores.#walking = stores.#walk();
    return stores;
  }

  /** The object faults take turns: they share one operator, whose kill would end a fight's memory. */
  inTurn(fault: (stores: StoresUnderTest) => Promise<void>): Promise<void> {
    return (this.#turn = this.#turn.then(() => fault(this)));
  }

  /** Deletes the Service a CR owns (the next CR each time): it is made again, a new object with okt's labels. */
  async deleteOwned(): Promise<void> {
    const name = this.#names[this.tally.objectsRemade % STORE_CRS]!;
    // Made first (early in a run the operator may not have got to it yet).
    let before: V1Service | undefined;
    await this.#waitFor(`Service ${name} made`, async () => (before = await this.#readService(name)) !== undefined);
    await this.#core.deleteNamespacedService({ namespace: this.#namespace, name });
    await this.#waitFor(`Service ${name}, deleted, to be made again`, async () => {
      const again = await this.#readService(name);
      return again !== undefined && again.metadata?.uid !== before!.metadata?.uid && again.metadata?.labels?.[OBJECT_LABELS.objectId] === 'service';
    });
    this.tally.objectsRemade += 1;
  }

  /**
   * kill -9 the operator the moment a watch on the ConfigMaps it makes sees it create one (a CR
   * entering Running): before the status write that records the apply, mostly. The object is in its
   * CR's inventory already (recorded before the create); the restart finishes the work.
   */
  async killMidApply(restartAfterMs: number): Promise<void> {
    const path = `/api/v1/namespaces/${this.#namespace}/configmaps`;
    const labelSelector = `${OBJECT_LABELS.graph}=${storeGraph.name},${OBJECT_LABELS.objectId}=config`;
    const { metadata } = await this.#core.listNamespacedConfigMap({ namespace: this.#namespace, labelSelector });
    let seen: (created: { metadata: { name: string; labels: Record<string, string> } }) => void = () => {};
    const created = new Promise<{ metadata: { name: string; labels: Record<string, string> } }>((resolve) => (seen = resolve));
    const watch = await new Watch(this.#kc).watch(path, { labelSelector, resourceVersion: metadata?.resourceVersion ?? '' }, (type, object) => {
      if (type === 'ADDED') seen(object);
    }, () => {});
    const hit = await Promise.race([created, sleep(WAIT_MS).then(() => undefined)]);
    await killHard(this.#operator);
    watch.abort();
    expect(hit, `a ConfigMap created by the store operator within ${WAIT_MS / 1000} s`).toBeDefined();
    this.tally.midApplyKills += 1;
    const owner = (await this.#list()).find((cr) => cr.metadata.uid === hit!.metadata.labels[OBJECT_LABELS.ownerUid]);
    const entry = owner?.status?.objects?.find((e) => e.kind === 'ConfigMap' && e.name === hit!.metadata.name);
    expect(entry, `ConfigMap ${hit!.metadata.name}, just created, in its CR's inventory when the operator was killed`).toBeDefined();
    if (entry?.hash === undefined) this.tally.killsBeforeStatusWrite += 1;
    await sleep(restartAfterMs);
    this.#operator = this.#spawn();
    // The next fault begins once the new operator runs (it has moved every CR the walk moves): a fault
    // on an operator still starting would test its start, not the fault.
    const at = new Map((await this.#list()).map((cr) => [cr.metadata.name, cr.status?.transition ?? 0]));
    await this.#waitFor('the restarted store operator to move every walking CR', async () =>
      (await this.#list()).every((cr) => this.#held.has(cr.metadata.name) || (cr.status?.transition ?? 0) > at.get(cr.metadata.name)!));
  }

  /**
   * Another field manager (the real kubectl, server-side apply, forced) writes back `data.mode` of a
   * CR's settings each time okt puts it back: okt puts it back at most FIGHT_REPAIRS times, then says
   * Contested naming the object and the manager, and leaves it as written for `handsOffMs` (and longer).
   */
  async fight(handsOffMs: number): Promise<void> {
    const cr = this.#names.find((name) => !this.#held.has(name))!;
    this.#fought = cr;
    const name = `${cr}-settings`;
    // Applied by okt first (early in a run it may not be yet): the fight is over what okt made.
    await this.#waitFor(`${name} applied by okt`, async () => {
      const entry = (await this.#stores.get(this.#namespace, cr)).status?.objects?.find((e) => e.id === 'settings');
      return entry?.hash !== undefined;
    });
    const write = () => kubectl(['apply', '--server-side', `--field-manager=${FIGHTER}`, '--force-conflicts', '-n', this.#namespace, '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { mode: FIGHTER } }));
    await write();
    let putBacks = 0;
    let message: string | undefined;
    await this.#waitFor(`${cr}: Contested, its settings fought over by "${FIGHTER}"`, async () => {
      const live = await this.#core.readNamespacedConfigMap({ namespace: this.#namespace, name });
      if (live.data?.mode !== FIGHTER) {
        putBacks += 1;
        await write();
      }
      const condition = conditionOf(await this.#stores.get(this.#namespace, cr), 'ObjectsApplied');
      message = condition?.reason === 'Contested' ? condition.message : undefined;
      return message !== undefined;
    });
    expect(message, `${cr}: the Contested condition`).toContain(`ConfigMap ${name} (object "settings"): field manager "${FIGHTER}" changes fields okt applies each time okt puts it back; left as it is until `);
    expect(putBacks, `${name}: okt's put-backs of a field another manager writes back each time`).toBeLessThanOrEqual(FIGHT_REPAIRS);
    const until = Date.now() + handsOffMs;
    while (Date.now() < until) {
      expect((await this.#core.readNamespacedConfigMap({ namespace: this.#namespace, name })).data?.mode, `${name}: left as "${FIGHTER}" wrote it once Contested`).toBe(FIGHTER);
      await sleep(100);
    }
    this.tally.fightPutBacks += putBacks;
  }

  /**
   * A ValidatingAdmissionPolicy (CEL, kube-apiserver's own) refuses the ConfigMap `config` of one CR
   * (the next each time), which it makes at every entry into Running: the CR says ObjectsApplied=False,
   * ApplyFailed, naming the object and the API's message, and so does the operator's log, in one line;
   * `forMs` later the policy goes, and its objects are applied (its retries' backoff grew only while refused).
   */
  async refuseApplies(forMs: number): Promise<void> {
    const admission = this.#kc.makeApiClient(AdmissionregistrationV1Api);
    const crs = this.#names.filter((n) => !this.#held.has(n));
    const cr = crs[this.tally.refusedApplies % crs.length]!;
    const name = `${this.#namespace}-refuse-${this.tally.refusedApplies}`;
    await admission.createValidatingAdmissionPolicy({
      body: {
        apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name },
        spec: {
          failurePolicy: 'Fail',
          matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }] },
          validations: [{ expression: `object.metadata.name != '${cr}-config'`, message: REFUSAL }],
        },
      },
    });
    const binding = { apiVersion: 'admissionregistration.k8s.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name }, spec: { policyName: name, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': this.#namespace } } } } };
    await admission.createValidatingAdmissionPolicyBinding({ body: binding });
    try {
      let message: string | undefined;
      await this.#waitFor(`${cr}: its ConfigMap refused by the admission policy`, async () => {
        const condition = conditionOf(await this.#stores.get(this.#namespace, cr), 'ObjectsApplied');
        message = condition?.reason === 'ApplyFailed' ? condition.message : undefined;
        return message !== undefined;
      });
      expect(message, `${cr}: ObjectsApplied`).toContain(`ConfigMap ${cr}-config (object "config") was not applied: `);
      expect(message, `${cr}: ObjectsApplied`).toContain(REFUSAL);
      // The operator's log says the same of the object refused, not that the CR itself cannot be written.
      await this.#waitFor(`the refused apply of ${cr}-config in the store operator's log`, async () => this.#operator.output().includes(`ConfigMap ${cr}-config (object \\"config\\") was not applied: `));
      expect(this.#operator.output(), 'the store operator\'s log of a refused apply').not.toContain('no longer passes its CRD\'s schema');
      await sleep(forMs);
    } finally {
      await admission.deleteValidatingAdmissionPolicyBinding({ name });
      await admission.deleteValidatingAdmissionPolicy({ name });
    }
    await this.#waitFor(`${cr}: its objects applied once the policy is gone`, async () => {
      const applied = conditionOf(await this.#stores.get(this.#namespace, cr), 'ObjectsApplied');
      return ['Applied', 'Contested'].includes(applied?.reason ?? '');
    });
    this.tally.refusedApplies += 1;
  }

  /**
   * A CR resting at Running is sent to RolledBack, through Upgrading, whose Job never gets ready (no
   * controller runs it): it waits, Ready=False naming the Job, and its deadline's timeout edge takes it
   * to RolledBack, Upgrading's action never started.
   */
  async neverReady(): Promise<void> {
    let chosen: LifecycleObject | undefined;
    await this.#waitFor('a store CR resting at Running', async () => {
      chosen = (await this.#list()).find((cr) => !this.#held.has(cr.metadata.name) && cr.metadata.name !== this.#fought && cr.spec.desiredState === 'Running' && settled(cr));
      if (chosen === undefined) return false;
      this.#held.add(chosen.metadata.name);
      try {
        // As read: a move of the walker's that landed meanwhile is not overwritten (nor overwrites this).
        await this.#stores.patchSpec(this.#namespace, chosen.metadata.name, { desiredState: 'RolledBack' }, chosen.metadata.resourceVersion);
        return true;
      } catch {
        this.#held.delete(chosen.metadata.name);
        return false;
      }
    });
    const name = chosen!.metadata.name;
    // Upgrading lasts its 3 s deadline: a read of the API server slowed by the other faults may miss it,
    // so the wait at Upgrading is checked whenever a read sees it, and the move out is awaited.
    let timedOut: LifecycleObject | undefined;
    let seenWaiting = false;
    await this.#waitFor(`${name}: at RolledBack by Upgrading's timeout edge`, async () => {
      timedOut = await this.#stores.get(this.#namespace, name);
      const ready = conditionOf(timedOut, 'Ready');
      if (timedOut.status?.state === 'Upgrading' && ready?.reason === 'ObjectsNotReady') {
        expect(ready.message, `${name}: Ready=False at Upgrading names the Job it waits for`).toContain(`Job ${name}-upgrade (object "upgrade")`);
        seenWaiting = true;
      }
      return timedOut.status?.state === 'RolledBack';
    });
    expect(timedOut!.status?.lastTransition, `${name}: the move to RolledBack`).toMatchObject({ from: 'Upgrading', events: ['RolledBack'] });
    const upgrading = `${timedOut!.metadata.uid}-${timedOut!.status!.transition - 1}`;
    expect(this.#sidecar.sidecar.operations.get(upgrading), `${name}: Upgrading's operation ${upgrading}, its Job never ready`).toBeUndefined();
    // Pruned on leaving Upgrading, and gone: a Job deleted with batch/v1's default propagation would wait
    // (forever here, with no garbage collector) for the collector to orphan its Pods.
    const batch = this.#kc.makeApiClient(BatchV1Api);
    let finalizers: string[] | undefined;
    await this.#waitFor(() => `${name}: Job ${name}-upgrade gone, pruned on leaving Upgrading (finalizers: ${finalizers?.join(', ')})`, async () => {
      try {
        finalizers = (await batch.readNamespacedJob({ namespace: this.#namespace, name: `${name}-upgrade` })).metadata?.finalizers;
        return false;
      } catch (error) {
        return httpStatusOf(error) === 404;
      }
    });
    this.tally.neverReady += 1;
    if (seenWaiting) this.tally.neverReadySeenWaiting += 1;
  }

  /** Stops the walk; every CR rests at its desired node, its objects applied (the fought one's maybe Contested); no orphan, no duplicate. */
  async settle(): Promise<void> {
    this.#stopping = true;
    await this.#turn;
    await this.#walking;
    if (this.#operator.exitCode !== null || this.#operator.signalCode !== null) this.#operator = this.#spawn();
    let crs: LifecycleObject[] = [];
    const describe = () => crs.map((cr) => `${cr.metadata.name}: spec ${cr.spec.desiredState} at ${cr.status?.state} Ready=${conditionOf(cr, 'Ready')?.reason} ObjectsApplied=${conditionOf(cr, 'ObjectsApplied')?.reason}: ${conditionOf(cr, 'ObjectsApplied')?.message}`).join('\n');
    await this.#waitFor(() => `every store CR at rest, its objects applied:\n${describe()}`, async () => {
      crs = await this.#list();
      // The fought one stays Contested, unless a restart since (a fight is kept in memory) took the field back.
      return crs.every((cr) => settled(cr) && (conditionOf(cr, 'ObjectsApplied')?.reason === 'Applied' || (cr.metadata.name === this.#fought && conditionOf(cr, 'ObjectsApplied')?.reason === 'Contested')));
    });
    this.tally.ownedObjects = checkNoOrphans(crs, await this.#owned());
  }

  /** Every CR deleted and gone: nothing with okt's labels is left but the kept Secrets, disowned. */
  async deleteAll(): Promise<void> {
    await Promise.all(this.#names.map((name) => this.#stores.remove(this.#namespace, name)));
    await this.#waitFor('every store CR gone', async () => (await this.#list()).length === 0);
    const kept = new Set(storeGraph.objects.filter((o) => o.deletion === 'Keep').map((o) => o.id));
    this.tally.keptObjects = checkLeftAfterDeletion(await this.#owned(), kept);
  }

  logs(): string {
    return [...this.#logs, this.#operator.output()].join('\n').slice(-10_000);
  }

  async stop(): Promise<void> {
    this.#stopping = true;
    await killHard(this.#operator);
    await this.#sidecar.close();
  }

  #spawn(): ReturnType<typeof spawnOperator> {
    const child = spawnOperator({ namespace: this.#namespace, sidecarUrl: this.#sidecar.url, token: this.#sidecar.token, graphFile: STORE_GRAPH_FILE, resource: STORES, extra: ['--log-level', 'warn'] });
    child.once('exit', (code, signal) => this.#logs.push(`--- store operator exited (${code ?? signal})\n${child.output().slice(-4000)}`));
    return child;
  }

  /** Moves every CR not held between Running and Servicing each time it rests, until settle(). */
  async #walk(): Promise<void> {
    while (!this.#stopping) {
      try {
        for (const cr of await this.#list()) {
          const next = WALKED.find((n) => n !== cr.spec.desiredState);
          if (this.#held.has(cr.metadata.name) || !settled(cr) || !WALKED.includes(cr.spec.desiredState as never) || next === undefined) continue;
          // As read: a patch still in flight when a fault takes the CR must not land after the fault's own (seed -1916868773: a move to Servicing after the never-ready fault's RolledBack).
          await this.#stores.patchSpec(this.#namespace, cr.metadata.name, { desiredState: next }, cr.metadata.resourceVersion).catch(() => undefined);
        }
      } catch {
        // the API server may be restarting: the next tick reads again
      }
      await sleep(200);
    }
  }

  async #list(): Promise<LifecycleObject[]> {
    return (await Promise.all(this.#names.map((name) => this.#stores.get(this.#namespace, name).catch((error: unknown) => {
      if (httpStatusOf(error) === 404) return undefined;
      throw error;
    })))).filter((cr) => cr !== undefined);
  }

  async #readService(name: string) {
    try {
      return await this.#core.readNamespacedService({ namespace: this.#namespace, name });
    } catch (error) {
      if (httpStatusOf(error) === 404) return undefined;
      throw error;
    }
  }

  /** Every object of the kinds the store graph makes that carries okt's owner label in the namespace. */
  async #owned(): Promise<LabelledObject[]> {
    const namespace = this.#namespace;
    const labelSelector = OBJECT_LABELS.ownerUid;
    const batch = this.#kc.makeApiClient(BatchV1Api);
    const lists = await Promise.all([
      this.#core.listNamespacedService({ namespace, labelSelector }).then((l) => ['Service', l.items] as const),
      this.#core.listNamespacedSecret({ namespace, labelSelector }).then((l) => ['Secret', l.items] as const),
      this.#core.listNamespacedConfigMap({ namespace, labelSelector }).then((l) => ['ConfigMap', l.items] as const),
      batch.listNamespacedJob({ namespace, labelSelector }).then((l) => ['Job', l.items] as const),
    ]);
    return lists.flatMap(([kind, items]) => items.map(({ metadata }) => ({
      kind, name: metadata!.name!, ownerUid: metadata!.labels![OBJECT_LABELS.ownerUid]!, objectId: metadata!.labels![OBJECT_LABELS.objectId] ?? '',
      controllerUid: metadata!.ownerReferences?.find((r) => r.controller === true)?.uid,
    })));
  }

  /** Waits until `check` holds (an error counts as not yet); `what` is said on a time-out, read then. */
  async #waitFor(what: string | (() => string), check: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + WAIT_MS;
    let lastError: unknown;
    for (;;) {
      try {
        if (await check()) return;
      } catch (error) {
        lastError = error;
      }
      if (Date.now() > deadline) throw new Error(`timed out after ${WAIT_MS / 1000} s waiting for ${typeof what === 'string' ? what : what()}${lastError === undefined ? '' : ` (last error: ${String(lastError)})`}`);
      await sleep(100);
    }
  }
}

/** The tally of a run without object faults. */
export const NO_STORES: StoreTally = { storeCrs: 0, objectsRemade: 0, midApplyKills: 0, killsBeforeStatusWrite: 0, fightPutBacks: 0, refusedApplies: 0, neverReady: 0, neverReadySeenWaiting: 0, ownedObjects: 0, keptObjects: 0 };
