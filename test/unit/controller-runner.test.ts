import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  Controller, ExponentialFailureRateLimiter, Informer, SaidOnObjectError, WorkQueue, addControllerRuntimeFlags, controllerRuntimeSettings,
  createControllerMetrics, createLogger, stripManagedFields,
} from '../../src/controller/index.ts';
import { KubeApiError, KubeTransport } from '../../src/kube/transport/index.ts';
import type { ReconcileResult } from '../../src/controller/controller.ts';
import { fcRuns } from '../fixtures/fast-check.ts';

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = (): void => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

function captureLogs(): { lines: Record<string, unknown>[]; logger: ReturnType<typeof createLogger> } {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger({ level: 'debug', destination }) };
}

describe('Controller', () => {
  it('never reconciles one key on two workers at once, and reconciles every key added after its last start', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('a', 'b', 'c', 'd'), fc.nat({ max: 3 })), { minLength: 1, maxLength: 40 }),
        fc.integer({ min: 1, max: 6 }),
        async (adds, workers) => {
          const inFlight = new Set<string>();
          const owed = new Set<string>();
          let overlap = false;
          const controller = new Controller({
            name: 'prop', workers, logger: createLogger({ level: 'silent' }),
            reconcile: async (key) => {
              if (inFlight.has(key)) overlap = true;
              inFlight.add(key);
              owed.delete(key);
              await sleep(0);
              inFlight.delete(key);
            },
          });
          controller.start();
          for (const [key, pause] of adds) {
            controller.enqueue(key);
            owed.add(key);
            for (let i = 0; i < pause; i += 1) await sleep(0);
          }
          await controller.stop();
          expect(overlap).toBe(false);
          expect([...owed]).toEqual([]);
        },
      ),
      { numRuns: fcRuns(50) },
    );
  });

  it('retries a failing key with backoff, forgets the backoff on success, and counts results', async () => {
    const metrics = createControllerMetrics({ processMetrics: false });
    const { lines, logger } = captureLogs();
    const retriesSeen: number[] = [];
    let calls = 0;
    const done = deferred();
    const queue = new WorkQueue({ rateLimiter: new ExponentialFailureRateLimiter(1, 10) });
    const controller = new Controller({
      name: 'flaky', metrics, logger, queue, workers: 2,
      reconcile: async (key, { log, retries }) => {
        calls += 1;
        retriesSeen.push(retries);
        log.info('attempt');
        if (calls < 3) throw new Error(`boom ${calls}`);
        done.resolve();
        expect(key).toBe('ns/flaky');
      },
    });
    controller.start();
    controller.enqueue('ns/flaky');
    await done.promise;
    await controller.stop();
    expect(retriesSeen).toEqual([0, 1, 2]);
    expect(queue.numRequeues('ns/flaky')).toBe(0);
    const total = await metrics.reconcileTotal.get();
    const byResult = Object.fromEntries(total.values.map((v) => [v.labels.result, v.value]));
    expect(byResult).toEqual({ error: 2, success: 1 });
    // Every line about the reconcile carries the key.
    const reconcileLines = lines.filter((line) => line.msg === 'attempt' || line.msg === 'reconcile failed' || line.msg === 'reconciled');
    expect(reconcileLines).toHaveLength(6);
    for (const line of reconcileLines) expect(line).toMatchObject({ key: 'ns/flaky', controller: 'flaky' });
    expect(lines.find((line) => line.msg === 'reconcile failed')).toMatchObject({ level: 'error', err: { message: 'boom 1' } });
  });

  it('a write conflict (409) is an expected retry: one info line without a stack, and the key is looked at again', async () => {
    const { lines, logger } = captureLogs();
    let calls = 0;
    const done = deferred();
    const controller = new Controller({
      name: 'racy', logger, queue: new WorkQueue({ rateLimiter: new ExponentialFailureRateLimiter(1, 10) }),
      reconcile: async () => {
        calls += 1;
        if (calls === 1) throw new KubeApiError({ statusCode: 409, method: 'PUT', path: '/apis/okt.dev/v1alpha1/namespaces/ns/databases/db/status', status: { kind: 'Status', reason: 'Conflict', message: 'the object has been modified; please apply your changes to the latest version and try again' } });
        done.resolve();
      },
    });
    controller.start();
    controller.enqueue('ns/db');
    await done.promise;
    await controller.stop();
    const conflict = lines.filter((line) => String(line.msg).includes('conflict'));
    expect(conflict).toHaveLength(1);
    expect(conflict[0]).toMatchObject({ level: 'info', key: 'ns/db', retries: 1 });
    expect(conflict[0]!.msg).toBe('write conflict, looked at again: PUT /apis/okt.dev/v1alpha1/namespaces/ns/databases/db/status: 409 Conflict: the object has been modified; please apply your changes to the latest version and try again');
    expect(conflict[0]).not.toHaveProperty('err');
    expect(lines.filter((line) => line.level === 'error')).toEqual([]);
  });

  it('a failure said on the object already (an owned object\'s apply refused by admission, a 422 of another object) is its message in one warning, not the CR failing its CRD', async () => {
    const { lines, logger } = captureLogs();
    let calls = 0;
    const done = deferred();
    const said = 'ConfigMap web-config (object "config") was not applied: configmaps "web-config" is forbidden: ValidatingAdmissionPolicy \'refuse\' with binding \'refuse\' denied request: not now';
    const refused = new KubeApiError({ statusCode: 422, method: 'PATCH', path: '/api/v1/namespaces/ns/configmaps/web-config', status: { kind: 'Status', reason: 'Invalid', message: 'configmaps "web-config" is forbidden: ValidatingAdmissionPolicy \'refuse\' with binding \'refuse\' denied request: not now' } });
    const controller = new Controller({
      name: 'owner', logger, queue: new WorkQueue({ rateLimiter: new ExponentialFailureRateLimiter(1, 10) }),
      reconcile: async () => {
        calls += 1;
        if (calls === 1) throw new SaidOnObjectError(said, { cause: refused });
        done.resolve();
      },
    });
    controller.start();
    controller.enqueue('ns/web');
    await done.promise;
    await controller.stop();
    const failed = lines.filter((line) => line.level === 'warn' || line.level === 'error');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ level: 'warn', key: 'ns/web', retries: 1, msg: said });
    expect(failed[0]).not.toHaveProperty('err');
  });

  it('a write the API server refuses because the stored object fails its CRD now is one line naming the field, no stack trace, retried with backoff', async () => {
    const { lines, logger } = captureLogs();
    let calls = 0;
    const done = deferred();
    const message = 'Database.okt.dev "old" is invalid: spec.sidecar.url: Invalid value: "xP7:": spec.sidecar.url in body should match \'^[hH]\'';
    const controller = new Controller({
      name: 'stored', logger, queue: new WorkQueue({ rateLimiter: new ExponentialFailureRateLimiter(1, 10) }),
      reconcile: async () => {
        calls += 1;
        if (calls < 3) throw new KubeApiError({ statusCode: 422, method: 'PUT', path: '/apis/okt.dev/v1alpha1/namespaces/ns/databases/old/status', status: { kind: 'Status', reason: 'Invalid', message } });
        done.resolve();
      },
    });
    controller.start();
    controller.enqueue('ns/old');
    await done.promise;
    await controller.stop();
    const failed = lines.filter((line) => line.level === 'error');
    expect(failed).toHaveLength(2);
    for (const line of failed) {
      expect(line).toMatchObject({ key: 'ns/old', msg: expect.stringContaining('spec.sidecar.url in body should match') });
      expect(line.msg).toContain('edit the fields named');
      expect(line).not.toHaveProperty('err');
    }
  });

  it('reconciles again after requeueAfter', async () => {
    let calls = 0;
    const second = deferred();
    const controller = new Controller({
      name: 'later', logger: createLogger({ level: 'silent' }),
      reconcile: async () => {
        calls += 1;
        if (calls === 1) return { requeueAfter: 5 };
        second.resolve();
        return undefined;
      },
    });
    controller.start();
    controller.enqueue('k');
    await second.promise;
    await controller.stop();
    expect(calls).toBe(2);
  });

  it("drops a key's pending look once a later reconcile of it succeeds without asking for one", async () => {
    vi.useFakeTimers();
    try {
      const results: (ReconcileResult | undefined)[] = [{ requeueAfter: 1_000 }, undefined];
      let calls = 0;
      const controller = new Controller({ name: 'superseded', logger: createLogger({ level: 'silent' }), reconcile: async () => results[calls++] });
      controller.start();
      controller.enqueue('k');
      await vi.advanceTimersByTimeAsync(10);
      expect([calls, controller.queue.delayed]).toEqual([1, 1]);
      // The action ended before the poll: a watch event brings the key back, and that reconcile asks for nothing.
      controller.enqueue('k');
      await vi.advanceTimersByTimeAsync(10);
      expect([calls, controller.queue.delayed]).toEqual([2, 0]);
      await vi.advanceTimersByTimeAsync(2_000);
      expect(calls).toBe(2);
      await controller.stop();
    } finally {
      vi.useRealTimers();
    }
  });

  it('rejects a worker count that is not a positive integer, naming it', () => {
    expect(() => new Controller({ name: 'x', workers: 0, reconcile: async () => undefined })).toThrow(/workers/);
  });
});

