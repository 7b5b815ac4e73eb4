// The in-cluster demo's kubectl(): a kubectl that ends before reading what it was given (here one
// that never reads stdin) rejects or resolves by its exit code, never with an uncaught EPIPE (the
// in-cluster suite once ended red so, with every test passed).
import { describe, expect, it } from 'vitest';
import { kubectl } from '../../src/demo/in-cluster/kubectl.ts';

describe('the demo\'s kubectl()', () => {
  it('answers by kubectl\'s exit when kubectl does not read its input', async () => {
    const unread = 'x'.repeat(8 << 20);
    await expect(kubectl('/nonexistent-kubeconfig', ['version', '--client', '-o', 'json'], unread)).resolves.toContain('clientVersion');
    await expect(kubectl('/nonexistent-kubeconfig', ['no-such-command'], unread)).rejects.toThrow(/kubectl no-such-command failed \(exit 1\)/);
  });
});
