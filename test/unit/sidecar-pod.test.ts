// withOktSidecar: okt's sidecar (its container, config, token and journal volumes) added to a Pod
// template a graph declares, the same as the in-cluster demo's PostgreSQL Deployment built from the
// snippet `okt manifests --sidecar-only` prints.
import type { V1Deployment, V1PodTemplateSpec, V1Volume } from '@kubernetes/client-node';
import { describe, expect, test } from 'vitest';
import { OKT_IMAGE, POSTGRES_IMAGE, postgresDeployment, SIDECAR_CONFIGMAP, TOKEN_SECRET } from '../../src/demo/in-cluster/objects.ts';
import { sidecarSnippet, withOktSidecar } from '../../src/kube/manifests.ts';

const options = { configMap: SIDECAR_CONFIGMAP, token: { name: TOKEN_SECRET, key: 'token' } };
const byName = (volumes: readonly V1Volume[] | undefined) => [...(volumes ?? [])].sort((a, b) => a.name.localeCompare(b.name));

describe('withOktSidecar', () => {
  test('gives the Pod template the demo builds today from the printed snippet (the sidecar sharing the data volume)', () => {
    const today = postgresDeployment(sidecarSnippet({ image: OKT_IMAGE, ...options }) as unknown as Parameters<typeof postgresDeployment>[0]) as V1Deployment;
    const bare = (postgresDeployment({ containers: [], volumes: [] }) as V1Deployment).spec!.template;
    const data = bare.spec!.containers[0]!.volumeMounts!;
    const template = withOktSidecar(bare, { image: POSTGRES_IMAGE, ...options, volumeMounts: data });
    expect(template.spec?.containers).toEqual(today.spec?.template.spec?.containers);
    // The same volumes; the sidecar's come after the template's own.
    expect(byName(template.spec?.volumes)).toEqual(byName(today.spec?.template.spec?.volumes));
    expect(template.spec?.volumes?.map((v) => v.name)).toEqual(['pg', 'okt-sidecar-config', 'sidecar-token', 'okt-sidecar-journal']);
    expect({ ...template, spec: { ...template.spec, containers: [], volumes: [] } }).toEqual({ ...today.spec?.template, spec: { ...today.spec?.template.spec, containers: [], volumes: [] } });
  });

  test('leaves the template it was given unchanged', () => {
    const bare: V1PodTemplateSpec = { metadata: { labels: { app: 'x' } }, spec: { containers: [{ name: 'app', image: 'app:1' }] } };
    const copy = structuredClone(bare);
    const template = withOktSidecar(bare, { image: 'okt:1', ...options });
    expect(bare).toEqual(copy);
    expect(template.spec?.containers.map((c) => c.name)).toEqual(['app', 'okt-sidecar']);
    expect(template.spec?.containers[1]?.volumeMounts?.map((m) => m.name)).toEqual(['okt-sidecar-config', 'sidecar-token', 'okt-sidecar-journal']);
  });

  test('with its config in the image (configFile: a project of okt init), no ConfigMap volume', () => {
    const bare: V1PodTemplateSpec = { spec: { containers: [] } };
    const template = withOktSidecar(bare, { image: 'my-app:latest', configFile: '/app/sidecar.yaml', token: { name: TOKEN_SECRET, key: 'token' } });
    const sidecar = template.spec!.containers[0]!;
    expect(sidecar.args).toEqual(['sidecar', '--config', '/app/sidecar.yaml', '--host', '0.0.0.0', '--port', '8479']);
    expect(sidecar.volumeMounts?.map((m) => m.name)).toEqual(['sidecar-token', 'okt-sidecar-journal']);
    expect(template.spec?.volumes?.map((v) => v.name)).toEqual(['sidecar-token', 'okt-sidecar-journal']);
  });

  test('refuses a template that already has a container or volume of the sidecar\'s names, naming them', () => {
    const taken: V1PodTemplateSpec = { spec: { containers: [{ name: 'okt-sidecar' }], volumes: [{ name: 'okt-sidecar-journal', emptyDir: {} }] } };
    expect(() => withOktSidecar(taken, { image: 'okt:1', ...options })).toThrow(
      'withOktSidecar: the Pod template already has a container named "okt-sidecar" and a volume named "okt-sidecar-journal" (the sidecar\'s)',
    );
  });
});
