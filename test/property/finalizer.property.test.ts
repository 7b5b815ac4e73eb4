import fc from 'fast-check';
import { expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { finalizersWanted } from '../../src/controller/lifecycle/cleanup.ts';
import { initialStatus } from '../../src/controller/lifecycle/status/conditions.ts';
import type { ResourceView } from '../../src/controller/lifecycle/step-types.ts';
import { LIFECYCLE_FINALIZER, type LifecycleStatus } from '../../src/kube/lifecycle-resource.ts';

// The finalizers okt sets (finalizersWanted), whoever put okt's on (okt itself, or an admission policy
// at the creation: okt manifests --finalizer-policy), over any finalizers, deletion, status and verdict.

const entry = initialStatus(databaseGraph, 1, '2026-11-28T08:00:00Z');
const statusArb: fc.Arbitrary<ResourceView['status']> = fc.oneof(
  fc.constant(undefined),
  fc.constant({ invalid: 'status.state: Required' }),
  fc.record({
    transition: fc.nat({ max: 3 }),
    operation: fc.option(fc.constant({ id: 'uid-1', node: 'Running', phase: 'Succeeded' as const }), { nil: undefined }),
    objects: fc.option(fc.constant([{ id: 'service', apiVersion: 'v1', kind: 'Service', name: 'pg' }]), { nil: undefined }),
  }).map((s) => ({ ...entry, ...s } as LifecycleStatus)),
);
const metadataArb = fc.record({
  finalizers: fc.option(fc.uniqueArray(fc.constantFrom('example.com/a', 'example.com/b', LIFECYCLE_FINALIZER), { maxLength: 3 }), { nil: undefined }),
  deletionTimestamp: fc.option(fc.constant('2026-11-28T08:00:01Z'), { nil: undefined }),
});
const touched = (status: ResourceView['status']) =>
  status !== undefined && ('invalid' in status || status.transition > 0 || status.operation !== undefined || (status.objects ?? []).length > 0);
const others = (finalizers: readonly string[] | undefined) => (finalizers ?? []).filter((f) => f !== LIFECYCLE_FINALIZER);

test('okt only ever adds or takes off its own finalizer, once: the CR\'s own stay in order, and a second look changes nothing', () => {
  fc.assert(fc.property(metadataArb, fc.boolean(), statusArb, (metadata, driven, status) => {
    const next = finalizersWanted(metadata, driven, status);
    if (next === undefined) return;
    expect(others(next)).toEqual(others(metadata.finalizers));
    expect(next.includes(LIFECYCLE_FINALIZER)).not.toBe((metadata.finalizers ?? []).includes(LIFECYCLE_FINALIZER));
    // No patch loop: what it asked for is what it wants.
    expect(finalizersWanted({ ...metadata, finalizers: next }, driven, status)).toBeUndefined();
  }));
});

test('a driven CR holds it unless deleted before okt saw it; one not driven loses it only while untouched, and never gets it', () => {
  fc.assert(fc.property(metadataArb, fc.boolean(), statusArb, (metadata, driven, status) => {
    const held = (metadata.finalizers ?? []).includes(LIFECYCLE_FINALIZER);
    const after = finalizersWanted(metadata, driven, status) ?? metadata.finalizers ?? [];
    if (driven) expect(after.includes(LIFECYCLE_FINALIZER)).toBe(held || metadata.deletionTimestamp === undefined);
    else expect(after.includes(LIFECYCLE_FINALIZER)).toBe(held && touched(status));
  }));
});
