import { describe, expect, it } from 'vitest';
import { withoutNodeChains } from '../../src/cluster/host.ts';

describe('withoutNodeChains', () => {
  it("removes the node's KUBE-* and CNI-* chains and every rule that jumps to them, and nothing else", () => {
    const dump = [
      '*nat',
      ':PREROUTING ACCEPT [0:0]',
      ':POSTROUTING ACCEPT [0:0]',
      ':DOCKER - [0:0]',
      ':KUBE-SERVICES - [0:0]',
      ':CNI-abc123 - [0:0]',
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      '-A PREROUTING -j DOCKER',
      '-A POSTROUTING -s 10.244.0.2/32 -j CNI-abc123',
      '-A CNI-abc123 -d 10.244.0.0/24 -j ACCEPT',
      '-A KUBE-SERVICES -j RETURN',
      '-A POSTROUTING -s 172.17.0.0/16 -j MASQUERADE',
      'COMMIT',
    ].join('\n');
    const { text, count } = withoutNodeChains(dump);
    expect(text.split('\n')).toEqual([
      '*nat',
      ':PREROUTING ACCEPT [0:0]',
      ':POSTROUTING ACCEPT [0:0]',
      ':DOCKER - [0:0]',
      '-A PREROUTING -j DOCKER',
      '-A POSTROUTING -s 172.17.0.0/16 -j MASQUERADE',
      'COMMIT',
    ]);
    expect(count).toBe(6);
  });

  it('leaves a host without them as it is', () => {
    const dump = '*filter\n:INPUT ACCEPT [0:0]\n-A INPUT -i lo -j ACCEPT\nCOMMIT\n';
    expect(withoutNodeChains(dump)).toEqual({ text: dump, count: 0 });
  });
});
