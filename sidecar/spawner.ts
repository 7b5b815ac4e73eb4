// The sidecar's side of its spawner process (sidecar/spawner-process.js): one per process, shared by
// its sidecars, started with the first of them and ended with the last one closed (started again at
// the next spawn if it ended meanwhile). It does not keep the process alive by itself: only while
// programs run.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// sidecar/spawner.ts in a checkout, dist/sidecar/spawner.js in the package (which ships sidecar/spawner-process.js as it is).
const SPAWNER_PROCESS = ['./spawner-process.js', '../../sidecar/spawner-process.js']
  .map((p) => fileURLToPath(new URL(p, import.meta.url)))
  .find((f) => existsSync(f))!;

export interface SpawnRequest {
  argv: readonly string[];
  env: Record<string, string>;
  cwd: string;
}

/** What the spawner reports about one program: spawned (if it started), its output, then exactly one of ended or failed. */
export interface SpawnListener {
  spawned(pid: number): void;
  stdout(text: string): void;
  stderr(text: string): void;
  ended(exitCode: number | null, signal: NodeJS.Signals | null): void;
  /** It could not start (`cannot run`), or the spawner ended while it ran (its group is then the listener's to kill). */
  failed(message: string): void;
}

type SpawnerMessage =
  | { id: number; type: 'spawned'; pid: number }
  | { id: number; type: 'stdout' | 'stderr'; text: string }
  | { id: number; type: 'ended'; exitCode: number | null; signal: NodeJS.Signals | null }
  | { id: number; type: 'error'; message: string };

class Spawner {
  private child: ChildProcess | undefined;
  private readonly listeners = new Map<number, SpawnListener>();
  private nextId = 1;
  private sidecars = 0;

  /** A sidecar starts: the spawner starts now, so that its first action does not wait for it. */
  retain(): void {
    this.sidecars++;
    this.start();
  }

  /** A sidecar closed (its actions and probes have ended): the spawner ends with the last one. */
  release(): void {
    this.sidecars--;
    if (this.sidecars === 0 && this.child !== undefined) this.lost(this.child, 'the spawner process was stopped: its last sidecar closed');
  }

  private start(): ChildProcess {
    if (this.child !== undefined) return this.child;
    const child = spawn(process.execPath, [SPAWNER_PROCESS], {
      // A group of its own: a Ctrl-C at a terminal reaches the sidecar, which stops its actions, not the spawner under them.
      detached: true,
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.unref();
    child.channel?.unref();
    child.on('message', (message: SpawnerMessage) => this.receive(message));
    child.on('error', (error) => this.lost(child, `the spawner process failed: ${error.message}`));
    child.on('exit', (code, signal) => this.lost(child, `the spawner process ended (${signal ?? `exit code ${code}`})`));
    this.child = child;
    return child;
  }

  run(request: SpawnRequest, listener: SpawnListener): void {
    const child = this.start();
    const id = this.nextId++;
    this.listeners.set(id, listener);
    if (this.listeners.size === 1) child.channel?.ref(); // a program runs: the sidecar waits for it
    child.send({ id, argv: request.argv, env: request.env, cwd: request.cwd });
  }

  private receive(message: SpawnerMessage): void {
    const listener = this.listeners.get(message.id);
    if (listener === undefined) return;
    switch (message.type) {
      case 'spawned':
        return listener.spawned(message.pid);
      case 'stdout':
        return listener.stdout(message.text);
      case 'stderr':
        return listener.stderr(message.text);
      case 'ended':
        this.forget(message.id);
        return listener.ended(message.exitCode, message.signal);
      case 'error':
        this.forget(message.id);
        return listener.failed(message.message);
    }
  }

  private forget(id: number): void {
    this.listeners.delete(id);
    if (this.listeners.size === 0) this.child?.channel?.unref();
  }

  /** The spawner is gone, its channel failed, or it is stopped: what it ran has no one to report on it; the next spawn starts another. */
  private lost(child: ChildProcess, message: string): void {
    if (this.child !== child) return;
    this.child = undefined;
    if (child.connected) child.disconnect(); // a spawner still running kills what it started, then exits
    const orphans = [...this.listeners.values()];
    this.listeners.clear();
    for (const listener of orphans) listener.failed(message);
  }
}

export const spawner = new Spawner();
