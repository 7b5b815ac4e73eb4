import { KubeTransport, type KubeObject, type ResourceRef } from '../../../src/kube/transport/index.ts';
import { applyCrd, e2eKubeConfig, namespacedCrd, type CrdManifest } from '../helpers/index.ts';

/** A small namespaced CRD with a status subresource, under a group of the test's choosing. */
export function gadgetCrd(group: string): { manifest: CrdManifest; resource: ResourceRef } {
  const plural = 'gadgets';
  const manifest = namespacedCrd({ group, version: 'v1', kind: 'Gadget', plural }, {
    spec: { type: 'object', properties: { desiredState: { type: 'string' } } },
    status: { type: 'object', properties: { state: { type: 'string' }, transitions: { type: 'integer' } } },
  });
  return { manifest, resource: { group, version: 'v1', plural } };
}

export interface Gadget extends KubeObject {
  spec?: { desiredState?: string };
  status?: { state?: string; transitions?: number };
}

export function gadget(group: string, namespace: string, name: string, desiredState = 'Running', finalizers?: string[]): Gadget {
  return { apiVersion: `${group}/v1`, kind: 'Gadget', metadata: { name, namespace, finalizers }, spec: { desiredState } };
}

export async function setUpGadgets(group: string): Promise<{ resource: ResourceRef; transport: KubeTransport }> {
  const kc = e2eKubeConfig();
  const { manifest, resource } = gadgetCrd(group);
  await applyCrd(kc, manifest);
  return { resource, transport: await KubeTransport.fromKubeConfig(kc) };
}
