import { describe, expect, test } from 'vitest';
import { classifyAnswerFailure, classifyStartFailure, BUSY_RETRY_MS, REFUSED_RETRY_MS, TOKEN_RETRY_MS } from '../../src/controller/lifecycle/error-policy.ts';
import { SidecarProblemError, SidecarProtocolError, SidecarUnavailableError } from '../../src/sidecar-client/index.ts';

const operation = { id: 'uid-3', node: 'Servicing' };
const problem = (status: number, kind: string, detail: string, extra: Record<string, unknown> = {}) =>
  new SidecarProblemError({ type: `urn:okt:sidecar:problem:${kind}`, title: 'x', status, detail, ...extra });

describe('the error policy of a refused start', () => {
  test('a busy sidecar: waiting (not stalled), tried again every few seconds, naming what it runs and how to run more', () => {
    const policy = classifyStartFailure(problem(409, 'busy', 'another operation is active (uid-1-2)', { activeOperations: ['uid-1-2'] }), operation, 'http://sidecar:8479');
    expect(policy).toMatchObject({ kind: 'refused', refusal: { reason: 'SidecarBusy', stall: false, retryAfterMs: BUSY_RETRY_MS, operation: 'uid-3' } });
    if (policy.kind !== 'refused') throw new Error('refused expected');
    expect(policy.refusal.message).toContain('uid-1-2');
    expect(policy.refusal.message).toContain('maxActiveOperations');
    expect(policy.refusal.message).toContain('http://sidecar:8479');
  });

  test('no action for the node, a wrong token: stalled, naming the cause and what to fix, looked at again after a minute', () => {
    for (const [error, fix] of [
      [problem(422, 'unknown-node', 'graph "database" has no action for node "Servicing"'), 'sidecar config'],
      [problem(401, 'unauthorized', 'the bearer token is wrong'), 'token'],
      [new SidecarProtocolError('answer is not JSON'), 'protocol'],
    ] as const) {
      const policy = classifyStartFailure(error, operation, 'http://sidecar:8479');
      expect(policy).toMatchObject({ kind: 'refused', refusal: { reason: 'SidecarRefused', stall: true, retryAfterMs: REFUSED_RETRY_MS } });
      if (policy.kind === 'refused') expect(policy.refusal.message).toContain(fix);
    }
  });

  test('what passes by itself is retried with the work queue backoff: the network, a sidecar that changed epoch or shuts down', () => {
    for (const error of [new SidecarUnavailableError('connect ECONNREFUSED'), problem(409, 'epoch-mismatch', 'another epoch'), problem(503, 'shutting-down', 'bye'), new Error('boom')]) {
      expect(classifyStartFailure(error, operation, 'http://sidecar:8479')).toEqual({ kind: 'retry' });
    }
  });

  test('a look at the sidecar answered with a 4xx or a broken answer is a refusal naming the cause; a 401 to a Secret\'s token is asked again soon', () => {
    expect(classifyAnswerFailure(problem(422, 'unknown-graph', 'no graph "db" is configured'), 'http://s:1', false)).toMatchObject({ reason: 'SidecarRefused', retryAfterMs: REFUSED_RETRY_MS, message: expect.stringContaining('no graph "db" is configured') });
    expect(classifyAnswerFailure(new SidecarProtocolError('content-type text/html'), 'http://s:1', false)).toMatchObject({ reason: 'SidecarRefused', message: expect.stringContaining('text/html') });
    expect(classifyAnswerFailure(problem(401, 'unauthorized', 'the bearer token is wrong'), 'http://s:1', true)).toMatchObject({ retryAfterMs: TOKEN_RETRY_MS });
    expect(classifyAnswerFailure(new SidecarUnavailableError('connect ECONNREFUSED'), 'http://s:1', false)).toBeUndefined();
    expect(classifyAnswerFailure(problem(429, 'slow-down', 'later'), 'http://s:1', false)).toBeUndefined();
  });
});
