// The sidecar-answer table (error-policy.ts): one row for each failed answer of each call, so its
// rows can be read in any order; and the answers the reconciler settles itself read from it.
import { describe, expect, it } from 'vitest';
import { SIDECAR_ANSWERS, sidecarVerdict, type SidecarAnswer, type SidecarCall } from '../../src/controller/lifecycle/error-policy.ts';
import { SidecarProblemError, SidecarProtocolError, SidecarUnavailableError } from '../../src/sidecar-client/index.ts';

const ANSWERS: readonly SidecarAnswer[] = ['not-found', 'not-idempotent', 'busy', 'passing', 'unauthorized', 'problem', 'broken', 'unreachable'];
const CALLS: readonly SidecarCall[] = ['read', 'rerun', 'look', 'start'];

function problem(status: number, kind: string, epoch?: string): SidecarProblemError {
  return new SidecarProblemError({ type: `urn:okt:sidecar:${kind}`, title: kind, status, detail: kind, ...(epoch === undefined ? {} : { epoch }) });
}

describe('the sidecar-answer table', () => {
  it('has exactly one row for each answer, call and (for a read that finds nothing) epoch', () => {
    for (const answer of ANSWERS) {
      for (const call of CALLS) {
        for (const committedEpoch of [true, false]) {
          const rows = SIDECAR_ANSWERS.filter((r) => r.answer === answer && r.calls.includes(call) && (r.committedEpoch === undefined || r.committedEpoch === committedEpoch));
          expect(rows, `${answer} on ${call}`).toHaveLength(1);
        }
      }
    }
  });

  it('sorts what the reconciler settles itself: an operation not found, a re-run refused, a busy start', () => {
    expect(sidecarVerdict('read', problem(404, 'not-found', 'e1'), 'e1')).toBe('unknown');
    expect(sidecarVerdict('read', problem(404, 'not-found', 'e2'), 'e1')).toBe('rerun');
    expect(sidecarVerdict('look', problem(404, 'not-found', 'e1'))).toBe('refused');
    expect(sidecarVerdict('rerun', problem(409, 'not-idempotent'))).toBe('lost');
    expect(sidecarVerdict('start', problem(409, 'busy'))).toBe('busy');
    expect(sidecarVerdict('start', problem(409, 'epoch-mismatch'))).toBe('passes');
    expect(sidecarVerdict('look', problem(429, 'slow-down'))).toBe('passes');
    expect(sidecarVerdict('look', new SidecarUnavailableError('connect ECONNREFUSED'))).toBe('passes');
    expect(sidecarVerdict('look', new SidecarProtocolError('content-type text/html'))).toBe('refused');
    expect(sidecarVerdict('start', problem(401, 'unauthorized'))).toBe('refused');
  });
});
