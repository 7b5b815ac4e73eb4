import { describe, expect, it } from 'vitest';
import { invalidStoredObjectProblem, KubeApiError, permissionProblem } from '../../src/kube/transport/index.ts';

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

describe('invalidStoredObjectProblem', () => {
  const invalid = (method: string) => new KubeApiError({ statusCode: 422, method, path: '/apis/okt.dev/v1alpha1/namespaces/a/databases/db/status', status: { kind: 'Status', reason: 'Invalid', message: 'Database.okt.dev "db" is invalid: spec.sidecar.url: Invalid value: "xP7:": spec.sidecar.url in body should match \'^[hH]\'' } });

  it('says that a write of a stored object fails its CRD now, names the field, and what to do', () => {
    const problem = invalidStoredObjectProblem(invalid('PUT'));
    expect(problem).toContain('spec.sidecar.url in body should match');
    expect(problem).toContain('edit the fields named');
  });

  it('is undefined for a create and for any other error', () => {
    expect(invalidStoredObjectProblem(invalid('POST'))).toBeUndefined();
    expect(invalidStoredObjectProblem(new KubeApiError({ statusCode: 409, method: 'PUT', path: '/x' }))).toBeUndefined();
    expect(invalidStoredObjectProblem(new Error('boom'))).toBeUndefined();
  });
});
