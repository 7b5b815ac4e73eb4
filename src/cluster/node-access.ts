import { writeFileSync } from 'node:fs';
import { stringify } from 'yaml';
import type { ClusterPki } from './pki.ts';

// What a control plane started for a node hands to the node's components.

/** The Service range: its first address is the `kubernetes` Service's ClusterIP. */
export const SERVICE_CLUSTER_IP_RANGE = '10.0.0.0/24';
export const KUBERNETES_SERVICE_IP = '10.0.0.1';

/** What a node's components need to reach a control plane started `forNode`. */
export interface NodeAccess {
  address: string;
  /** https://ADDRESS:PORT */
  server: string;
  nodeName: string;
  pki: ClusterPki;
  serviceAccountKey: string;
  /** A bearer token per component, each mapped to the identity the bootstrap RBAC roles and the Node authorizer expect. */
  tokens: Record<NodeComponent, string>;
}
export type NodeComponent = 'kube-controller-manager' | 'kube-scheduler' | 'kubelet' | 'kube-proxy';

/**
 * Verifies the server with the CA when there is one (a control plane for a node); without, it serves
 * on loopback only, so skipping TLS verification of the self-signed serving certificate is fine.
 */
export function writeKubeconfig(path: string, server: string, auth: { token: string; caCert?: string | undefined }, user = 'okt-admin'): void {
  const cluster = auth.caCert ? { server, 'certificate-authority': auth.caCert } : { server, 'insecure-skip-tls-verify': true };
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'okt', cluster }],
    users: [{ name: user, user: { token: auth.token } }],
    contexts: [{ name: 'okt', context: { cluster: 'okt', user, namespace: 'default' } }],
    'current-context': 'okt',
  };
  writeFileSync(path, stringify(config), { mode: 0o600 });
}
