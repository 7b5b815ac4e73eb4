import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, readlinkSync, renameSync, rmSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

// What a node changes on the host, and how okt puts it back: kernel settings, firewall chains, the
// bridge, network namespaces, mounts and cgroups. The original values are saved before the first
// change and kept until they are restored, so a start after a crash restores them as well.

/** Kernel settings okt sets (ip_forward) or the kubelet and kube-proxy change on start. */
export const TOUCHED_SYSCTLS = [
  'net.ipv4.ip_forward',
  'vm.overcommit_memory',
  'kernel.panic',
  'kernel.panic_on_oops',
  'net.ipv4.conf.all.route_localnet',
] as const;

/** Directories the kubelet creates on the host whatever its root dir (their paths are constants in it). */
export const KUBELET_HOST_DIRS = ['/var/log/pods', '/var/log/containers'] as const;

const SavedHost = z.object({
  savedAt: z.string(),
  sysctls: z.record(z.string(), z.string()),
  /** Of KUBELET_HOST_DIRS, those that did not exist before: removed again. */
  createdDirs: z.array(z.string()).default([]),
});
type SavedHost = z.infer<typeof SavedHost>;

function sysctlPath(key: string): string {
  return join('/proc/sys', ...key.split('.'));
}

export function readSysctl(key: string): string | undefined {
  try {
    return readFileSync(sysctlPath(key), 'utf8').trim();
  } catch {
    return undefined;
  }
}

export function writeSysctl(key: string, value: string): void {
  writeFileSync(sysctlPath(key), `${value}\n`);
}

/** Save the host's settings unless a previous start saved them already (then those are the originals). */
export function saveHostSettings(path: string): void {
  if (existsSync(path)) return;
  const sysctls: Record<string, string> = {};
  for (const key of TOUCHED_SYSCTLS) {
    const value = readSysctl(key);
    if (value !== undefined) sysctls[key] = value;
  }
  const createdDirs = KUBELET_HOST_DIRS.filter((dir) => !existsSync(dir));
  const saved: SavedHost = { savedAt: new Date().toISOString(), sysctls, createdDirs };
  writeFileSync(`${path}.partial`, JSON.stringify(saved, null, 2) + '\n');
  renameSync(`${path}.partial`, path);
}

/** Put back what saveHostSettings saved, then forget it. Returns the settings that were changed back. */
export function restoreHostSettings(path: string): string[] {
  if (!existsSync(path)) return [];
  const saved = SavedHost.parse(JSON.parse(readFileSync(path, 'utf8')));
  const restored: string[] = [];
  for (const [key, value] of Object.entries(saved.sysctls)) {
    if (readSysctl(key) === value) continue;
    try {
      writeSysctl(key, value);
      restored.push(`${key}=${value}`);
    } catch {
      // read-only in this sandbox: nothing was changed there either
    }
  }
  for (const dir of saved.createdDirs) rmSync(dir, { recursive: true, force: true });
  rmSync(path);
  return restored;
}

/**
 * The Pods' log files and their links, which the kubelet leaves in /var/log after its Pods are gone:
 * the links in /var/log/containers that point into /var/log/pods, and the Pod directories they point to.
 */
export function removePodLogs(): number {
  const [pods, containers] = KUBELET_HOST_DIRS;
  let removed = 0;
  if (existsSync(containers)) {
    for (const link of readdirSync(containers)) {
      const path = join(containers, link);
      try {
        if (readlinkSync(path).startsWith(`${pods}/`)) {
          rmSync(path);
          removed++;
        }
      } catch {
        // not a link
      }
    }
  }
  if (existsSync(pods)) {
    for (const dir of readdirSync(pods)) {
      rmSync(join(pods, dir), { recursive: true, force: true });
      removed++;
    }
  }
  return removed;
}

/**
 * Remove the iptables chains of kube-proxy, the kubelet (`KUBE-*`) and the CNI bridge plugin (`CNI-*`),
 * and every rule that jumps to them, leaving everything else as it is. `kube-proxy --cleanup` leaves
 * some behind (the kubelet's KUBE-FIREWALL).
 */
