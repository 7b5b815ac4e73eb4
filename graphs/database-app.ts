// graphs/database.ts as one CR makes it on a cluster (the in-cluster demo, `npm start -- --in-cluster`):
// PostgreSQL in a Deployment with okt's sidecar beside it, the Service the operator reaches that sidecar
// at (its port okt-sidecar: no spec.sidecar.url), the sidecar's config, the server's settings in a
// Secret, its data on a PersistentVolumeClaim kept when the CR goes, and a backup Job only in
// Servicing, whose dump Servicing's action then verifies. The operator loads this module from its
// image (`okt manifests ... --graph-module /app/graphs/database-app.ts`): the renders are code.
import { readFileSync } from 'node:fs';
import type { V1ConfigMap, V1Deployment, V1Job, V1PersistentVolumeClaim, V1PodSpec, V1Secret, V1Service, V1Volume } from '@kubernetes/client-node';
import { parse, stringify } from 'yaml';
import { defineGraph } from '../src/graph/index.ts';
import { withOktSidecar } from '../src/kube/manifests.ts';
import { databaseGraph, databaseNodes } from './database.ts';

/** The okt image with Debian's PostgreSQL 15 (sidecar/adapters/postgres/Dockerfile): the server, its sidecar and the backup Job run it. */
export const POSTGRES_IMAGE = 'okt-postgres:latest';
/** The Secret, in the CR's namespace, holding the token the operator sends its sidecars (`okt manifests` mounts the same in the operator). */
export const SIDECAR_TOKEN = { name: 'okt-sidecar-token', key: 'token' } as const;
/** Where the server's directory (data, socket, backups) is mounted: the volume the server, the sidecar's actions and the backup Job share. */
export const PG_DIR = '/var/lib/okt-pg';
const PG = '/app/sidecar/adapters/postgres/pg.sh';
const USER = { runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 } as const;

/**
 * The in-Pod sidecar config, but Servicing verifies the dump the backup Job wrote (the Job is
 * awaited before the action starts) instead of writing one itself.
 */
function sidecarConfig(): string {
  const config = parse(readFileSync(new URL('../sidecar/adapters/postgres/database.sidecar.in-pod.yaml', import.meta.url), 'utf8')) as {
    graphs: { database: { nodes: { Servicing: { command: { argv: string[] } } } } };
  };
  config.graphs.database.nodes.Servicing.command.argv = [PG, 'verify'];
  return stringify(config);
}
const SIDECAR_CONFIG = sidecarConfig();

/** The server's directory on the data claim of the CR named `name`, and its settings from the CR's Secret. */
function pgVolumes(name: string): { volumes: V1Volume[]; env: NonNullable<V1PodSpec['containers'][number]['env']>; envFrom: NonNullable<V1PodSpec['containers'][number]['envFrom']> } {
  return {
    volumes: [{ name: 'pg', persistentVolumeClaim: { claimName: `${name}-data` } }],
    env: [{ name: 'OKT_PG_DIR', value: PG_DIR }],
    envFrom: [{ secretRef: { name: `${name}-postgres` } }],
  };
}

export const databaseAppGraph = defineGraph({
  name: databaseGraph.name,
  description: 'The lifecycle of a database server, making its workload, storage and backup.',
  entry: 'Start',
  nodes: databaseNodes(),
  objects: [
    {
      id: 'settings', apiVersion: 'v1', kind: 'Secret', name: 'postgres',
      // The server's port, read by the server and the backup Job (the sidecar's actions have theirs in its config).
      render: (): V1Secret => ({ apiVersion: 'v1', kind: 'Secret', type: 'Opaque', stringData: { OKT_PG_PORT: '5432' } }),
    },
    {
      id: 'data', apiVersion: 'v1', kind: 'PersistentVolumeClaim', name: 'data', deletion: 'Keep',
      // No storage class: the cluster's default one provisions it, or (none) it binds a PersistentVolume without a class.
      render: (): V1PersistentVolumeClaim => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } }),
    },
    {
      id: 'sidecar-config', apiVersion: 'v1', kind: 'ConfigMap', name: 'okt-sidecar',
      render: (): V1ConfigMap => ({ apiVersion: 'v1', kind: 'ConfigMap', data: { 'sidecar.yaml': SIDECAR_CONFIG } }),
    },
    {
      id: 'server', apiVersion: 'apps/v1', kind: 'Deployment',
      render: ({ name }): V1Deployment => {
        const { volumes, env, envFrom } = pgVolumes(name);
        const data = [{ name: 'pg', mountPath: PG_DIR }];
        return {
          apiVersion: 'apps/v1',
          kind: 'Deployment',
          spec: {
            replicas: 1,
            // Never two sidecars (nor two servers on one data directory) at once.
            strategy: { type: 'Recreate' },
            selector: { matchLabels: { app: name } },
            template: withOktSidecar(
              {
                metadata: { labels: { app: name } },
                spec: {
                  securityContext: USER,
                  terminationGracePeriodSeconds: 10,
                  // `pg.sh supervise`: the server runs here, started and stopped as the sidecar's actions ask through the shared directory.
                  containers: [{ name: 'postgres', image: POSTGRES_IMAGE, imagePullPolicy: 'IfNotPresent', command: [PG, 'supervise'], env, envFrom, volumeMounts: data }],
                  volumes,
                },
              },
              { image: POSTGRES_IMAGE, configMap: `${name}-okt-sidecar`, token: SIDECAR_TOKEN, volumeMounts: data },
            ),
          },
        };
      },
    },
    {
      id: 'sidecar', apiVersion: 'v1', kind: 'Service',
      render: ({ name }): V1Service => ({ apiVersion: 'v1', kind: 'Service', spec: { selector: { app: name }, ports: [{ name: 'okt-sidecar', port: 8479, targetPort: 'okt-sidecar' }] } }),
    },
    {
      id: 'backup', apiVersion: 'batch/v1', kind: 'Job', name: 'backup', during: 'Servicing',
      render: ({ metadata }): V1Job => {
        const { volumes, env, envFrom } = pgVolumes(metadata.name);
        return {
          apiVersion: 'batch/v1',
          kind: 'Job',
          spec: {
            backoffLimit: 2,
            template: {
              spec: {
                restartPolicy: 'Never',
                securityContext: USER,
                // pg_dump over the server's socket, in the directory the claim shares (one node: ReadWriteOnce is enough).
                containers: [{ name: 'backup', image: POSTGRES_IMAGE, imagePullPolicy: 'IfNotPresent', command: [PG, 'backup'], env, envFrom, volumeMounts: [{ name: 'pg', mountPath: PG_DIR }] }],
                volumes,
              },
            },
          },
        };
      },
    },
  ],
});
