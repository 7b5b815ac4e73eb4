// The CRD's validation rules (x-kubernetes-validations, CEL) through the real kubectl: each refuses a
// CR the operator would only stall at reconcile time, at `kubectl apply`, naming the field. A CR
// stored before a rule stays writable (the server ratchets: the refused value left as it was), so the
// operator's own check stays its guard.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { z } from 'zod';
import { defineGraph } from '../../../src/graph/index.ts';
import { generateCrd } from '../../../src/kube/crd.ts';
import { brokerGraph, brokerParams, upgradeParams } from '../../fixtures/params-graphs.ts';
import { applyCrd, createNamespace, deleteCrd, e2eKubeConfig, kubectl, waitFor, withoutValidationRules, type CrdManifest } from '../helpers/index.ts';

// A kind of its own: this file replaces its CRD, which other files must not see.
const BROKERS = { group: 'cel-rules.okt.dev', version: 'v1alpha1', plural: 'brokers', kind: 'Broker' } as const;
/**
 * The broker graph's next revision: Stopping removed, its CRs refused a move (a stop is now a deletion);
 * Upgrading takes a parameter whose name CEL reserves (`in`), which its rule must spell escaped.
 */
const broker = defineGraph({
  name: 'broker', entry: 'Start', params: brokerParams, previous: [brokerGraph()],
  migrations: { removed: { Stopping: { refuse: 'a stop is now the deletion of the CR' } } },
  nodes: { Start: { children: ['Running'] }, Running: { children: ['Upgrading', 'End'] }, Upgrading: { children: ['Running'], params: upgradeParams.extend({ in: z.string() }) }, End: {} },
});
const todaysCrd = generateCrd(broker, BROKERS) as unknown as CrdManifest;
const RESOURCE = `${BROKERS.plural}.${BROKERS.group}`;

const kc = e2eKubeConfig();
let namespace: string;

function manifest(name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion: `${BROKERS.group}/${BROKERS.version}`, kind: BROKERS.kind, metadata: { name, namespace }, spec });
}

/** `kubectl apply` of a CR: its stderr when the server refuses it, undefined when it is taken. */
async function applyRefusal(name: string, spec: Record<string, unknown>): Promise<string | undefined> {
  try {
    await kubectl(['apply', '-f', '-'], manifest(name, spec));
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

beforeAll(async () => {
  namespace = await createNamespace(kc, 'okt-cel-rules');
});

afterAll(async () => {
  await deleteCrd(kc, RESOURCE);
});

describe('CRD validation rules (Kubernetes >= 1.28: CEL rules with fieldPath and reason; >= 1.30: ratcheting)', () => {
  test('each rule refuses a bad CR at kubectl apply, naming the field; a CR stored before the rules stays writable', async () => {
    // Stored under the CRD without rules: a Secret name no Secret can have.
    await applyCrd(kc, withoutValidationRules(todaysCrd));
    await kubectl(['apply', '-f', '-'], manifest('stored', { desiredState: 'Running', sidecar: { url: 'http://sidecar:8080', tokenSecretRef: { name: 'Not_A_Secret', key: 'token' } } }));

    await applyCrd(kc, todaysCrd);
    // The server takes a new schema a moment after it is Established: probe until it refuses.
    const params = await waitFor('the rules to be in force', async () => applyRefusal(`probe-${Date.now()}`, { desiredState: 'Upgrading' }));
    expect(params).toContain('spec.params.version: Required value: spec.params.version is required while spec.desiredState is Upgrading');
    expect(await applyRefusal('upgrading', { desiredState: 'Upgrading', params: { version: '1.2.3' } })).toContain('spec.params.in: Required value: spec.params.in is required while spec.desiredState is Upgrading');
    expect(await applyRefusal('upgrading', { desiredState: 'Upgrading', params: { version: '1.2.3', in: 'eu' } })).toBeUndefined();

    const stopping = await applyRefusal('stopping', { desiredState: 'Stopping' });
    expect(stopping).toContain('spec.desiredState: Invalid value: "Stopping": node "Stopping" was removed from graph "broker" and its migrations refuse to move its CRs: a stop is now the deletion of the CR');

    const secretName = await applyRefusal('secret-name', { desiredState: 'Running', sidecar: { url: 'http://sidecar:8080', tokenSecretRef: { name: 'Not_A_Secret', key: 'token' } } });
    expect(secretName).toContain('spec.sidecar.tokenSecretRef.name: Invalid value: "Not_A_Secret": must be the name of a Secret');
    const secretKey = await applyRefusal('secret-key', { desiredState: 'Running', sidecar: { url: 'http://sidecar:8080', tokenSecretRef: { name: 'sidecar-token', key: 'a/b' } } });
    expect(secretKey).toContain("spec.sidecar.tokenSecretRef.key: Invalid value: \"a/b\": must be a key of a Secret's data");

    for (const sink of ['sink.default.svc:8080', 'ftp://sink.example/', '/relative/path', 'http:///no-host']) {
      expect(await applyRefusal('sink', { desiredState: 'Running', eventSink: sink }), sink).toContain(`spec.eventSink: Invalid value: "${sink}": must be an http or https URL with a host`);
    }
    expect(await applyRefusal('sink', { desiredState: 'Running', eventSink: 'HTTPS://sink.example:8443/events?x=1' })).toBeUndefined();

    // Stored before the rules: a write that leaves the refused value as it was is taken; one that changes it to another bad one is not.
    await kubectl(['label', RESOURCE, 'stored', '-n', namespace, 'team=brokers']);
    await expect(kubectl(['patch', RESOURCE, 'stored', '-n', namespace, '--type', 'merge', '-p', JSON.stringify({ spec: { sidecar: { tokenSecretRef: { name: 'Still_Not' } } } })]))
      .rejects.toThrow('spec.sidecar.tokenSecretRef.name: Invalid value: "Still_Not"');
  });
});

describe('CRD validation rules of a large graph (Kubernetes >= 1.25: CEL cost budget)', () => {
  test("200 nodes with long names, 20 of them with required parameters: the server's cost estimate accepts every rule", async () => {
    const names = Array.from({ length: 200 }, (_, i) => `Node${i}${'x'.repeat(55)}`);
    const nodes = Object.fromEntries(names.map((name, i) => [name, {
      children: i + 1 < names.length ? [names[i + 1]!] : [],
      ...(i % 10 === 1 ? { params: z.object({ first: z.string(), second: z.number(), third: z.boolean() }) } : {}),
    }]));
    const large = defineGraph({ name: 'large', entry: names[0]!, nodes });
    const crd = generateCrd(large, { group: 'cel-cost.okt.dev', version: 'v1alpha1', kind: 'Large' });
    await kubectl(['apply', '--dry-run=server', '-f', '-'], JSON.stringify(crd));
  });
});
