import {
  ApiextensionsV1Api,
  CustomObjectsApi,
  loadYaml,
  type KubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import type { Graph } from '../../../src/graph/index.ts';
import { generateCrd, type CrdNames } from '../../../src/kube/crd.ts';
import { httpStatusOf } from './cluster.ts';
import { waitFor } from './wait.ts';

/** A CRD as a YAML/JSON manifest holds it, with the wire's field names (`enum`, `x-kubernetes-…`). */
export interface CrdManifest {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string };
  spec: object;
}

/**
 * client-node's typed models rename some schema fields (`enum` is `_enum`) and its serializer drops
 * names it does not know, so a plain manifest must go through its deserializer first.
 */
export function toTypedCrd(manifest: CrdManifest): V1CustomResourceDefinition {
  return loadYaml<V1CustomResourceDefinition>(JSON.stringify(manifest));
}

/** The CRD okt generates for `graph` under `names`, applied as applyCrd does. */
export function applyGraphCrd(kc: KubeConfig, graph: Graph, names: CrdNames): Promise<V1CustomResourceDefinition> {
  return applyCrd(kc, generateCrd(graph, names) as unknown as CrdManifest);
}

/**
 * Create the CRD (or replace it if one of that name exists) and wait until it is Established and its
 * resources are served, so that the next call can create custom resources.
 */
export async function applyCrd(kc: KubeConfig, manifest: CrdManifest, timeoutMs = 30_000): Promise<V1CustomResourceDefinition> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const crd = toTypedCrd(manifest);
  const name = crd.metadata?.name;
  if (!name) throw new Error('applyCrd: metadata.name is required');
  try {
    await api.createCustomResourceDefinition({ body: crd });
  } catch (error) {
    if (httpStatusOf(error) !== 409) throw error;
    const existing = await api.readCustomResourceDefinition({ name });
    await api.replaceCustomResourceDefinition({
      name,
      body: { ...crd, metadata: { ...crd.metadata, resourceVersion: existing.metadata?.resourceVersion } },
    });
  }
  const established = await waitFor(
    `CRD ${name} to be Established`,
    async () => {
      const current = await api.readCustomResourceDefinition({ name });
      const condition = current.status?.conditions?.find((c) => c.type === 'Established');
      return condition?.status === 'True' ? current : undefined;
    },
    timeoutMs,
  );
  // Established can precede the moment the new endpoint answers; list once to be sure it serves.
  const { group, names } = crd.spec;
  const version = crd.spec.versions.find((v) => v.served)?.name;
  if (version) {
    const objects = kc.makeApiClient(CustomObjectsApi);
    await waitFor(`${names.plural}.${group}/${version} to be served`, async () => {
      await objects.listClusterCustomObject({ group, version, plural: names.plural, limit: 1 });
      return true;
    }, timeoutMs);
  }
  return established;
}

/** Delete a CRD (and with it all its custom resources); no error when it does not exist. */
export async function deleteCrd(kc: KubeConfig, name: string): Promise<void> {
  try {
    await kc.makeApiClient(ApiextensionsV1Api).deleteCustomResourceDefinition({ name });
  } catch (error) {
    if (httpStatusOf(error) !== 404) throw error;
  }
}

/** A namespaced CRD of one served version with a status subresource and the given spec and status schemas. */
export function namespacedCrd(names: { group: string; version: string; kind: string; plural: string }, schemas: { spec: object; status: object }): CrdManifest {
  const { group, version, kind, plural } = names;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural, singular: kind.toLowerCase(), kind },
      versions: [
        {
          name: version,
          served: true,
          storage: true,
          subresources: { status: {} },
          schema: { openAPIV3Schema: { type: 'object', properties: { spec: schemas.spec, status: schemas.status } } },
        },
      ],
    },
  };
}

/** The CRD without its validation rules (x-kubernetes-validations): what okt generated before them. */
export function withoutValidationRules(crd: CrdManifest): CrdManifest {
  return JSON.parse(JSON.stringify(crd, (key, value: unknown) => (key === 'x-kubernetes-validations' ? undefined : value))) as CrdManifest;
}
