const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Run `cleanup` (synchronous) if this process exits or is interrupted before the returned function is
 * called. A signal is passed on afterwards: if nobody else listens for it, it is re-raised so the
 * process still ends the way it would have.
 */
export function cleanupOnExit(cleanup: () => void): () => void {
  let done = false;
  const once = () => {
    if (done) return;
    done = true;
    cleanup();
  };
  const onSignal = (signal: NodeJS.Signals) => {
    disarm();
    once();
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
  };
  const disarm = () => {
    process.off('exit', once);
    for (const signal of SIGNALS) process.off(signal, onSignal);
  };
  process.once('exit', once);
  for (const signal of SIGNALS) process.once(signal, onSignal);
  return () => {
    done = true;
    disarm();
  };
}