describe('stripManagedFields', () => {
  it('drops managedFields and the last-applied annotation, keeping everything else', () => {
    const obj = {
      apiVersion: 'x/v1', kind: 'X', spec: { a: 1 },
      metadata: {
        name: 'n', namespace: 'ns', resourceVersion: '5', managedFields: [{ manager: 'kubectl' }],
        annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}', keep: 'me' },
      },
    };
    expect(stripManagedFields(obj)).toEqual({
      apiVersion: 'x/v1', kind: 'X', spec: { a: 1 },
      metadata: { name: 'n', namespace: 'ns', resourceVersion: '5', annotations: { keep: 'me' } },
    });
    expect(obj.metadata.managedFields).toHaveLength(1);
  });
});

describe('controller runtime flags', () => {
  const parse = (argv: string[]) => {
    const command = addControllerRuntimeFlags(new Command('operator').exitOverride());
    command.parse(argv, { from: 'user' });
    return controllerRuntimeSettings(command.opts());
  };

  it('defaults: 4 workers, health on 8081, no leader election, watches idle for 180 s taken for dead', () => {
    expect(parse([])).toEqual({ workers: 4, health: { port: 8081, host: '0.0.0.0' }, leaderElection: false, watchIdleTimeoutMs: 180_000, requestTimeoutMs: 30_000, logLevel: 'info' });
  });

  it('--watch-idle-timeout in seconds, 0 for never', () => {
    expect(parse(['--watch-idle-timeout', '2.5']).watchIdleTimeoutMs).toBe(2500);
    expect(parse(['--watch-idle-timeout', '0']).watchIdleTimeoutMs).toBe(0);
  });

  it('--request-timeout in seconds, more than 0', () => {
    expect(parse(['--request-timeout', '4.5']).requestTimeoutMs).toBe(4500);
    expect(() => parse(['--request-timeout', '0'])).toThrow(/--request-timeout: expected a positive number of seconds, got "0"/);
  });

  it('leader election with client-go durations, overridable', () => {
    expect(parse(['--leader-elect', '--leader-election-id', 'db-op', '--retry-period', '0.5']).leaderElection).toEqual({
      namespace: 'default', name: 'db-op', leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 500,
    });
  });

  it('names the flag of a bad value', () => {
    expect(() => parse(['--workers', '0'])).toThrow(/--workers/);
    expect(() => parse(['--log-level', 'loud'])).toThrow(/--log-level/);
    expect(() => parse(['--leader-elect', '--lease-duration', 'soon'])).toThrow(/--lease-duration/);
    expect(() => parse(['--watch-idle-timeout', '-1'])).toThrow(/--watch-idle-timeout/);
  });
});

