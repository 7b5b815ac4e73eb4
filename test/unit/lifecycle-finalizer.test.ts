import { describe, expect, it } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { finalizersWanted } from '../../src/controller/lifecycle/cleanup.ts';
import { initialStatus } from '../../src/controller/lifecycle/status/conditions.ts';
import { LIFECYCLE_FINALIZER, type LifecycleStatus } from '../../src/kube/lifecycle-resource.ts';

// Which finalizers okt sets (finalizersWanted): its own on a CR it drives, before anything runs; none
// on one it does not drive while nothing ran or was made for it, also when an admission policy
// (okt manifests --finalizer-policy) put it on at the creation.

const now = '2026-11-28T08:00:00Z';
const entry = initialStatus(databaseGraph, 1, now);
const moved: LifecycleStatus = { ...entry, state: 'Running', transition: 1, path: ['Start', 'Running'], pathSummary: 'Start > Running' };
const withObjects: LifecycleStatus = { ...entry, objects: [{ id: 'service', apiVersion: 'v1', kind: 'Service', name: 'pg' }] } as LifecycleStatus;
const other = 'example.com/keep';

describe('finalizersWanted', () => {
  it('puts okt\'s finalizer on a CR it drives, after the CR\'s own, once; not on a deleted one', () => {
    expect(finalizersWanted({}, true, undefined)).toEqual([LIFECYCLE_FINALIZER]);
    expect(finalizersWanted({ finalizers: [other] }, true, entry)).toEqual([other, LIFECYCLE_FINALIZER]);
    expect(finalizersWanted({ finalizers: [LIFECYCLE_FINALIZER] }, true, undefined)).toBeUndefined();
    expect(finalizersWanted({ deletionTimestamp: now }, true, undefined)).toBeUndefined();
  });

  it('puts none on a CR it does not drive (spec unreadable, sidecar refused)', () => {
    expect(finalizersWanted({}, false, undefined)).toBeUndefined();
    expect(finalizersWanted({ finalizers: [other] }, false, moved)).toBeUndefined();
  });

  it('takes off one an admission policy put on a CR it does not drive while nothing ran or was made for it, leaving the CR\'s own', () => {
    expect(finalizersWanted({ finalizers: [LIFECYCLE_FINALIZER] }, false, undefined)).toEqual([]);
    expect(finalizersWanted({ finalizers: [other, LIFECYCLE_FINALIZER] }, false, entry)).toEqual([other]);
    expect(finalizersWanted({ finalizers: [LIFECYCLE_FINALIZER], deletionTimestamp: now }, false, entry)).toEqual([]);
  });

  it('keeps it on a CR it no longer drives once something ran or was made, or whose status it cannot read', () => {
    const held = { finalizers: [LIFECYCLE_FINALIZER] };
    expect(finalizersWanted(held, false, moved)).toBeUndefined();
    expect(finalizersWanted(held, false, withObjects)).toBeUndefined();
    expect(finalizersWanted(held, false, { ...entry, operation: { id: 'op', node: 'Start', phase: 'Running' } } as LifecycleStatus)).toBeUndefined();
    expect(finalizersWanted(held, false, { invalid: 'status.state: Required' })).toBeUndefined();
  });
});
