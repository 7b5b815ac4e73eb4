// The status being built in one step, with the bookkeeping every write shares: the conditions it
// sets, the outbox of the events it commits (those not delivered yet stay, in full), and whether a
// write is due at all. What a step writes of the operation (operation.ts), a commit (commit.ts) and a
// migration (migration.ts) is written through it.
import { isDeepStrictEqual } from 'node:util';
import { nodeParams, type Graph } from '../../../graph/index.ts';
import { renderPath } from '../../../machine/index.ts';
import { findCondition, setCondition, type ConditionUpdate } from '../../../kube/conditions.ts';
import type { LifecycleStatus, OutboxEntry } from '../../../kube/lifecycle-resource.ts';
import type { StatusFormat } from '../../../kube/status-format.ts';
import { statusEvents, withEvents } from '../../../events/status-events.ts';
import { LIFECYCLE_EVENT_TYPES, type LifecycleEventData, type LifecycleEventType } from '../../../events/types.ts';
import { READY, RECONCILING, STALLED } from '../reasons.ts';
import { releasedBrake } from '../cycle-brake.ts';
import type { ResourceView, SidecarView, StepEffects, StepInput } from '../step-types.ts';
import { judgedAt } from './conditions.ts';
import { inStatusFormat } from './lean-format.ts';
import { encodeStatus, storedEncodingOf, type StoredEncoding } from './encoding.ts';

export class StatusDraft {
  readonly status: LifecycleStatus;
  /** The node the resource is driven to: spec.desiredState, or the deletion's leaf. */
  desired: string;
  /** The resource is on the revision of the graph it is driven with (not waiting for, nor stranded by, a migration). */
  onRevision = false;
  /** The status as read, before this step. */
  readonly stored: LifecycleStatus;
  readonly resource: ResourceView;
  readonly generation: number;
  readonly now: string;
  readonly graph: Graph;
  readonly #firstSight: boolean;
  /** Events of earlier writes the emitter has not delivered yet: they stay in the outbox, in full. */
  readonly #undelivered: OutboxEntry[];
  /** The events of this write. */
  readonly #added: OutboxEntry[] = [];
  readonly #format: StatusFormat;
  readonly #storedEncoding: StoredEncoding;

  constructor(stored: LifecycleStatus, firstSight: boolean, resource: ResourceView, now: string, graph: Graph, delivered: number, format: StatusFormat, storedEncoding: StoredEncoding) {
    this.stored = stored;
    this.#firstSight = firstSight;
    this.resource = resource;
    this.generation = resource.generation;
    this.status = releasedBrake({ ...stored, observedGeneration: resource.generation, conditions: stored.conditions.map((c) => judgedAt(c, resource.generation)) }, resource.generation, now);
    this.desired = resource.spec.desiredState;
    this.now = now;
    this.graph = graph;
    this.#undelivered = stored.sequence > delivered ? statusEvents(stored, graph.name).filter((e) => e.sequence > delivered) : [];
    this.#format = format;
    this.#storedEncoding = storedEncoding;
  }

  stall(reason: string, message: string): StepEffects {
    const stalled = findCondition(this.stored.conditions, STALLED);
    const already = stalled?.status === 'True' && stalled.reason === reason;
    this.set(READY, 'False', reason, message);
    this.set(RECONCILING, 'False', reason, message);
    this.set(STALLED, 'True', reason, message);
    if (!already) {
      const state = this.status.state;
      this.emit(LIFECYCLE_EVENT_TYPES.stalled, state, { ...this.data(state, state, []), reason, message });
    }
    return this.writeIfChanged();
  }

  /** A reason to wait that is no failure: not Ready, still Reconciling, not Stalled. */
  waiting(reason: string, message: string): StepEffects {
    this.readiness(false, reason, message);
    return this.writeIfChanged();
  }