describe('Controller that never started (a standby replica)', () => {
  it('stops at once, dropping the keys it queued; started afterwards, it reconciles nothing', async () => {
    const reconciled: string[] = [];
    const controller = new Controller({
      name: 'standby', logger: createLogger({ level: 'silent' }), reconcile: async (key) => void reconciled.push(key),
    });
    controller.enqueue('a');
    await controller.stop();
    expect(controller.queue.shuttingDown).toBe(true);
    expect(controller.queue.length).toBe(0);
    controller.start();
    controller.enqueue('b');
    await sleep(10);
    expect(controller.started).toBe(false);
    expect(reconciled).toEqual([]);
  });
});

describe('Controller stopped without drain (leadership lost)', () => {
  it('lets the running reconcile finish, drops the queued keys and starts none after the stop', async () => {
    const started: string[] = [];
    const finished: string[] = [];
    const gate = deferred();
    const holding = deferred();
    const controller = new Controller({
      name: 'lost', workers: 1, logger: createLogger({ level: 'silent' }),
      reconcile: async (key) => {
        started.push(key);
        holding.resolve();
        await gate.promise;
        finished.push(key);
        return { requeueAfter: 1 };
      },
    });
    for (const key of ['a', 'b', 'c']) controller.enqueue(key);
    controller.start();
    await holding.promise;
    expect(controller.queue.length).toBe(2);

    const stopped = controller.stop({ drain: false });
    expect(controller.queue.length).toBe(0);
    controller.enqueue('d');
    gate.resolve();
    await stopped;
    expect(started).toEqual(['a']);
    expect(finished).toEqual(['a']);
    // Its requeueAfter was not kept either.
    expect(controller.queue.delayed).toBe(0);
    expect(controller.queue.processing).toBe(0);
  });

  it('does not reconcile a key handed to an idle worker just before the stop', async () => {
    const reconciled: string[] = [];
    const controller = new Controller({ name: 'race', workers: 2, logger: createLogger({ level: 'silent' }), reconcile: async (key) => void reconciled.push(key) });
    controller.start();
    await sleep(0); // both workers wait in get()
    controller.enqueue('x'); // handed to a waiting worker at once; its code runs a microtask later
    await controller.stop({ drain: false });
    expect(reconciled).toEqual([]);
    expect(controller.queue.processing).toBe(0);
  });
});

