// What a compacted journal holds, kept up to date record by record as the journal writes them, so that
// a compaction (at start or while running) writes exactly what was journaled, never less: the epoch
// record, the latest record of every operation, and the newest probe events of each graph.
// Retention: every operation id stays (an id a sidecar of this epoch forgot would be started again by
// the operator); beyond the newest `retainOperations` finished ones, only their output tail is dropped.
import type { EpochRecord, JournalRecord, ObservedRecord } from './journal-records.ts';

/** Probe events kept per graph, in memory and by the compaction. */
export const KEPT_OBSERVED_EVENTS = 1000;

type OperationJournalRecord = Extract<JournalRecord, { type: 'accepted' | 'finished' }>;

export class JournalState {
  private epoch: EpochRecord | undefined;
  private readonly operations = new Map<string, OperationJournalRecord>();
  /** Ids of finished operations, oldest first, until their output tail is dropped. */
  private readonly finishedWithTail: string[] = [];
  private readonly observed = new Map<string, ObservedRecord[]>();
  private readonly retainOperations: number;

  constructor(retainOperations: number) {
    this.retainOperations = retainOperations;
  }

  apply(record: JournalRecord): void {
    switch (record.type) {
      case 'epoch':
        this.epoch ??= record;
        return;
      case 'observed': {
        let events = this.observed.get(record.graph);
        if (events === undefined) this.observed.set(record.graph, (events = []));
        events.push(record);
        // Trimmed in chunks: one splice per KEPT_OBSERVED_EVENTS appends, not one per append.
        if (events.length > 2 * KEPT_OBSERVED_EVENTS) events.splice(0, events.length - KEPT_OBSERVED_EVENTS);
        return;
      }
      default:
        this.operations.set(record.operation.id, record);
        if (record.type === 'finished' && record.operation.outputTail.length > 0) this.retire(record.operation.id);
    }
  }

  /** The records of a compacted journal: the epoch first, one per operation, then the probe events. */
  records(): JournalRecord[] {
    const observed = [...this.observed.values()].flatMap((events) => events.slice(-KEPT_OBSERVED_EVENTS));
    return [...(this.epoch === undefined ? [] : [this.epoch]), ...this.operations.values(), ...observed];
  }

  private retire(id: string): void {
    this.finishedWithTail.push(id);
    while (this.finishedWithTail.length > this.retainOperations) {
      const old = this.operations.get(this.finishedWithTail.shift() as string);
      if (old?.type === 'finished') this.operations.set(old.operation.id, { ...old, operation: { ...old.operation, outputTail: [] } });
    }
  }
}
