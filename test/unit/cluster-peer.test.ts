import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { peerSourceDigest } from '../../src/cluster/peer.ts';

/** A module like bench/peer: go.mod, go.sum, a shared package and two commands. */
function peerModule(): string {
  const dir = mkdtempSync(join(tmpdir(), 'okt-peer-module-'));
  writeFileSync(join(dir, 'go.mod'), 'module okt.dev/bench-peer\n\ngo 1.26.0\n');
  writeFileSync(join(dir, 'go.sum'), 'k8s.io/client-go v0.37.2 h1:x=\n');
  for (const sub of ['walk', 'client-go', 'controller-runtime']) {
    mkdirSync(join(dir, sub));
    writeFileSync(join(dir, sub, 'main.go'), `package ${sub === 'walk' ? 'walk' : 'main'}\n`);
  }
  return dir;
}

describe('the cache key of a peer binary', () => {
  it('changes with any of the module sources a build reads: go.mod, go.sum, and a .go file of a package the command imports', () => {
    for (const file of ['go.mod', 'go.sum', join('walk', 'main.go'), join('client-go', 'main.go')]) {
      const dir = peerModule();
      const before = peerSourceDigest(dir, './client-go');
      writeFileSync(join(dir, file), `${readFileSync(join(dir, file), 'utf8')}// changed\n`);
      expect(peerSourceDigest(dir, './client-go'), file).not.toBe(before);
    }
  });

  it('changes when a source file moves, and not with files a build does not read', () => {
    const dir = peerModule();
    const before = peerSourceDigest(dir, './client-go');
    writeFileSync(join(dir, 'README.md'), 'notes\n');
    writeFileSync(join(dir, 'walk', 'okt-peer'), 'a binary left behind\n');
    expect(peerSourceDigest(dir, './client-go')).toBe(before);
    writeFileSync(join(dir, 'walk', 'other.go'), readFileSync(join(dir, 'walk', 'main.go')));
    expect(peerSourceDigest(dir, './client-go')).not.toBe(before);
  });

  it('differs between the commands of one module', () => {
    const dir = peerModule();
    expect(peerSourceDigest(dir, './client-go')).not.toBe(peerSourceDigest(dir, './controller-runtime'));
  });

  it('bench/peer pins client-go 0.37.2 and controller-runtime 0.25.2, the pair of Kubernetes 1.37', () => {
    const goMod = readFileSync(fileURLToPath(new URL('../../bench/peer/go.mod', import.meta.url)), 'utf8');
    expect(goMod).toMatch(/^\tk8s\.io\/client-go v0\.37\.2$/m);
    expect(goMod).toMatch(/^\tsigs\.k8s\.io\/controller-runtime v0\.25\.2$/m);
  });
});
