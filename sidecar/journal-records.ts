// The records of the sidecar's journal (journal.ts writes and replays them, journal-state.ts keeps what
// a compaction writes): first the epoch, then operations as they are accepted and finished, and the
// probe's events.
import { z } from 'zod';
import {
  EpochSchema,
  GraphNameSchema,
  ObservedEventSchema,
  OperationSchema,
  TimestampSchema,
  type Operation,
} from '../src/sidecar-client/protocol.ts';

export const EpochRecordSchema = z.object({ type: z.literal('epoch'), epoch: EpochSchema, createdAt: TimestampSchema });
/** Operations journaled by okt before epochs existed carry none: the journal's epoch is theirs. */
export const OperationRecordSchema = z.object({
  type: z.enum(['accepted', 'finished']),
  operation: OperationSchema.extend({ epoch: EpochSchema.optional() }),
});
export const ObservedRecordSchema = z.object({
  type: z.literal('observed'),
  graph: GraphNameSchema,
  event: ObservedEventSchema,
});
export const JournalRecordSchema = z.discriminatedUnion('type', [EpochRecordSchema, OperationRecordSchema, ObservedRecordSchema]);
export type JournalRecord = z.infer<typeof JournalRecordSchema>;
export type EpochRecord = z.infer<typeof EpochRecordSchema>;
export type ObservedRecord = z.infer<typeof ObservedRecordSchema>;
/** An operation record as replayed: with its epoch. */
export interface OperationRecord {
  type: 'accepted' | 'finished';
  operation: Operation;
}
