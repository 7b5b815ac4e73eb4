import { CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { applyCrd, type CrdManifest, createNamespace, namespacedCrd, e2eKubeConfig, expectHttpError, httpStatusOf, mergePatch, waitFor } from './helpers/index.ts';

// What okt relies on from a real API server, checked against the control plane of this run.

const group = 'smoke.okt.dev';
const version = 'v1';
const plural = 'widgets';

const crd: CrdManifest = namespacedCrd({ group, version, kind: 'Widget', plural }, {
  spec: {
    type: 'object',
    required: ['desiredState'],
    properties: { desiredState: { type: 'string', enum: ['Running', 'Stopped'] } },
  },
  status: {
    type: 'object',
    properties: { state: { type: 'string' }, observedGeneration: { type: 'integer' } },
  },
});

interface Widget {
  apiVersion: string;
  kind: string;
  metadata: { name: string; resourceVersion?: string; generation?: number; deletionTimestamp?: string; finalizers?: string[] };
  spec: { desiredState: string };
  status?: { state?: string };
}

const kc = e2eKubeConfig();
const api = kc.makeApiClient(CustomObjectsApi);
let namespace = '';

function widget(name: string, desiredState: string, finalizers?: string[]): Widget {
  return { apiVersion: `${group}/${version}`, kind: 'Widget', metadata: { name, finalizers }, spec: { desiredState } };
}

async function create(body: Widget): Promise<Widget> {
  return (await api.createNamespacedCustomObject({ group, version, namespace, plural, body })) as Widget;
}

async function get(name: string): Promise<Widget> {
  return (await api.getNamespacedCustomObject({ group, version, namespace, plural, name })) as Widget;
}

beforeAll(async () => {
  await applyCrd(kc, crd);
  namespace = await createNamespace(kc, 'smoke');
});

describe('a real API server', () => {
  it('stores a custom resource whose spec.desiredState is in the enum', async () => {
    const created = await create(widget('valid', 'Running'));
    expect(created.spec.desiredState).toBe('Running');
    expect(created.metadata.generation).toBe(1);
    expect((await get('valid')).spec.desiredState).toBe('Running');
  });

  it('rejects a spec.desiredState outside the enum with 422 naming the field', async () => {
    const { status, message } = await expectHttpError(create(widget('invalid', 'Exploded')));
    expect(status).toBe(422);
    expect(message).toContain('spec.desiredState');
  });

  it('a merge patch to /status bumps resourceVersion but not generation; a spec change bumps both', async () => {
    const created = await create(widget('patched', 'Running'));
    const afterStatus = (await api.patchNamespacedCustomObjectStatus(
      { group, version, namespace, plural, name: 'patched', body: { status: { state: 'Running' } } },
      mergePatch,
    )) as Widget;
    expect(afterStatus.status?.state).toBe('Running');
    expect(afterStatus.metadata.resourceVersion).not.toBe(created.metadata.resourceVersion);
    expect(afterStatus.metadata.generation).toBe(created.metadata.generation);

    const afterSpec = (await api.patchNamespacedCustomObject(
      { group, version, namespace, plural, name: 'patched', body: { spec: { desiredState: 'Stopped' } } },
      mergePatch,
    )) as Widget;
    expect(afterSpec.spec.desiredState).toBe('Stopped');
    expect(afterSpec.metadata.resourceVersion).not.toBe(afterStatus.metadata.resourceVersion);
    expect(afterSpec.metadata.generation).toBe((created.metadata.generation ?? 0) + 1);
  });

  it('answers 409 Conflict to an update carrying a stale resourceVersion', async () => {
    const stale = await create(widget('contended', 'Running'));
    await api.replaceNamespacedCustomObject({ group, version, namespace, plural, name: 'contended', body: { ...stale, spec: { desiredState: 'Stopped' } } });
    const { status } = await expectHttpError(
      api.replaceNamespacedCustomObject({ group, version, namespace, plural, name: 'contended', body: { ...stale, spec: { desiredState: 'Running' } } }),
    );
    expect(status).toBe(409);
    expect((await get('contended')).spec.desiredState).toBe('Stopped');
  });

  it('ends a watch started at a too-old resourceVersion with 410 Gone', async () => {
    await create(widget('watched', 'Running'));
    expect(await watchOutcome(`/apis/${group}/${version}/namespaces/${namespace}/${plural}`, '1')).toBe(410);
  });

  it('keeps a deleted resource with a finalizer, marked with deletionTimestamp, until the finalizer is removed', async () => {
    await create(widget('finalized', 'Running', ['smoke.okt.dev/keep']));
    await api.deleteNamespacedCustomObject({ group, version, namespace, plural, name: 'finalized' });
    const terminating = await get('finalized');
    expect(terminating.metadata.deletionTimestamp).toEqual(expect.any(String));
    expect(terminating.metadata.finalizers).toEqual(['smoke.okt.dev/keep']);

    await api.patchNamespacedCustomObject(
      { group, version, namespace, plural, name: 'finalized', body: { metadata: { finalizers: null } } },
      mergePatch,
    );
    const gone = await waitFor('the finalized widget to disappear', async () => {
      try {
        await get('finalized');
        return undefined;
      } catch (error) {
        return httpStatusOf(error);
      }
    });
    expect(gone).toBe(404);
  });
});

/**
 * Start a watch and report how the server ends it: the HTTP status of a refused request, or the code
 * of the ERROR event the server sends (kube-apiserver answers an expired resourceVersion either way).
 */
async function watchOutcome(path: string, resourceVersion: string): Promise<number | undefined> {
  let controller: AbortController | undefined;
  try {
    return await new Promise<number | undefined>((resolve, reject) => {
      new Watch(kc)
        .watch(
          path,
          { resourceVersion },
          (phase, object: { code?: number }) => {
            if (phase === 'ERROR') resolve(object.code);
            else reject(new Error(`expected an ERROR event, got ${phase}`));
          },
          (error: unknown) => {
            const status = (error as { statusCode?: number; code?: number } | null)?.statusCode;
            if (status !== undefined) resolve(status);
            else reject(error instanceof Error ? error : new Error(`watch ended without an error event: ${String(error)}`));
          },
        )
        .then((c) => (controller = c), reject);
    });
  } finally {
    controller?.abort();
  }
}
