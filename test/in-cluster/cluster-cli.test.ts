// `okt cluster up --node` and `okt cluster down` as a user runs them: a Ready node, and the host exactly
// as it was afterwards, also when the previous node was killed rather than stopped.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { TOUCHED_SYSCTLS, readSysctl } from '../../src/cluster/host.ts';
import { okt, run } from '../fixtures/okt-process.ts';

const STATE = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'okt', 'cluster', 'state.json');

/** What a node changes on the host, as a value to compare. */
function hostSnapshot() {
  const sysctls = Object.fromEntries(TOUCHED_SYSCTLS.map((key) => [key, readSysctl(key)]));
  const chains = execFileSync('iptables-save', { encoding: 'utf8' }).split('\n').filter((line) => /KUBE-|CNI-/.test(line));
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' }).split('\n').map((line) => line.split(':')[1]?.trim()).filter(Boolean);
  const netns = existsSync('/run/netns') ? readdirSync('/run/netns') : [];
  const podLogs = ['/var/log/pods', '/var/log/containers'].filter(existsSync).flatMap((dir) => readdirSync(dir));
  return { sysctls, chains, links, netns, podLogs, processes: nodeProcesses() };
}

/** Processes whose command line names the node's directories. */
function nodeProcesses(): string[] {
  return readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .flatMap((pid) => {
      try {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        return cmdline.includes('/var/lib/okt-node') || cmdline.includes('/run/okt-node') ? [cmdline.split('\0')[0]!] : [];
      } catch {
        return [];
      }
    });
}

function killEverythingRecorded(): void {
  const state = JSON.parse(readFileSync(STATE, 'utf8')) as { processes: { pid: number }[]; node: { processes: { pid: number }[] } };
  for (const { pid } of [...state.processes, ...state.node.processes]) process.kill(pid, 'SIGKILL');
}

async function nodeReady(): Promise<string | undefined> {
  const env = (await okt(['cluster', 'env'])).stdout;
  const kubeconfig = /KUBECONFIG='(.*)'/.exec(env)?.[1];
  const nodes = await run('kubectl', ['get', 'nodes', '-o', 'jsonpath={.items[*].status.conditions[?(@.type=="Ready")].status}'], { env: { KUBECONFIG: kubeconfig ?? '' } });
  return nodes.stdout;
}

describe('okt cluster up --node', () => {
  it('starts a Ready node, survives a crash of every process, and `down` leaves the host as it was', async () => {
    expect(existsSync(STATE), `a control plane of this user is up (${STATE}): stop it with \`npx okt cluster down\` first`).toBe(false);
    const before = hostSnapshot();

    const up = await okt(['cluster', 'up', '--node']);
    expect(up.code, up.stderr).toBe(0);
    expect(up.stdout).toContain('Node okt-node Ready');
    expect(await nodeReady()).toBe('True');
    expect(readSysctl('net.ipv4.ip_forward')).toBe('1');

    // A crash: every process killed, and the record of them lost with it.
    killEverythingRecorded();
    rmSync(STATE);
    const again = await okt(['cluster', 'up', '--node']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(/repaired what a previous node left: \d+ processes killed/);
    expect(await nodeReady()).toBe('True');

    const down = await okt(['cluster', 'down']);
    expect(down.code, down.stderr).toBe(0);
    expect(down.stdout).toMatch(/Node stopped, host put back: .*settings restored/);
    expect(hostSnapshot()).toEqual(before);
    expect((await okt(['cluster', 'down'])).stdout).toContain('No control plane is up');
  }, 300_000);
});
