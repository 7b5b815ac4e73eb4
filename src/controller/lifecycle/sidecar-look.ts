// What the sidecar says in a reconcile: of the operation the status holds (not known to it: started,
// run again or lost, as error-policy.ts's SIDECAR_ANSWERS says), or of the events it observed (only
// the CR's news, epoch-news.ts); a failed look is a refusal or the sidecar being unavailable.
import type { LifecycleStatus } from '../../kube/lifecycle-resource.ts';
import { isTerminal, type Observation, type Operation, type SidecarClient, type SidecarProblemError } from '../../sidecar-client/index.ts';
import type { Logger } from '../logger.ts';
import { heldForMs } from './cycle-brake.ts';
import { classifyAnswerFailure, sidecarVerdict } from './error-policy.ts';
import { EpochMemory } from './epoch-news.ts';
import type { SidecarClients, SidecarResolution } from './sidecar-clients.ts';
import type { SeenOperation, SidecarView } from './step-types.ts';

export class SidecarLook {
  readonly #sidecars: SidecarClients;
  readonly #graph: string;
  /** Per resource, the sidecar epochs heard: which of another epoch's events are its news. */
  readonly #epochs = new EpochMemory();
  /** Per resource, the end of its operation a long-poll heard, until the next look takes it. */
  readonly #ends = new Map<string, HeardEnd>();

  constructor(sidecars: SidecarClients, graph: string) {
    this.#sidecars = sidecars;
    this.#graph = graph;
  }

  /** A CR is gone: the epochs and the end heard for it go. */
  forget(key: string): void {
    this.#epochs.forget(key);
    this.#ends.delete(key);
  }

  /**
   * A long-poll of the CR's operation heard it end, at the sidecar `url`: the next look takes this
   * answer instead of asking again (an ended operation does not change).
   */
  ended(key: string, url: string, operation: Operation): void {
    if (isTerminal(operation.phase)) this.#ends.set(key, { url, operation, atMs: performance.now() });
  }

  /**
   * What the sidecar says of the current operation, or of what it observed. An operation the sidecar
   * does not know is 'unknown', run again right here (the sidecar decides whether its action is
   * idempotent; attempts + 1) or 'lost', as error-policy.ts's SIDECAR_ANSWERS says. Of what it
   * observed, only the CR's news (epoch-news.ts).
   */
  async view(key: string, resolved: SidecarResolution, stored: LifecycleStatus | undefined, log: Logger): Promise<SidecarView> {
    if (resolved.kind === 'refused') return { kind: 'refused', ...resolved.refusal };
    if (resolved.kind === 'none') return { kind: 'unavailable', message: 'no sidecar configured (spec.sidecar.url, a Service of the graph with a port named okt-sidecar, or --sidecar-url)' };
    try {
      const heard = this.#takeEnd(key, resolved.url, stored);
      const { view, atMs } = heard ?? { view: await this.#ask(key, resolved, stored, log), atMs: performance.now() };
      if (view.kind === 'answered') {
        // The epoch the CR reads events from: an observation's (the step records it), else the recorded one.
        const reading = view.observedSequence !== undefined ? view.epoch : stored?.observedEpoch;
        this.#epochs.heard(key, reading, { epoch: view.epoch, url: resolved.url, atMs });
      }
      return view;
    } catch (error) {
      this.#sidecars.forgetRefusedToken(resolved, error);
      const refusal = classifyAnswerFailure(error, resolved.url, resolved.tokenSource !== undefined);
      if (refusal !== undefined) return { kind: 'refused', ...refusal };
      return { kind: 'unavailable', message: error instanceof Error ? error.message : String(error) };
    }
  }

  /**
   * The end a long-poll heard of the operation the status holds as running, from the sidecar this look
   * would ask, with when it was heard; taken once (a look that fails to commit it asks the sidecar next time).
   */
  #takeEnd(key: string, url: string, stored: LifecycleStatus | undefined): { view: SidecarView; atMs: number } | undefined {
    const heard = this.#ends.get(key);
    if (heard === undefined) return undefined;
    this.#ends.delete(key);
    const operation = stored?.operation;
    if (operation === undefined || isTerminal(operation.phase) || operation.id !== heard.operation.id || url !== heard.url) return undefined;
    return { view: { kind: 'answered', epoch: heard.operation.epoch, operation: seenOperation(heard.operation), observedEvents: [] }, atMs: heard.atMs };
  }