describe('Informer options', () => {
  // Never started: the transport opens no connection.
  const transport = new KubeTransport({ origin: 'http://127.0.0.1:1', pathPrefix: '', tls: {}, headers: {} });
  const resource = { group: 'okt.dev', version: 'v1', plural: 'gadgets' };

  it('refuses a watch timeout not shorter than the idle timeout: a quiet watch would be taken for a dead one', () => {
    expect(() => new Informer({ transport, resource, watchIdleTimeoutMs: 60_000, watchTimeoutSeconds: 60 })).toThrow(/watchTimeoutSeconds \(60\) must be shorter than watchIdleTimeoutMs/);
    expect(() => new Informer({ transport, resource, watchIdleTimeoutMs: 60_000, watchTimeoutSeconds: 59 })).not.toThrow();
    expect(() => new Informer({ transport, resource, watchIdleTimeoutMs: 0, watchTimeoutSeconds: 600 })).not.toThrow();
    expect(() => new Informer({ transport, resource, watchTimeoutSeconds: 600 })).toThrow(/180000 ms/);
  });

  it('refuses a negative idle timeout', () => {
    expect(() => new Informer({ transport, resource, watchIdleTimeoutMs: -1 })).toThrow(/watchIdleTimeoutMs must be >= 0/);
  });
});
