// graphs/database-app.ts, the in-cluster demo's one CR: what it makes at each node, rendered as the
// operator renders it, and where the operator finds its sidecar.
import type { V1ConfigMap, V1Deployment, V1Job } from '@kubernetes/client-node';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { databaseAppGraph, PG_DIR } from '../../graphs/database-app.ts';
import { databaseGraph } from '../../graphs/database.ts';
import { renderObjects, sidecarServiceUrl, type ObjectOwner } from '../../src/graph/index.ts';

const cr: ObjectOwner = { apiVersion: 'okt.dev/v1alpha1', kind: 'Database', metadata: { name: 'demo', namespace: 'okt-demo', uid: 'uid-1' } };
const made = (node: string) => renderObjects(databaseAppGraph, cr, node);
const names = (node: string) => made(node).objects.map(({ object }) => `${object.kind} ${object.metadata?.name}`);

describe('the database CR makes its application', () => {
  test('the lifecycle of graphs/database.ts, its objects added', () => {
    expect(databaseAppGraph.toData().nodes).toEqual(databaseGraph.toData().nodes);
    expect(databaseAppGraph.name).toBe(databaseGraph.name);
  });

  test('its workload, Service, storage, settings and sidecar config at every node; the backup Job only in Servicing', () => {
    const always = ['Secret demo-postgres', 'PersistentVolumeClaim demo-data', 'ConfigMap demo-okt-sidecar', 'Deployment demo', 'Service demo'];
    for (const node of ['Start', 'Running', 'Stopping', 'End']) expect(names(node)).toEqual(always);
    expect(names('Servicing')).toEqual([...always, 'Job demo-backup']);
    for (const node of ['Start', 'Running', 'Servicing', 'Stopping', 'End']) expect(made(node).problems).toEqual([]);
  });

  test('the sidecar is in the server\'s Pod, on the data claim, and the operator finds it at the Service: no spec.sidecar.url', () => {
    const deployment = made('Running').objects.find(({ object }) => object.kind === 'Deployment')!.object as V1Deployment;
    const pod = deployment.spec!.template.spec!;
    expect(pod.containers.map((c) => c.name)).toEqual(['postgres', 'okt-sidecar']);
    for (const container of pod.containers) expect(container.volumeMounts).toContainEqual({ name: 'pg', mountPath: PG_DIR });
    expect(pod.volumes).toContainEqual({ name: 'pg', persistentVolumeClaim: { claimName: 'demo-data' } });
    expect(pod.volumes).toContainEqual({ name: 'okt-sidecar-config', configMap: { name: 'demo-okt-sidecar' } });
    expect(sidecarServiceUrl(databaseAppGraph, cr)).toBe('http://demo.okt-demo.svc:8479');
  });

  test('the Job writes the backup on the same claim; Servicing\'s action verifies it', () => {
    const job = made('Servicing').objects.find(({ object }) => object.kind === 'Job')!.object as V1Job;
    const pod = job.spec!.template.spec!;
    expect(pod.containers[0]!.command).toEqual(['/app/sidecar/adapters/postgres/pg.sh', 'backup']);
    expect(pod.volumes).toEqual([{ name: 'pg', persistentVolumeClaim: { claimName: 'demo-data' } }]);
    const config = made('Running').objects.find(({ object }) => object.kind === 'ConfigMap')!.object as V1ConfigMap;
    const sidecar = parse(config.data!['sidecar.yaml']!) as { graphs: { database: { nodes: Record<string, { command: { argv: string[] } }> } } };
    expect(sidecar.graphs.database.nodes.Servicing!.command.argv).toEqual(['/app/sidecar/adapters/postgres/pg.sh', 'verify']);
    expect(sidecar.graphs.database.nodes.Running!.command.argv).toEqual(['/app/sidecar/adapters/postgres/pg.sh', 'start']);
  });
});
