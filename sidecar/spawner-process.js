// The sidecar's spawner: a small Node process, started once by the sidecar (sidecar/spawner.ts), that
// starts the programs of actions and probes on its behalf. Forking the sidecar itself, a process of
// ~120 MB, blocks its event loop for milliseconds at every spawn; forking this one costs far less.
// Plain JavaScript, so that it starts without type stripping and stays small, in a checkout and in
// the package alike.
//
// It holds no policy: it spawns each program in a process group of its own and reports over the IPC
// channel its pid, its output as text and how it ended. Timeouts, kills (the sidecar signals the
// process groups itself) and reading the output stay in the sidecar (sidecar/process.ts).
// When the channel closes (the sidecar exited, or was killed), it kills every process group it
// started and exits: no program outlives its sidecar.
import { spawn } from 'node:child_process';

/** How long an exited program's pipes may stay open (held by a grandchild that left its group). */
const PIPES_AFTER_EXIT_MS = 500;

/** The pids (= process group ids) of the programs started and not yet ended. */
const groups = new Set();

const send = (message) => {
  if (process.connected) process.send(message);
};

/** Request: {id, argv, env, cwd}. Answers, by id: spawned {pid}, stdout/stderr {text}, then one of ended {exitCode, signal} or error {message}. */
function start({ id, argv, env, cwd }) {
  const [program, ...args] = argv;
  let child;
  try {
    // detached: a process group of its own, so that killing the group reaches its children too
    child = spawn(program, args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (error) {
    send({ id, type: 'error', message: error.message }); // an argument Node refuses (a NUL byte in the environment, say)
    return;
  }
  const pid = child.pid;
  if (pid !== undefined) {
    groups.add(pid);
    send({ id, type: 'spawned', pid });
  }
  let done = false;
  const end = (message) => {
    if (done) return;
    done = true;
    if (pid !== undefined) groups.delete(pid);
    send(message);
  };
  child.stdout.setEncoding('utf8').on('data', (text) => send({ id, type: 'stdout', text }));
  child.stderr.setEncoding('utf8').on('data', (text) => send({ id, type: 'stderr', text }));
  child.on('error', (error) => end({ id, type: 'error', message: error.message }));
  child.on('exit', (exitCode, signal) => {
    const ended = { id, type: 'ended', exitCode, signal };
    const late = setTimeout(() => {
      child.stdout.destroy();
      child.stderr.destroy();
      end(ended);
    }, PIPES_AFTER_EXIT_MS);
    child.once('close', () => {
      clearTimeout(late);
      end(ended);
    });
  });
}

process.on('message', start);
process.on('disconnect', () => {
  for (const pid of groups) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  process.exit(0);
});
