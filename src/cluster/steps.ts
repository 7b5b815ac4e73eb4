// What every provisioning shares: its error, its numbered progress lines, and how a binary enters the cache.
import { chmodSync, copyFileSync, mkdirSync, renameSync } from 'node:fs';
import { dirname } from 'node:path';

/** okt cannot provision on this machine; the message says what to do instead. */
export class ProvisionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProvisionError';
  }
}

/** Copy then rename in the same directory, so an interrupted run never leaves half a binary behind. */
export function installAtomically(from: string, to: string): void {
  mkdirSync(dirname(to), { recursive: true });
  const partial = `${to}.partial-${process.pid}`;
  copyFileSync(from, partial);
  chmodSync(partial, 0o755);
  renameSync(partial, to);
}

/** Numbered progress lines: `[i/total] title ...`, then `done in N s`. */
export class Steps {
  private done = 0;
  private readonly started = Date.now();
  private readonly progress: (line: string) => void;
  private readonly total: number;
  constructor(progress: (line: string) => void, total: number) {
    this.progress = progress;
    this.total = total;
  }

  async run<T>(title: string, work: () => T | Promise<T>): Promise<T> {
    this.done += 1;
    const t0 = Date.now();
    this.progress(`okt cluster: [${this.done}/${this.total}] ${title} ...`);
    const result = await work();
    this.progress(`okt cluster: [${this.done}/${this.total}] done in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    return result;
  }

  skip(title: string): void {
    this.done += 1;
    this.progress(`okt cluster: [${this.done}/${this.total}] ${title}`);
  }

  totalSeconds(): string {
    return ((Date.now() - this.started) / 1000).toFixed(0);
  }
}
