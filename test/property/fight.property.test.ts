// A fight over an object okt puts back stays bounded: whatever the times another manager changes it
// at, okt puts it back at most FIGHT_REPAIRS times in any FIGHT_WINDOW_MS.
import fc from 'fast-check';
import { expect, test } from 'vitest';
import { defineGraph } from '../../src/graph/index.ts';
import { FIGHT_REPAIRS, FIGHT_WINDOW_MS, OwnedObjects } from '../../src/controller/lifecycle/objects/owned.ts';
import type { KubeTransport } from '../../src/kube/transport/index.ts';

const graph = defineGraph({ name: 'fight', entry: 'A', nodes: { A: {} } });

test('okt re-applies one object at most FIGHT_REPAIRS times within any FIGHT_WINDOW_MS', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 0, max: 40_000 }), { minLength: 1, maxLength: 60 }), fc.boolean(), (gaps, deleted) => {
      let now = 0;
      const owned = new OwnedObjects({ graph, transport: {} as KubeTransport, owner: { apiVersion: 'okt.dev/v1', kind: 'Site' }, enqueue: () => undefined, now: () => now });
      const repairedAt: number[] = [];
      for (const gap of gaps) {
        now += gap;
        const drift = deleted ? { kind: 'deleted' } as const : { kind: 'changed', manager: 'fighter' } as const;
        if (owned.mayRepair('ns/web', 'v1', 'ConfigMap', 'ns', 'web-config', drift) === undefined) repairedAt.push(now);
      }
      owned.close();
      for (const start of repairedAt) {
        expect(repairedAt.filter((at) => at >= start && at < start + FIGHT_WINDOW_MS).length).toBeLessThanOrEqual(FIGHT_REPAIRS);
      }
    }),
  );
});