export function removeNodeFirewallChains(): number {
  let removed = 0;
  for (const [save, restore] of [
    ['iptables-save', 'iptables-restore'],
    ['ip6tables-save', 'ip6tables-restore'],
  ] as const) {
    let dump: string;
    try {
      dump = execFileSync(save, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      continue; // not installed, or no such table support
    }
    const { text, count } = withoutNodeChains(dump);
    if (count === 0) continue;
    execFileSync(restore, { input: text, stdio: ['pipe', 'ignore', 'pipe'] });
    removed += count;
  }
  return removed;
}

const NODE_CHAIN = /^(KUBE-|CNI-)/;

/** An iptables-save dump without okt's node chains and the rules that reference them (pure). */
export function withoutNodeChains(dump: string): { text: string; count: number } {
  let count = 0;
  const kept = dump.split('\n').filter((line) => {
    const declared = /^:(\S+)/.exec(line)?.[1];
    if (declared !== undefined && NODE_CHAIN.test(declared)) {
      count++;
      return false;
    }
    if (!line.startsWith('-A ')) return true;
    const chain = line.split(' ')[1] ?? '';
    const target = /\s-[jg]\s+(\S+)/.exec(line)?.[1] ?? '';
    if (NODE_CHAIN.test(chain) || NODE_CHAIN.test(target)) {
      count++;
      return false;
    }
    return true;
  });
  return { text: kept.join('\n'), count };
}

/** Remove a network link if it exists (the CNI bridge). */
export function removeLink(name: string): boolean {
  try {
    execFileSync('ip', ['link', 'show', name], { stdio: 'ignore' });
  } catch {
    return false;
  }
  execFileSync('ip', ['link', 'delete', name], { stdio: 'ignore' });
  return true;
}

/**
 * Remove the network namespaces the container runtime made for Pods (`cni-*` under /run/netns) that
 * no process uses any more; each holds a veth of the bridge until then.
 */
export function removeStalePodNetns(): number {
  const dir = '/run/netns';
  if (!existsSync(dir)) return 0;
  let removed = 0;
  for (const name of readdirSync(dir).filter((n) => n.startsWith('cni-'))) {
    try {
      const pids = execFileSync('ip', ['netns', 'pids', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      if (pids !== '') continue;
      execFileSync('ip', ['netns', 'delete', name], { stdio: 'ignore' });
      removed++;
    } catch {
      // gone meanwhile
    }
  }
  return removed;
}

/** The mount points at or under `dir`, in mount order (from /proc/self/mountinfo). */
export function mountsUnder(dir: string, mountinfo: string = readFileSync('/proc/self/mountinfo', 'utf8')): string[] {
  return mountinfo
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined)
    .map((point) => point.replace(/\\(\d{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8))))
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
}

/** Lazily unmount everything mounted under these directories, deepest first. */
export function unmountUnder(dirs: readonly string[]): number {
  const mountinfo = readFileSync('/proc/self/mountinfo', 'utf8');
  const mounts = dirs.flatMap((dir) => mountsUnder(dir, mountinfo)).sort((a, b) => b.length - a.length);
  let count = 0;
  for (const point of mounts) {
    try {
      execFileSync('umount', ['-l', point], { stdio: 'ignore' });
      count++;
    } catch {
      // unmounted with its parent already
    }
  }
  return count;
}

/** Remove the kubelet's empty `kubepods` cgroup trees (cgroupfs driver), deepest first. */
export function removeKubepodsCgroups(root = '/sys/fs/cgroup'): number {
  if (!existsSync(root)) return 0;
  const trees: string[] = [];
  for (const controller of readdirSync(root)) {
    const tree = join(root, controller, 'kubepods');
    if (existsSync(tree)) trees.push(tree);
  }
  if (existsSync(join(root, 'kubepods'))) trees.push(join(root, 'kubepods'));
  let removed = 0;
  const removeDeep = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) if (entry.isDirectory()) removeDeep(join(dir, entry.name));
    try {
      rmdirSync(dir);
      removed++;
    } catch {
      // still in use, or not empty of processes
    }
  };
  for (const tree of trees) removeDeep(tree);
  return removed;
}

/** The primary interface's IPv4 (of the default route): what the node and the API server serve on. */
export function primaryIPv4(): string {
  const route = execFileSync('ip', ['-4', 'route', 'get', '1.1.1.1'], { encoding: 'utf8' });
  const source = /\bsrc\s+(\d+\.\d+\.\d+\.\d+)/.exec(route)?.[1];
  if (!source) throw new Error(`no IPv4 source address in \`ip -4 route get 1.1.1.1\`: ${route.trim()}`);
  return source;
}

