import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The certificates a control plane needs once a node talks to it (openssl, as the reference did). */
export interface ClusterPki {
  caCert: string;
  caKey: string;
  /** The API server's serving certificate: SANs for the Service names, the first Service IP, loopback and the node IP. */
  apiserverCert: string;
  apiserverKey: string;
  /** The API server's client certificate toward kubelets (logs, exec, port-forward): system:masters. */
  kubeletClientCert: string;
  kubeletClientKey: string;
}

export interface PkiOptions {
  /** The address the API server serves on and the node reaches it at. */
  address: string;
  /** The first address of the Service range: the `kubernetes` Service's ClusterIP. */
  kubernetesServiceIp: string;
}

export function writeClusterPki(dir: string, options: PkiOptions): ClusterPki {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const path = (name: string) => join(dir, name);
  const pki: ClusterPki = {
    caCert: path('ca.crt'),
    caKey: path('ca.key'),
    apiserverCert: path('apiserver.crt'),
    apiserverKey: path('apiserver.key'),
    kubeletClientCert: path('apiserver-kubelet-client.crt'),
    kubeletClientKey: path('apiserver-kubelet-client.key'),
  };
  openssl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', pki.caKey, '-out', pki.caCert, '-days', '3650', '-subj', '/CN=okt-cluster-ca']);
  const names = ['kubernetes', 'kubernetes.default', 'kubernetes.default.svc', 'kubernetes.default.svc.cluster.local', 'localhost'];
  const ips = [options.kubernetesServiceIp, '127.0.0.1', options.address];
  const sans = [...names.map((n) => `DNS:${n}`), ...[...new Set(ips)].map((ip) => `IP:${ip}`)].join(',');
  signed(pki, dir, 'apiserver', '/CN=kube-apiserver', `subjectAltName=${sans}\nextendedKeyUsage=serverAuth\nkeyUsage=digitalSignature,keyEncipherment`);
  signed(pki, dir, 'apiserver-kubelet-client', '/O=system:masters/CN=kube-apiserver-kubelet-client', 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature,keyEncipherment');
  return pki;
}

function signed(pki: ClusterPki, dir: string, name: string, subject: string, extensions: string): void {
  const key = join(dir, `${name}.key`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  writeFileSync(ext, `${extensions}\n`);
  openssl(['req', '-new', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', csr, '-subj', subject]);
  openssl(['x509', '-req', '-in', csr, '-CA', pki.caCert, '-CAkey', pki.caKey, '-CAcreateserial', '-out', join(dir, `${name}.crt`), '-days', '3650', '-extfile', ext]);
}

function openssl(args: string[]): void {
  execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}
