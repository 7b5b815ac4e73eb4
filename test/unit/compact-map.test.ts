import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { CompactMap } from '../../src/controller/compact-map.ts';
import { LifecycleSim } from '../fixtures/lifecycle-sim.ts';

/** A database CR as the API server holds it after a walk Start > Running > Servicing > Running, at rest. */
function walkedDatabase(name: string, startedAt = 0) {
  const sim = new LifecycleSim(databaseGraph, 'Running');
  // Each CR's own times, as real ones have.
  sim.clock = startedAt;
  sim.tick = 1.237;
  for (const desired of ['Running', 'Servicing', 'Running']) {
    sim.setDesired(desired);
    for (let i = 0; i < 10; i++) sim.reconcile();
  }
  sim.delivered = sim.status!.sequence;
  sim.reconcile();
  expect(sim.status?.state).toBe('Running');
  return {
    apiVersion: 'okt.dev/v1alpha1',
    kind: 'Database',
    metadata: {
      name, namespace: 'tenant-a', uid: randomUUID(), resourceVersion: String(1000 + name.length), generation: sim.generation,
      creationTimestamp: new Date().toISOString(), finalizers: ['okt.dev/lifecycle'], labels: { 'okt.dev/shard-key': '17' },
    },
    spec: sim.spec,
    status: sim.status,
  };
}

describe('CompactMap (the informer cache)', () => {
  it('gives back what was stored, a copy of its own each time, as JSON and deflated', () => {
    const map = new CompactMap<ReturnType<typeof walkedDatabase>>({ compactAfterMs: 0 });
    const small = { ...walkedDatabase('bare'), status: undefined };
    map.set('tenant-a/bare', small);
    const objects = Array.from({ length: 20 }, (_, i) => walkedDatabase(`db-${i}`));
    for (const obj of objects.slice(0, 10)) map.set(`tenant-a/${obj.metadata.name}`, obj);
    expect(map.compactIdle()).toBe(11);
    for (const obj of objects.slice(10)) map.set(`tenant-a/${obj.metadata.name}`, obj);
    expect(map.size).toBe(21);
    expect(map.uncompacted).toBe(10);
    expect(map.get('tenant-a/bare')).toEqual(JSON.parse(JSON.stringify(small)));
    for (const obj of objects) expect(map.get(`tenant-a/${obj.metadata.name}`)).toEqual(obj);
    const read = map.get('tenant-a/db-3')!;
    read.metadata.name = 'changed';
    expect(map.get('tenant-a/db-3')!.metadata.name).toBe('db-3');
    expect([...map.values()].map((o) => o.metadata.name).sort()).toEqual(['bare', ...objects.map((o) => o.metadata.name)].sort());
    expect(map.delete('tenant-a/db-3')).toBe(true);
    expect(map.has('tenant-a/db-3')).toBe(false);
    expect(map.get('tenant-a/db-3')).toBeUndefined();
  });

  it('keeps an object as its JSON until it is unchanged for compactAfterMs, then deflated; a set makes it JSON again', () => {
    let now = 0;
    const map = new CompactMap<ReturnType<typeof walkedDatabase>>({ compactAfterMs: 1000, now: () => now });
    const [a, b] = [walkedDatabase('a'), walkedDatabase('b')];
    map.set('a', a);
    now = 600;
    map.set('b', b);
    const asJson = map.storedBytes('a')!;
    expect(asJson).toBe(JSON.stringify(a).length + 1);
    now = 999;
    expect(map.compactIdle()).toBe(0);
    now = 1000;
    expect(map.compactIdle()).toBe(1);
    expect(map.uncompacted).toBe(1);
    expect(map.storedBytes('a')!).toBeLessThan(asJson / 2);
    expect(map.get('a')).toEqual(a);
    now = 1500;
    map.set('a', a);
    now = 1600;
    expect(map.compactIdle()).toBe(1);
    expect(map.storedBytes('b')!).toBeLessThan(asJson / 2);
    expect(map.storedBytes('a')).toBe(asJson);
    expect(map.delete('a')).toBe(true);
    expect(map.uncompacted).toBe(0);
    expect([...map.values()]).toEqual([b]);
  });

  it('keeps a walked CR at rest in under a tenth of its JSON (CRs of one kind differ in names, uids and times)', () => {
    const map = new CompactMap<ReturnType<typeof walkedDatabase>>({ compactAfterMs: 0 });
    let json = 0;
    let stored = 0;
    for (let i = 0; i < 200; i++) {
      const obj = walkedDatabase(`database-${i}`, i * 3_607.5);
      const key = `tenant-a/${obj.metadata.name}`;
      map.set(key, obj);
      map.compactIdle();
      json += JSON.stringify(obj).length;
      stored += map.storedBytes(key)!;
    }
    expect(stored / json).toBeLessThan(0.1);
  });
});