  /** A write only when a reader would see a change (the observed generation included). */
  writeIfChanged(): StepEffects {
    const formatted = inStatusFormat(this.status, this.#format);
    if (!this.#firstSight && isDeepStrictEqual(formatted, this.stored) && this.#storedAsWritten(formatted)) return {};
    return { status: this.pruned(formatted) };
  }

  /** The status is stored in the encoding this format writes `formatted` in (the rest is what the comparison says). */
  #storedAsWritten(formatted: LifecycleStatus): boolean {
    return storedEncodingOf(encodeStatus(formatted, this.resource.uid, this.#format)) === this.#storedEncoding;
  }

  /** Delivered events leave the status on a write that is due anyway (no write of their own); this write's are kept short. */
  pruned(formatted = inStatusFormat(this.status, this.#format)): LifecycleStatus {
    const { outbox: _outbox, emitted: _emitted, ...rest } = formatted;
    // A status of an okt without revisions, on this revision's nodes, gains the revision with its next write.
    const written = rest.graphRevision === undefined && this.onRevision ? { ...rest, graphRevision: this.graph.revision } : rest;
    return withEvents(written, this.#undelivered, this.#added, this.graph.name, this.desired);
  }

  /** The events in the outbox: those earlier writes left undelivered, and this write's. */
  pendingEvents(): number {
    return this.#undelivered.length + this.#added.length;
  }

  /** The checked parameters of `node`'s action (a commit with wrong ones is refused: commit.ts). */
  paramsOf(node: string, input: StepInput): Record<string, unknown> | undefined {
    const params = nodeParams(input.model.graph, node, input.resource.spec.params);
    return params?.ok ? params.params : undefined;
  }

  /**
   * The events the sidecar observed outside any action, to offer to this step's decision. On first sight
   * (or a status of an older okt) the sidecar's current sequence becomes the baseline: older events are
   * not this resource's news. Where its news begins in another epoch is recorded at once, so that it
   * holds however long the events wait (a pause) and across operator restarts.
   */
  observedEvents(sidecar: SidecarView): string[] {
    if (sidecar.kind !== 'answered' || sidecar.operation !== undefined) return [];
    if (this.stored.observedEpoch === undefined) {
      this.#observe(sidecar);
      return [];
    }
    if (sidecar.epoch !== this.stored.observedEpoch) {
      this.status.observedEpoch = sidecar.epoch;
      this.status.observedSequence = sidecar.observedFrom ?? 0;
    }
    return sidecar.observedEvents;
  }

  /** Observed events are used up only by a decision they were offered to. */
  consumeObserved(sidecar: SidecarView): void {
    if (sidecar.kind !== 'answered' || sidecar.operation !== undefined || sidecar.observedSequence === undefined) return;
    this.#observe(sidecar);
  }

  #observe(sidecar: Extract<SidecarView, { kind: 'answered' }>): void {
    this.status.observedEpoch = sidecar.epoch;
    if (sidecar.observedSequence !== undefined) this.status.observedSequence = sidecar.observedSequence;
  }

  /** Ready, Reconciling and Stalled as one: ready, or on the way (not stalled). */
  readiness(ready: boolean, reason: string, message: string): void {
    this.set(READY, ready ? 'True' : 'False', reason, message);
    this.set(RECONCILING, ready ? 'False' : 'True', reason, message);
    this.set(STALLED, 'False', reason, message);
  }

  set(type: string, status: ConditionUpdate['status'], reason: string, message: string): void {
    this.status.conditions = setCondition(this.status.conditions, { type, status, reason, message, observedGeneration: this.generation }, this.now);
  }

  /** The data of an event this step commits, from `from` to `to` on `events`. */
  data(from: string, to: string, events: readonly string[]): LifecycleEventData {
    return {
      graph: this.graph.name,
      // The revision the resource is on when the event happens (a migration in this step changes it).
      graphRevision: this.status.graphRevision ?? this.graph.revision,
      transition: this.status.transition,
      from,
      to,
      desired: this.desired,
      events: [...events],
      path: this.status.pathSummary ?? renderPath(this.status.path),
      generation: this.generation,
    };
  }

  /** Adds an event to this write's outbox, under the status's next sequence. */
  emit(type: LifecycleEventType, subject: string, data: LifecycleEventData): void {
    const s = this.status;
    s.sequence += 1;
    this.#added.push({ sequence: s.sequence, type, time: this.now, subject, data: { ...data } });
  }
}
