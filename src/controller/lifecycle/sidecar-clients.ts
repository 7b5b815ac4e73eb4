import type { LifecycleSpec } from '../../kube/lifecycle-resource.ts';
import type { KubeObject, KubeTransport } from '../../kube/transport/index.ts';
import { SidecarClient } from '../../sidecar-client/index.ts';

const SECRETS = { group: '', version: 'v1', plural: 'secrets' } as const;

/**
 * One keep-alive sidecar client per (url, token), shared by every CR that names the same sidecar.
 * Tokens from a Secret (spec.sidecar.tokenSecretRef) are read once and cached.
 */
export class SidecarClients {
  readonly #transport: KubeTransport;
  readonly #defaults: { url?: string; token?: string };
  readonly #clients = new Map<string, SidecarClient>();
  readonly #tokens = new Map<string, string>();

  constructor(transport: KubeTransport, defaults: { url?: string; token?: string }) {
    this.#transport = transport;
    this.#defaults = defaults;
  }

  /** The URL of a CR's sidecar, or undefined when neither the CR nor the operator names one. */
  urlFor(spec: LifecycleSpec): string | undefined {
    return spec.sidecar?.url ?? this.#defaults.url;
  }

  /** The client for a CR's sidecar, or undefined when neither the CR nor the operator names one. */
  async forSpec(spec: LifecycleSpec, namespace: string): Promise<SidecarClient | undefined> {
    const url = this.urlFor(spec);
    if (url === undefined) return undefined;
    const ref = spec.sidecar?.tokenSecretRef;
    const token = ref ? await this.#secretToken(namespace, ref.name, ref.key) : (this.#defaults.token ?? '');
    const id = `${url}\n${token}`;
    let client = this.#clients.get(id);
    if (client === undefined) {
      client = new SidecarClient({ baseUrl: url, token });
      this.#clients.set(id, client);
    }
    return client;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#clients.values()].map((c) => c.close()));
    this.#clients.clear();
  }

  async #secretToken(namespace: string, name: string, key: string): Promise<string> {
    const id = `${namespace}/${name}/${key}`;
    const cached = this.#tokens.get(id);
    if (cached !== undefined) return cached;
    const secret = await this.#transport.get<KubeObject & { data?: Record<string, string> }>(SECRETS, namespace, name);
    const encoded = secret.data?.[key];
    if (encoded === undefined) throw new Error(`spec.sidecar.tokenSecretRef: Secret ${namespace}/${name} has no key "${key}"`);
    const token = Buffer.from(encoded, 'base64').toString('utf8').trim();
    this.#tokens.set(id, token);
    return token;
  }
}
