import fc from 'fast-check';
import { describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { parseStatus } from '../../src/controller/lifecycle/parse-status.ts';
import { generateCrd } from '../../src/kube/crd.ts';
import { lifecycleStatusSchema, type LifecycleStatus } from '../../src/kube/lifecycle-resource.ts';
import { statusToWrite } from '../../src/kube/unknown-status-fields.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

const T0 = '2026-01-01T00:00:00.000Z';
const T1 = '2026-01-01T00:01:00.000Z';
const ready = { type: 'Ready', status: 'True', reason: 'DesiredStateReached', message: 'Running reached', lastTransitionTime: T0, observedGeneration: 1 } as const;

/** okt's status of a database resting at Running, as okt knows it. */
const atRunning: LifecycleStatus = lifecycleStatusSchema.parse({
  state: 'Running',
  observedGeneration: 1,
  transition: 1,
  sequence: 2,
  path: ['Start', 'Running'],
  pathSummary: '>Start>Running',
  lastTransition: { from: 'Start', to: 'Running', events: ['Running'], time: T0, generation: 1 },
  operation: { id: 'uid-1', node: 'Running', phase: 'Succeeded', events: [], message: 'exited with code 0', epoch: 'e1' },
  outbox: [{ sequence: 2, type: 'dev.okt.lifecycle.converged', time: T0, subject: 'Running', data: {} }],
  conditions: [ready],
});

/** The same status as stored, with what a newer okt and another tool wrote into it. */
const stored = {
  ...atRunning,
  fromAnotherTool: { owner: 'backup-operator', lastBackup: T0 },
  lastTransition: { ...atRunning.lastTransition, durationMs: 1200 },
  operation: { ...atRunning.operation, ticket: 'OPS-7' },
  outbox: [{ ...atRunning.outbox![0]!, traceparent: '00-abc-def-01' }],
};

describe('statusToWrite: a status write keeps the fields okt does not know', () => {
  test('a transition keeps the top-level fields; the replaced operation and lastTransition take theirs with them', () => {
    const next: LifecycleStatus = {
      ...atRunning,
      state: 'Servicing',
      transition: 2,
      sequence: 4,
      path: ['Start', 'Running', 'Servicing'],
      pathSummary: '>Start>Running>Servicing',
      lastTransition: { from: 'Running', to: 'Servicing', events: ['Servicing'], time: T1, generation: 2 },
      operation: { id: 'uid-2', node: 'Servicing', phase: 'Pending', startedAt: T1, epoch: 'e1' },
      outbox: [...atRunning.outbox!, { sequence: 3, type: 'dev.okt.lifecycle.transition', time: T1, subject: 'Servicing', data: {} }],
    };
    const written = statusToWrite(stored, next);
    expect(written.fromAnotherTool).toEqual(stored.fromAnotherTool);
    // Another operation and another transition: the old ones' fields were about them.
    expect(written.operation).toEqual(next.operation);
    expect(written.lastTransition).toEqual(next.lastTransition);
    // An event still waiting keeps what a newer okt put on it; the new one has nothing of the sort.
    expect(written.outbox).toEqual([stored.outbox[0], next.outbox![1]]);
    expect(lifecycleStatusSchema.parse(written)).toEqual(next);
  });

  test('an update of the same operation keeps its unknown fields and still removes the fields okt dropped', () => {
    const next: LifecycleStatus = { ...atRunning, operation: { id: 'uid-1', node: 'Running', phase: 'Failed', events: [], reason: 'NonZeroExit', epoch: 'e1' } };
    expect(statusToWrite(stored, next).operation).toEqual({ ...next.operation, ticket: 'OPS-7' });
  });

  test('an operation okt removes goes whole, its unknown fields with it', () => {
    const { operation: _gone, ...next } = atRunning;
    expect(statusToWrite(stored, next)).not.toHaveProperty('operation');
  });

  test('nothing okt knows changed: the status as stored, whatever else it holds', () => {
    expect(statusToWrite(stored, atRunning)).toEqual(stored);
  });

  test('another writer\'s field named __proto__ (JSON.parse reads one as a field) stays a field, in the status and in its operation', () => {
    const raw = JSON.parse(`{"__proto__":{"by":"another tool"},"operation":{"__proto__":"OPS-8"}}`) as Record<string, unknown>;
    const written = statusToWrite({ ...stored, ...raw, operation: { ...stored.operation, ...(raw.operation as object) } }, atRunning);
    expect(Object.getPrototypeOf(written)).toBe(Object.prototype);
    expect(Object.keys(written)).toContain('__proto__');
    expect(JSON.parse(JSON.stringify(written)).__proto__).toEqual({ by: 'another tool' });
    expect(JSON.parse(JSON.stringify(written.operation)).__proto__).toBe('OPS-8');
  });

  test('a conditions-only write (a status okt cannot read) touches nothing but the conditions', () => {
    const conditions = [{ ...ready, status: 'False' as const, reason: 'InvalidStatus', message: 'status cannot be read' }];
    expect(statusToWrite(stored, { conditions })).toEqual({ ...stored, conditions });
  });

  test('along any walk of the graph, another writer\'s fields survive every write and okt\'s are exactly what the step computed', () => {
    const walks = fc.array(fc.constantFrom(...databaseGraph.nodeNames), { minLength: 1, maxLength: 8 });
    const foreign = fc.dictionary(fc.string({ minLength: 1 }).filter((key) => !(key in lifecycleStatusSchema.shape)), fc.jsonValue(), { maxKeys: 3 });
    fc.assert(
      fc.property(walks, foreign, fc.string({ minLength: 1 }), (walk, rival, note) => {
        const sim = new LifecycleSim(databaseGraph, walk[0]!);
        sim.spec = { ...sim.spec, onLeaf: 'Keep' };
        // The rival writes before okt's first write (a first sight all the same) and annotates every operation it sees.
        let raw: Record<string, unknown> = structuredClone(rival);
        const annotated = new Set<string>();
        const write = () => {
          const effects = sim.reconcile();
          if (effects.status === undefined) return effects;
          raw = statusToWrite(raw, effects.status);
          expect(lifecycleStatusSchema.parse(raw)).toEqual(effects.status);
          for (const [key, value] of Object.entries(rival)) expect(raw[key]).toEqual(value);
          const operation = raw.operation as Record<string, unknown> | undefined;
          // Its note stays on the operation it annotated, and is on no other.
          if (operation !== undefined) expect(operation.rivalNote).toBe(annotated.has(operation.id as string) ? note : undefined);
          if (operation !== undefined && !annotated.has(operation.id as string)) {
            operation.rivalNote = note;
            annotated.add(operation.id as string);
          }
          return effects;
        };
        for (const desired of walk) {
          sim.setDesired(desired);
          for (let i = 0; i < 20; i++) {
            const effects = write();
            if (!effects.again && !effects.poll && effects.requeueAfterMs === undefined) break;
          }
        }
      }),
      { numRuns: fcRuns(200) },
    );
  });
});

describe('parseStatus', () => {
  test('a status holding only other writers\' fields (and conditions) is a first sight, not an invalid status', () => {
    expect(parseStatus({ fromAnotherTool: { owner: 'x' }, conditions: [] }, 'uid-1')).toBeUndefined();
  });

  test('the step sees only what okt knows', () => {
    expect(parseStatus(stored, 'uid-1')).toEqual(atRunning);
  });

  test('a status with okt\'s fields but no state is invalid, naming the field', () => {
    expect(parseStatus({ fromAnotherTool: 1, transition: 3 }, 'uid-1')).toMatchObject({ invalid: expect.stringContaining('status.state') });
  });
});

describe('the CRD keeps the status fields okt does not know', () => {
  const schema = (generateCrd(databaseGraph, { group: 'okt.dev', version: 'v1alpha1', kind: 'Database' }) as {
    spec: { versions: { schema: { openAPIV3Schema: { properties: Record<string, Record<string, unknown> & { properties: Record<string, Record<string, unknown> & { items?: Record<string, unknown> }> }> } } }[] };
  }).spec.versions[0]!.schema.openAPIV3Schema.properties;
  const PRESERVE = 'x-kubernetes-preserve-unknown-fields';

  test('at the top of status and inside operation, lastTransition and outbox entries, still validating okt\'s own fields', () => {
    const status = schema.status!;
    expect(status[PRESERVE]).toBe(true);
    expect(status.properties.operation![PRESERVE]).toBe(true);
    expect(status.properties.lastTransition![PRESERVE]).toBe(true);
    expect(status.properties.outbox!.items![PRESERVE]).toBe(true);
    expect(status.properties.operation!.required).toEqual(['id', 'node', 'phase']);
    expect(status.properties.state).toMatchObject({ type: 'string', minLength: 1 });
  });

  test('not in spec (an unknown field there is a typo) nor in conditions (metav1.Condition is closed)', () => {
    expect(schema.spec![PRESERVE]).toBeUndefined();
    expect(schema.status!.properties.conditions!.items![PRESERVE]).toBeUndefined();
  });
});
