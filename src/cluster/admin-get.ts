import { request } from 'node:https';

/**
 * GET a path of the local API server with the admin token: its status and body, or undefined when
 * nothing answers (yet). The server's certificate is not verified: this is okt's own server, being
 * started, reached before any kubeconfig is in use.
 */
export function adminGet(server: string, token: string, path: string): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const req = request(`${server}${path}`, { headers: { authorization: `Bearer ${token}` }, rejectUnauthorized: false, timeout: 2000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', () => resolve(undefined));
    });
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}