  /** The sidecar's answers (throws what the client throws). */
  async #ask(key: string, { client, url }: Extract<SidecarResolution, { kind: 'client' }>, stored: LifecycleStatus | undefined, log: Logger): Promise<SidecarView> {
    const operation = stored?.operation;
    if (operation !== undefined && !isTerminal(operation.phase)) {
      try {
        const seen = await client.getOperation(operation.id);
        return { kind: 'answered', epoch: seen.epoch, operation: seenOperation(seen), observedEvents: [] };
      } catch (error) {
        const verdict = sidecarVerdict('read', error, operation.epoch);
        if (verdict !== 'unknown' && verdict !== 'rerun') throw error;
        const epoch = (error as SidecarProblemError).problem.epoch ?? '';
        // One the cycle brake still holds was given to no sidecar: unknown to any, never lost.
        const held = heldForMs(operation, new Date().toISOString()) > 0;
        if (verdict === 'unknown' || held) return { kind: 'answered', epoch, operation: 'unknown', observedEvents: [] };
        return await this.#rerun(client, operation, epoch, log);
      }
    }
    const graph = this.#graph;
    const since = stored?.observedSequence ?? 0;
    const observation = await client.observe({ graph, since });
    const answered = (seen: Observation, from: number): SidecarView => ({
      kind: 'answered', epoch: seen.epoch, observedEvents: seen.events.map((e) => e.event), observedSequence: seen.lastSeq, observedFrom: from,
    });
    const recorded = stored?.observedEpoch;
    if (recorded === undefined || observation.epoch === recorded) return answered(observation, since);
    // Another epoch counts its events from 1 again, and only some of them are this CR's news.
    const answer = { epoch: observation.epoch, url, atMs: performance.now(), epochAgeMs: observation.epochAgeMs, lastSeq: observation.lastSeq };
    const from = this.#epochs.newsAfter(key, { epoch: recorded, seq: since }, answer);
    // The first answer holds every event after `since`, up to lastSeq: enough unless the news begins before.
    if (from >= Math.min(since, observation.lastSeq)) return answered({ ...observation, events: observation.events.filter((e) => e.seq > from) }, from);
    const again = await client.observe({ graph, since: from });
    // Yet another epoch answered the second look (replicas behind a Service): nothing is offered this time.
    return answered(again.epoch === observation.epoch ? again : { ...observation, events: [], lastSeq: from }, from);
  }

  /** A sidecar of another epoch than the operation's forgot it: run it again there if its action is idempotent. */
  async #rerun(client: SidecarClient, operation: NonNullable<LifecycleStatus['operation']>, epoch: string, log: Logger): Promise<SidecarView> {
    const attempt = (operation.attempts ?? 1) + 1;
    try {
      const params = operation.params === undefined ? {} : { params: operation.params };
      const seen = await client.startOperation(operation.id, { node: operation.node, graph: this.#graph, epoch, rerun: true, attempt, ...params });
      log.warn({ operation: operation.id, node: operation.node, from: operation.epoch, epoch, attempt }, 'the sidecar that held the operation lost it: its idempotent action runs again');
      return { kind: 'answered', epoch: seen.epoch, operation: seenOperation(seen), observedEvents: [] };
    } catch (error) {
      if (sidecarVerdict('rerun', error) === 'lost') {
        log.warn({ operation: operation.id, node: operation.node, from: operation.epoch, epoch }, 'the sidecar that held the operation lost it, and its action is not idempotent: not run again');
        return { kind: 'answered', epoch, operation: 'lost', observedEvents: [] };
      }
      throw error;
    }
  }
}

/** An operation's end, as a long-poll heard it from the sidecar at `url`, `atMs` on the operator's clock. */
interface HeardEnd {
  url: string;
  operation: Operation;
  atMs: number;
}

function seenOperation(seen: Operation): SeenOperation {
  const view: SeenOperation = { phase: seen.phase, events: seen.events, message: seen.message, attempts: seen.attempts };
  if (seen.reason !== undefined) view.reason = seen.reason;
  if (seen.startedAt !== undefined) view.startedAt = seen.startedAt;
  if (seen.finishedAt !== undefined) view.finishedAt = seen.finishedAt;
  return view;
}
