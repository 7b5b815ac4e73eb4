// Server-side apply of an object okt owns (its CRD, as the demo applies it): managedFields name `okt`
// with operation Apply, and no kubectl last-applied annotation copies the object (a CRD carrying a
// graph's revisions is large). Applying it again changes nothing; a field another manager took is
// refused without force and taken back with it.
import { afterAll, describe, expect, test } from 'vitest';
import { databaseGraph } from '../../graphs/database.ts';
import { generateCrd } from '../../src/kube/crd.ts';
import { isConflict, KubeApiError, KubeTransport, type KubeObject, type ResourceRef } from '../../src/kube/transport/index.ts';
import { deleteCrd, e2eKubeConfig, kubectl } from './helpers/index.ts';

const CRDS: ResourceRef = { group: 'apiextensions.k8s.io', version: 'v1', plural: 'customresourcedefinitions', namespaced: false };
const names = { group: 'ssa.okt.dev', version: 'v1alpha1', kind: 'Database', shortNames: ['sdb'] };
const crd = generateCrd(databaseGraph, names) as KubeObject;
const crdName = crd.metadata.name!;
type ManagedFields = { manager: string; operation: string; fieldsV1: Record<string, Record<string, unknown>> }[];
type Crd = KubeObject & { spec: { names: { shortNames: string[] } } };
const managedFields = (obj: Crd) => (obj.metadata.managedFields ?? []) as ManagedFields;

const kc = e2eKubeConfig();
let transport: KubeTransport | undefined;

afterAll(async () => {
  await transport?.close();
  await deleteCrd(kc, crdName);
});

describe('server-side apply (Kubernetes 1.37.2: managedFields with operation Apply, conflicts by field)', () => {
  test("okt applies its CRD under its own field manager: managed by `okt`, again a no-op, another manager's field taken back only with force", async () => {
    transport = await KubeTransport.fromKubeConfig(kc);
    const applied = await transport.apply<Crd>(CRDS, undefined, crd, { force: true });
    expect(managedFields(applied).map((e) => [e.manager, e.operation])).toEqual([['okt', 'Apply']]);
    expect(Object.keys(managedFields(applied)[0]!.fieldsV1['f:spec']!)).toContain('f:versions');
    expect(applied.metadata.annotations).not.toHaveProperty('kubectl.kubernetes.io/last-applied-configuration');

    // (The API server's own status writes, Established and the like, change its resourceVersion meanwhile.)
    const again = await transport.apply<Crd>(CRDS, undefined, crd, { force: true });
    expect(again.metadata.generation).toBe(applied.metadata.generation);
    expect(managedFields(again).filter((e) => e.manager === 'okt')).toEqual(managedFields(applied));

    // Someone else's edit of a field okt applied: that field becomes theirs.
    await kubectl(['patch', 'crd', crdName, '--type', 'merge', '--field-manager', 'someone', '-p', JSON.stringify({ spec: { names: { shortNames: ['theirs'] } } })]);
    const refused = await transport.apply<Crd>(CRDS, undefined, crd).then(() => undefined, (error: unknown) => error);
    expect(refused).toBeInstanceOf(KubeApiError);
    expect(isConflict(refused)).toBe(true);
    expect((refused as KubeApiError).message).toContain('.spec.names.shortNames');
    const forced = await transport.apply<Crd>(CRDS, undefined, crd, { force: true });
    expect(forced.spec.names.shortNames).toEqual(['sdb']);
    expect(managedFields(forced).find((e) => e.manager === 'okt')?.operation).toBe('Apply');
  });
});
