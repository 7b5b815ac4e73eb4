import type { LifecycleSpec } from '../../kube/lifecycle-resource.ts';
import type { KubeObject, KubeTransport } from '../../kube/transport/index.ts';
import { SidecarClient } from '../../sidecar-client/index.ts';
import { classifySecretFailure, notAllowedRefusal, SidecarSecretError } from './error-policy.ts';
import { SidecarUrlPolicy } from './sidecar-policy.ts';
import type { SidecarRefusal } from './step.ts';

const SECRETS = { group: '', version: 'v1', plural: 'secrets' } as const;

/** A token read from a Secret is read again at most this long after (a rotation is noticed even without a 401). */
export const SECRET_TOKEN_MAX_AGE_MS = 60_000;

export interface SidecarDefaults {
  /** `okt run --sidecar-url`: the sidecar of CRs without spec.sidecar.url; the operator-wide token may go there. */
  url?: string;
  /** `okt run --sidecar-token-file`: the operator-wide token. */
  token?: string;
  /** `okt run --sidecar-url-allow`: further URL patterns the operator-wide token may go to (see sidecar-policy.ts). */
  allow?: readonly string[];
}

/** What the operator will do about a CR's sidecar. */
export type SidecarResolution =
  | { kind: 'none' }
  | {
      kind: 'client';
      client: SidecarClient;
      /** Normalized: the URL the client calls. */
      url: string;
      /** `namespace/name/key` of the Secret the token came from, to forget it on a 401. */
      secret?: string;
    }
  /** Nothing is sent to the CR's sidecar: the step says why on the CR. */
  | { kind: 'refused'; refusal: SidecarRefusal };

/**
 * One keep-alive sidecar client per (url, token), shared by every CR that names the same sidecar.
 * The operator-wide token goes only to URLs the policy allows; a CR naming another URL must name a
 * Secret, which is read only in the CR's own namespace (the ref has no namespace field), cached for at
 * most SECRET_TOKEN_MAX_AGE_MS, and forgotten at once when its sidecar answers 401.
 */
export class SidecarClients {
  readonly #transport: KubeTransport;
  readonly #defaults: SidecarDefaults;
  readonly #policy: SidecarUrlPolicy;
  readonly #clients = new Map<string, SidecarClient>();
  readonly #tokens = new Map<string, { token: string; readAt: number }>();
  readonly #now: () => number;

  constructor(transport: KubeTransport, defaults: SidecarDefaults, now: () => number = Date.now) {
    this.#transport = transport;
    this.#defaults = defaults;
    this.#policy = new SidecarUrlPolicy({ ...(defaults.url === undefined ? {} : { defaultUrl: defaults.url }), allow: defaults.allow ?? [] });
    this.#now = now;
  }

  /** The URL of a CR's sidecar as named, or undefined when neither the CR nor the operator names one. */
  urlFor(spec: LifecycleSpec): string | undefined {
    return spec.sidecar?.url ?? this.#defaults.url;
  }

  /**
   * The client for a CR's sidecar, or why there is none. Throws only on a transient failure to read
   * the CR's Secret (the work queue retries it).
   */
  async forSpec(spec: LifecycleSpec, namespace: string): Promise<SidecarResolution> {
    const named = this.urlFor(spec);
    if (named === undefined) return { kind: 'none' };
    const verdict = this.#policy.judge(named);
    if (verdict.kind === 'invalid') return { kind: 'refused', refusal: notAllowedRefusal(named, verdict.problem, this.#policy.patterns) };
    const ref = spec.sidecar?.tokenSecretRef;
    let token: string;
    let secret: string | undefined;
    if (ref !== undefined) {
      secret = `${namespace}/${ref.name}/${ref.key}`;
      try {
        token = await this.#secretToken(namespace, ref.name, ref.key);
      } catch (error) {
        const policy = classifySecretFailure(error, { namespace, name: ref.name, key: ref.key });
        if (policy.kind === 'retry') throw error;
        return { kind: 'refused', refusal: policy.refusal };
      }
    } else if (verdict.operatorTokenAllowed) {
      token = this.#defaults.token ?? '';
    } else {
      return { kind: 'refused', refusal: notAllowedRefusal(named, undefined, this.#policy.patterns) };
    }
    const id = `${verdict.url}\n${token}`;
    let client = this.#clients.get(id);
    if (client === undefined) {
      client = new SidecarClient({ baseUrl: verdict.url, token });
      this.#clients.set(id, client);
    }
    return secret === undefined ? { kind: 'client', client, url: verdict.url } : { kind: 'client', client, url: verdict.url, secret };
  }

  /** The sidecar refused the token of this Secret (401): read it again next time (it may have been rotated). */
  forgetSecret(secret: string): void {
    this.#tokens.delete(secret);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#clients.values()].map((c) => c.close()));
    this.#clients.clear();
  }

  async #secretToken(namespace: string, name: string, key: string): Promise<string> {
    const id = `${namespace}/${name}/${key}`;
    const cached = this.#tokens.get(id);
    if (cached !== undefined && this.#now() - cached.readAt < SECRET_TOKEN_MAX_AGE_MS) return cached.token;
    // Only ever the CR's own namespace: a CR cannot make the operator read another tenant's Secret.
    const read = await this.#transport.get<KubeObject & { data?: Record<string, string> }>(SECRETS, namespace, name);
    const encoded = read.data?.[key];
    if (encoded === undefined) throw new SidecarSecretError(`Secret ${namespace}/${name} has no key "${key}"`);
    const token = Buffer.from(encoded, 'base64').toString('utf8').trim();
    if (token === '') throw new SidecarSecretError(`key "${key}" of Secret ${namespace}/${name} is empty`);
    this.#tokens.set(id, { token, readAt: this.#now() });
    return token;
  }
}
