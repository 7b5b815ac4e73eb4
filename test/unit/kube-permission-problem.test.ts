import { describe, expect, it } from 'vitest';
import { KubeApiError, permissionProblem } from '../../src/kube/transport/index.ts';

describe('permissionProblem', () => {
  it('names the refused request, the server message and what to do for a 403', () => {
    const err = new KubeApiError({
      statusCode: 403,
      method: 'PATCH',
      path: '/apis/okt.dev/v1alpha1/namespaces/a/databases/db/status',
      status: { kind: 'Status', reason: 'Forbidden', message: 'databases.okt.dev "db" is forbidden: User "system:serviceaccount:okt-system:okt-database" cannot patch resource "databases/status"' },
    });
    const problem = permissionProblem(err);
    expect(problem).toContain('permission denied by RBAC: PATCH /apis/okt.dev/v1alpha1/namespaces/a/databases/db/status');
    expect(problem).toContain('cannot patch resource "databases/status"');
    expect(problem).toContain("grant it to the operator's ServiceAccount");
  });

  it('is undefined for any other error', () => {
    expect(permissionProblem(new KubeApiError({ statusCode: 409, method: 'PUT', path: '/x' }))).toBeUndefined();
    expect(permissionProblem(new Error('boom'))).toBeUndefined();
  });
});
