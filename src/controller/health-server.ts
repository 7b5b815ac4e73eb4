import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/** The body of /readyz: `ready` decides 200 or 503; the other fields explain it. */
export interface ReadinessReport {
  ready: boolean;
  [detail: string]: unknown;
}

export interface HealthServerOptions {
  /** 0 picks a free port. */
  port: number;
  /** Default 0.0.0.0 (a kubelet probes from outside the pod's loopback). */
  host?: string;
  registry: Registry;
  readiness: () => ReadinessReport;
}

export interface HealthServer {
  readonly port: number;
  close(): Promise<void>;
}

/** GET /healthz (process alive), /readyz (JSON report, 503 until ready), /metrics (Prometheus text). */
export async function startHealthServer(options: HealthServerOptions): Promise<HealthServer> {
  const server = createServer((req, res) => {
    handle(req, res, options).catch((err: unknown) => send(res, 500, 'text/plain', `error: ${(err as Error).message}\n`));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, options: HealthServerOptions): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'text/plain', 'method not allowed\n');
  if (path === '/healthz' || path === '/livez') return send(res, 200, 'text/plain', 'ok\n');
  if (path === '/readyz') {
    const report = options.readiness();
    return send(res, report.ready ? 200 : 503, 'application/json', `${JSON.stringify(report)}\n`);
  }
  if (path === '/metrics') return send(res, 200, options.registry.contentType, await options.registry.metrics());
  send(res, 404, 'text/plain', 'not found: try /healthz, /readyz, /metrics\n');
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
  res.end(body);
}
