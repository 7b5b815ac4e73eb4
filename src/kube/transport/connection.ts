import type { KubeConfig } from '@kubernetes/client-node';

/** Everything a request to the API server needs, resolved once from a KubeConfig. */
export interface ConnectionSettings {
  /** Origin of the API server, e.g. https://127.0.0.1:6443 (a path prefix in the server URL is kept in `pathPrefix`). */
  origin: string;
  pathPrefix: string;
  tls: { ca?: Buffer | string; cert?: Buffer | string; key?: Buffer | string; rejectUnauthorized?: boolean; servername?: string };
  /** Authorization (bearer token, basic auth, exec/OIDC plugins) and impersonation headers. */
  headers: Record<string, string>;
}

/**
 * Reads the current context of a KubeConfig through its own `applyToHTTPSOptions`, so every
 * auth method client-node knows (token, client certificate, exec, OIDC) resolves the same way.
 */
export async function connectionFromKubeConfig(kc: KubeConfig): Promise<ConnectionSettings> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error(`kubeconfig: current context "${kc.getCurrentContext()}" names no cluster`);
  if (!cluster.server) throw new Error(`kubeconfig: cluster "${cluster.name}" has no server URL`);
  const url = new URL(cluster.server);
  if (url.protocol === 'http:' && !cluster.skipTLSVerify) {
    throw new Error(`kubeconfig: cluster "${cluster.name}" uses plain http:, allowed only with insecure-skip-tls-verify`);
  }
  const opts: {
    ca?: Buffer | string; cert?: Buffer | string; key?: Buffer | string; rejectUnauthorized?: boolean;
    servername?: string; headers?: Record<string, unknown>; agent?: unknown;
  } = {};
  await kc.applyToHTTPSOptions(opts as Parameters<KubeConfig['applyToHTTPSOptions']>[0]);
  const tls: ConnectionSettings['tls'] = {};
  if (opts.ca !== undefined) tls.ca = opts.ca;
  if (opts.cert !== undefined) tls.cert = opts.cert;
  if (opts.key !== undefined) tls.key = opts.key;
  if (opts.rejectUnauthorized !== undefined) tls.rejectUnauthorized = opts.rejectUnauthorized;
  if (opts.servername !== undefined) tls.servername = opts.servername;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(opts.headers ?? {})) {
    if (value !== undefined) headers[name.toLowerCase()] = String(value);
  }
  // applyToHTTPSOptions turns username/password into `auth` rather than a header.
  const user = kc.getCurrentUser();
  if (user?.username && headers.authorization === undefined) {
    headers.authorization = `Basic ${Buffer.from(`${user.username}:${user.password ?? ''}`).toString('base64')}`;
  }
  return { origin: url.origin, pathPrefix: url.pathname.replace(/\/+$/, ''), tls, headers };
}
