// The okt sidecar in a Pod of the real node, seen from the host the node runs on: its journal (on the
// Pod's emptyDir, which the host can read), the runs its actions logged (a hostPath), and the faults a
// kubelet makes to it: its container killed (restarted with the same volume), its Pod deleted and made
// anew by its Deployment (a new emptyDir: a sidecar without its journal).
import { copyFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { Operation } from '../../src/sidecar-client/protocol.ts';
import { readJournal, replayJournal } from '../../sidecar/journal.ts';
import { nodeContainerdSocket } from '../../src/cluster/index.ts';
import { ctr } from '../../src/cluster/ctr.ts';
import { waitFor } from '../../src/util/wait-for.ts';
import { kubectl } from '../../src/demo/in-cluster/kubectl.ts';
import type { RerunAllowance } from '../e2e/faults/checks.ts';
import { readRuns, unfinishedIn } from '../e2e/faults/system.ts';

const KUBELET_PODS = '/var/lib/okt-node/kubelet/pods';

function inNode(args: readonly string[]): string {
  return ctr(nodeContainerdSocket(), args);
}

interface PodJson {
  metadata: { name: string; uid: string; deletionTimestamp?: string };
  status: { phase: string; containerStatuses?: { name: string; ready: boolean; restartCount: number; containerID?: string }[] };
}

export class SidecarPod {
  readonly interruptions = new Map<string, number>();
  readonly mayRerun = new Map<string, number>();
  readonly forgotten = new Set<string>();
  memoryLosses = 0;
  containerKills = 0;
  readonly #formerJournals: string[] = [];
  readonly #kubeconfig: string;
  readonly #namespace: string;
  readonly #app: string;
  readonly #runsLog: string;
  readonly #keepDir: string;

  constructor(options: { kubeconfig: string; namespace: string; app: string; runsLog: string; keepDir: string }) {
    this.#kubeconfig = options.kubeconfig;
    this.#namespace = options.namespace;
    this.#app = options.app;
    this.#runsLog = options.runsLog;
    this.#keepDir = options.keepDir;
  }

  /** The one live Pod; with `orTerminating`, one being deleted when no live one is left (a namespace torn down). */
  async pod(orTerminating = false): Promise<PodJson> {
    const list = JSON.parse(await kubectl(this.#kubeconfig, ['-n', this.#namespace, 'get', 'pods', '-l', `app=${this.#app}`, '-o', 'json'])) as { items: PodJson[] };
    const live = list.items.filter((p) => p.metadata.deletionTimestamp === undefined);
    if (live.length === 1) return live[0]!;
    if (orTerminating && live.length === 0 && list.items.length > 0) return list.items[0]!;
    throw new Error(`${live.length} live Pods of ${this.#app} in ${this.#namespace}`);
  }

  /** Until the Pod's containers all run and are ready (after a restart or a new Pod). */
  ready(): Promise<PodJson> {
    return waitFor(`the ${this.#app} Pod in ${this.#namespace} to be ready`, async () => {
      const pod = await this.pod();
      return pod.status.phase === 'Running' && pod.status.containerStatuses?.every((c) => c.ready) ? pod : undefined;
    }, { timeoutMs: 120_000, intervalMs: 250 });
  }

  /** The journal file of the current Pod, on its emptyDir as the kubelet lays it out on the host. */
  async journalFile(): Promise<string> {
    const { uid } = (await this.pod(true)).metadata;
    return path.join(KUBELET_PODS, uid, 'volumes', 'kubernetes.io~empty-dir', 'okt-sidecar-journal', 'journal.jsonl');
  }

  /** The latest journal record of every operation over every Pod's journal. */
  async operations(): Promise<Map<string, Operation>> {
    const current = await this.journalFile();
    const files = [...this.#formerJournals, ...(existsSync(current) ? [current] : [])];
    return new Map(files.flatMap((file) => [...replayJournal(readJournal(file))].map(([id, record]) => [id, record.operation] as const)));
  }

  /** Operation id -> how many times its action started (each action appends its id to the runs log first). */
  runs(): Map<string, number> {
    return readRuns(this.#runsLog);
  }

  /** Accepted and not finished in the current journal: actions running (or about to) right now. */
  async unfinished(): Promise<string[]> {
    return unfinishedIn(await this.journalFile());
  }

  async waitForRunningAction(timeoutMs: number): Promise<boolean> {
    try {
      await waitFor('an action to run', async () => ((await this.unfinished()).length > 0 ? true : undefined), { timeoutMs, intervalMs: 20 });
      return true;
    } catch {
      return false;
    }
  }

  /** The sidecar container's id and its task's pid in the node's containerd. */
  async #sidecarTask(): Promise<{ id: string; pid: number; restartCount: number }> {
    const status = (await this.pod()).status.containerStatuses?.find((c) => c.name === 'okt-sidecar');
    const id = status?.containerID?.replace(/^containerd:\/\//, '');
    if (!id) throw new Error('the okt-sidecar container has no id');
    const tasks = inNode(['tasks', 'list']);
    const pid = Number(tasks.split('\n').find((line) => line.startsWith(id))?.split(/\s+/)[1]);
    if (!(pid > 0)) throw new Error(`no task of container ${id} in the node's containerd`);
    return { id, pid, restartCount: status?.restartCount ?? 0 };
  }

  /**
   * SIGKILL the sidecar container's process from the host (a signal from inside its own PID namespace
   * cannot kill its init); the kubelet restarts the container with the same journal volume.
   */
  async killContainer(): Promise<void> {
    const task = await this.#sidecarTask();
    process.kill(task.pid, 'SIGKILL');
    this.containerKills += 1;
    for (const op of await this.unfinished()) this.interruptions.set(op, (this.interruptions.get(op) ?? 0) + 1);
    await waitFor('the kubelet to restart the okt-sidecar container', async () => {
      const now = (await this.pod()).status.containerStatuses?.find((c) => c.name === 'okt-sidecar');
      return now && now.restartCount > task.restartCount && now.ready ? true : undefined;
    }, { timeoutMs: 120_000, intervalMs: 250 });
  }

  /**
   * Delete the Pod at once (its Deployment makes a new one, with a new emptyDir): a sidecar that starts
   * without its journal. The sidecar is frozen first so that the journal kept for the checks is its last
   * word. `heldUnfinished`: the operations the CRs' status holds unfinished (they may run again).
   */
  async deletePod(heldUnfinished: () => Promise<Set<string>>): Promise<void> {
    const pod = await this.pod();
    const task = await this.#sidecarTask();
    inNode(['tasks', 'pause', task.id]);
    const journal = await this.journalFile();
    const kept = path.join(this.#keepDir, `journal.pod-${this.#formerJournals.length}.jsonl`);
    if (existsSync(journal)) copyFileSync(journal, kept);
    this.#formerJournals.push(kept);
    const unfinished = new Set(unfinishedIn(kept));
    // Deleted while it rests, the Pod would take the application's state with it (the node's action is
    // not run again for a sidecar that comes back empty-handed): this fault is aimed at a running action.
    if (unfinished.size === 0) throw new Error('the sidecar Pod was to be deleted while an action runs, but none was running when it was frozen');
    await kubectl(this.#kubeconfig, ['-n', this.#namespace, 'delete', 'pod', pod.metadata.name, '--grace-period=0', '--force', '--wait=false']);
    for (const id of unfinished) this.interruptions.set(id, (this.interruptions.get(id) ?? 0) + 1);
    for (const id of await heldUnfinished()) if (!unfinished.has(id)) this.mayRerun.set(id, (this.mayRerun.get(id) ?? 0) + 1);
    for (const id of [...unfinished, ...this.mayRerun.keys()]) this.forgotten.add(id);
    this.memoryLosses += 1;
    await waitFor('a new Pod', async () => ((await this.pod()).metadata.uid !== pod.metadata.uid ? true : undefined), { timeoutMs: 120_000, intervalMs: 250 });
    await this.ready();
  }

  allowance(idempotent: boolean): RerunAllowance {
    return { interruptions: this.interruptions, mayRerun: this.mayRerun, forgotten: this.forgotten, idempotent, memoryLosses: this.memoryLosses };
  }
}
