// The in-cluster demo's own objects, around what its one CR makes (graphs/database-app.ts) and what
// `okt manifests` prints: the CR, a CloudEvents receiver, the storage the CR's claim binds to; and,
// for the in-cluster fault suite, PostgreSQL's Deployment written by hand beside the database graph.
import { POSTGRES_IMAGE, SIDECAR_TOKEN } from '../../../graphs/database-app.ts';

export { POSTGRES_IMAGE };
export const APP_NAMESPACE = 'okt-demo';
export const OPERATOR_NAMESPACE = 'okt-system';
export const OKT_IMAGE = 'okt:latest';
export const TOKEN_SECRET = SIDECAR_TOKEN.name;
export const SIDECAR_CONFIGMAP = 'database-okt-sidecar';
export const POSTGRES_SERVICE = 'postgres';
export const EVENTS_SERVICE = 'okt-events';
export const EVENTS_PORT = 8080;
const PG_VOLUME_MOUNT = '/var/lib/okt-pg';

/** `<service>.<namespace>.svc`: resolved by cluster DNS, or by the operator's hostAliases where there is none. */
export function serviceHost(service: string, namespace = APP_NAMESPACE): string {
  return `${service}.${namespace}.svc`;
}

export const SINK_URL = `http://${serviceHost(EVENTS_SERVICE)}:${EVENTS_PORT}/`;

/** The Services first: their ClusterIPs exist before any Pod that needs them (the operator's hostAliases). */
export function service(name: string, port: number, target: string, namespace = APP_NAMESPACE): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { selector: { app: name }, ports: [{ name: target, port, targetPort: target }] },
  };
}

/**
 * Storage for the CR's claim on a cluster without a provisioner (this node has none): a hostPath
 * PersistentVolume of no class, which a claim of no class binds to. Its directory must be writable by
 * the database's user (uid 1000: a hostPath volume gets no fsGroup).
 */
export function hostPathVolume(name: string, path: string): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolume',
    metadata: { name },
    spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', hostPath: { path, type: 'Directory' } },
  };
}

/** The CloudEvents receiver: `okt events tail`, one JSON line per event in its log. */
export function eventsReceiver(): Record<string, unknown> {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: EVENTS_SERVICE, namespace: APP_NAMESPACE },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: EVENTS_SERVICE } },
      template: {
        metadata: { labels: { app: EVENTS_SERVICE } },
        spec: {
          securityContext: { runAsNonRoot: true, runAsUser: 1000 },
          containers: [
            {
              name: 'receiver',
              image: OKT_IMAGE,
              imagePullPolicy: 'IfNotPresent',
              args: ['events', 'tail', '--host', '0.0.0.0', '--port', String(EVENTS_PORT), '--json'],
              ports: [{ name: 'events', containerPort: EVENTS_PORT }],
              readinessProbe: { tcpSocket: { port: 'events' }, periodSeconds: 2 },
            },
          ],
        },
      },
    },
  };
}

export interface SidecarSnippet {
  containers: Record<string, unknown>[];
  volumes: Record<string, unknown>[];
}

/**
 * PostgreSQL's Deployment for the in-cluster fault suite (the demo's CR makes its own: graphs/database-app.ts): the database container (`pg.sh supervise`) plus the containers and volumes
 * `okt manifests --sidecar-only` prints, pasted in as a user does; both containers share the data volume.
 * `Recreate`: never two sidecars behind the Service at once.
 */
export function postgresDeployment(
  snippet: SidecarSnippet,
  options: { namespace?: string; sidecarVolumes?: { volume: Record<string, unknown>; mount: Record<string, unknown> }[] } = {},
): Record<string, unknown> {
  const pgVolume = { name: 'pg', mountPath: PG_VOLUME_MOUNT };
  const extra = options.sidecarVolumes ?? [];
  const sidecars = snippet.containers.map((container) => ({
    ...container,
    image: POSTGRES_IMAGE,
    volumeMounts: [...((container.volumeMounts as unknown[]) ?? []), pgVolume, ...extra.map((v) => v.mount)],
  }));
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: POSTGRES_SERVICE, namespace: options.namespace ?? APP_NAMESPACE },
    spec: {
      replicas: 1,
      strategy: { type: 'Recreate' },
      selector: { matchLabels: { app: POSTGRES_SERVICE } },
      template: {
        metadata: { labels: { app: POSTGRES_SERVICE } },
        spec: {
          securityContext: { runAsNonRoot: true, runAsUser: 1000, fsGroup: 1000 },
          terminationGracePeriodSeconds: 10,
          containers: [
            {
              name: 'postgres',
              image: POSTGRES_IMAGE,
              imagePullPolicy: 'IfNotPresent',
              command: ['/app/sidecar/adapters/postgres/pg.sh', 'supervise'],
              env: [
                { name: 'OKT_PG_DIR', value: PG_VOLUME_MOUNT },
                { name: 'OKT_PG_PORT', value: '5432' },
              ],
              volumeMounts: [pgVolume],
            },
            ...sidecars,
          ],
          volumes: [...snippet.volumes, { name: 'pg', emptyDir: {} }, ...extra.map((v) => v.volume)],
        },
      },
    },
  };
}

export const DEMO_CR_NAME = 'demo';

export function databaseCr(desiredState: string): Record<string, unknown> {
  return {
    apiVersion: 'okt.dev/v1alpha1',
    kind: 'Database',
    metadata: { name: DEMO_CR_NAME, namespace: APP_NAMESPACE },
    // Keep: at End the CR stays, for kubectl and okt status to show.
    spec: { desiredState, onLeaf: 'Keep' },
  };
}
