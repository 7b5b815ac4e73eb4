import { SIDECAR_TOKEN_SECRET_TYPE, type LifecycleSpec } from '../../kube/lifecycle-resource.ts';
import type { KubeObject, KubeTransport } from '../../kube/transport/index.ts';
import { readTokenFile, SidecarClient, SidecarProblemError } from '../../sidecar-client/index.ts';
import { classifySecretFailure, notAllowedRefusal, operatorTokenInSecretRefusal, SidecarSecretError, SidecarSecretTypeError } from './error-policy.ts';
import { SidecarUrlPolicy } from './sidecar-policy.ts';
import type { SidecarRefusal } from './step.ts';
import type { Logger } from '../logger.ts';

const SECRETS = { group: '', version: 'v1', plural: 'secrets' } as const;

/**
 * A token read from a Secret or from the operator-wide token file is read again at most this long
 * after (a rotation is noticed even without a 401), and at once after its sidecar answers 401.
 */
export const SECRET_TOKEN_MAX_AGE_MS = 60_000;

export interface SidecarDefaults {
  /** `okt run --sidecar-url`: the sidecar of CRs without spec.sidecar.url; the operator-wide token may go there. */
  url?: string;
  /** The operator-wide token, fixed for the operator's life. Not with `tokenFile`. */
  token?: string;
  /**
   * `okt run --sidecar-token-file`: the file holding the operator-wide token (e.g. a mounted Secret,
   * which the kubelet updates in place). Read at start (unreadable or empty: startOperator throws),
   * then again at most SECRET_TOKEN_MAX_AGE_MS later and at once after a sidecar answers 401 to it;
   * a read that fails then (the kubelet swapping its symlink) keeps the token read before, with a
   * warning. Not with `token`.
   */
  tokenFile?: string;
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
      /**
       * Where the token came from when it is read again after a 401 (a Secret or the operator-wide
       * token file; see forgetRefusedToken). Absent for a fixed token (or none).
       */
      tokenSource?: string;
    }
  /** Nothing is sent to the CR's sidecar: the step says why on the CR. */
  | { kind: 'refused'; refusal: SidecarRefusal };

/** The id, among token sources, of the operator-wide token file (a Secret's is `namespace/name/key`: no colon). */
const FILE_SOURCE = 'file:';

/**
 * The operator-wide token file read again; when it cannot be read or is empty (the kubelet swaps the
 * symlink of a mounted Secret), the token read before, with a warning naming the file.
 */
function fileTokenOr(file: string, previous: string | undefined, logger: Logger | undefined): string {
  try {
    return readTokenFile(file);
  } catch (error) {
    if (previous === undefined) throw error;
    logger?.warn({ file, err: error }, `${error instanceof Error ? error.message : String(error)}: the operator-wide token read before is kept (read again after the next 401, or in ${SECRET_TOKEN_MAX_AGE_MS / 1000} s)`);
    return previous;
  }
}

/**
 * One keep-alive sidecar client per (url, token), shared by every CR that names the same sidecar.
 * The operator-wide token goes only to URLs the policy allows; a CR naming another URL must name a
 * Secret, which is read only in the CR's own namespace (the ref has no namespace field) and only when
 * of type SIDECAR_TOKEN_SECRET_TYPE (see sidecarTokenOf), and never carries the operator-wide token
 * past the allow-list. A token read
 * from a Secret or from the operator-wide token file is cached for at most SECRET_TOKEN_MAX_AGE_MS and
 * read again at once after its sidecar answers 401 (`forgetRefusedToken`): a rotated token heals by itself.
 */
export class SidecarClients {
  readonly #transport: KubeTransport;
  readonly #defaults: SidecarDefaults;
  readonly #policy: SidecarUrlPolicy;
  readonly #clients = new Map<string, SidecarClient>();
  /** By token source (see SidecarResolution.tokenSource): the token last read, and when. */
  readonly #tokens = new Map<string, { token: string; readAt: number }>();
  readonly #now: () => number;
  readonly #logger: Logger | undefined;

  constructor(transport: KubeTransport, defaults: SidecarDefaults, options: { now?: () => number; logger?: Logger } = {}) {
    if (defaults.token !== undefined && defaults.tokenFile !== undefined) throw new Error('sidecar: give the operator-wide token as token or as tokenFile, not both');
    this.#transport = transport;
    this.#defaults = defaults;
    this.#policy = new SidecarUrlPolicy({ ...(defaults.url === undefined ? {} : { defaultUrl: defaults.url }), allow: defaults.allow ?? [] });
    this.#now = options.now ?? Date.now;
    this.#logger = options.logger;
    // Read at start, so that a missing file stops the operator rather than stalling every CR.
    if (defaults.tokenFile !== undefined) this.#tokens.set(FILE_SOURCE, { token: readTokenFile(defaults.tokenFile), readAt: this.#now() });
  }

  /**
   * The client for a CR's sidecar, or why there is none: at spec.sidecar.url, else at `graphUrl` (the
   * URL of the Service the graph makes for the CR: sidecarServiceUrl), else at --sidecar-url. Throws
   * only on a transient failure to read the CR's Secret (the work queue retries it).
   */
  async forSpec(spec: LifecycleSpec, namespace: string, graphUrl?: string): Promise<SidecarResolution> {
    const named = spec.sidecar?.url ?? graphUrl ?? this.#defaults.url;
    if (named === undefined) return { kind: 'none' };
    const judged = this.#policy.judge(named);
    if (judged.kind === 'invalid') return { kind: 'refused', refusal: notAllowedRefusal(named, judged.problem, this.#policy.patterns) };
    // The graph's own Service is the admin's choice as much as --sidecar-url is: its host and port
    // come from the graph and the CR's name and namespace, never from the CR's spec (which, naming a
    // URL, is judged by the allow-list alone).
    const fromGraph = spec.sidecar?.url === undefined && named === graphUrl;
    const verdict = fromGraph ? { ...judged, operatorTokenAllowed: true } : judged;
    const ref = spec.sidecar?.tokenSecretRef;
    let token: string;
    let tokenSource: string | undefined;
    if (ref !== undefined) {
      tokenSource = `${namespace}/${ref.name}/${ref.key}`;
      try {
        token = await this.#token(tokenSource, () => this.#secretToken(namespace, ref.name, ref.key));
      } catch (error) {
        const policy = classifySecretFailure(error, { namespace, name: ref.name, key: ref.key });
        if (policy.kind === 'retry') throw error;
        return { kind: 'refused', refusal: policy.refusal };
      }
      // A sidecar-token Secret holding the operator-wide token (copied by mistake) must not carry it
      // past the allow-list.
      if (!verdict.operatorTokenAllowed && token === this.#operatorToken()) {
        return { kind: 'refused', refusal: operatorTokenInSecretRefusal(named, `${namespace}/${ref.name}`) };
      }
    } else if (!verdict.operatorTokenAllowed) {
      return { kind: 'refused', refusal: notAllowedRefusal(named, undefined, this.#policy.patterns) };
    } else if (this.#defaults.tokenFile !== undefined) {
      const file = this.#defaults.tokenFile;
      tokenSource = FILE_SOURCE;
      token = await this.#token(tokenSource, (previous) => fileTokenOr(file, previous, this.#logger));
    } else {
      token = this.#defaults.token ?? '';
    }
    const id = `${verdict.url}\n${token}`;
    let client = this.#clients.get(id);
    if (client === undefined) {
      client = new SidecarClient({ baseUrl: verdict.url, token });
      this.#clients.set(id, client);
    }
    return tokenSource === undefined ? { kind: 'client', client, url: verdict.url } : { kind: 'client', client, url: verdict.url, tokenSource };
  }

  /**
   * After a failed call to a resolved sidecar: a 401 to a token read from a Secret or the token file
   * makes it read again at the next look (it may have been rotated). A fixed token stays as it is.
   */
  forgetRefusedToken(resolved: SidecarResolution, error: unknown): void {
    if (resolved.kind !== 'client' || resolved.tokenSource === undefined) return;
    if (!(error instanceof SidecarProblemError && error.status === 401)) return;
    const cached = this.#tokens.get(resolved.tokenSource);
    // Kept, not deleted: the operator-wide token file falls back on it when it cannot be read.
    if (cached !== undefined) cached.readAt = Number.NEGATIVE_INFINITY;
  }

  async close(): Promise<void> {
    await Promise.all([...this.#clients.values()].map((c) => c.close()));
    this.#clients.clear();
  }

  /** The operator-wide token as last read (undefined when there is none). */
  #operatorToken(): string | undefined {
    return this.#defaults.tokenFile === undefined ? this.#defaults.token : this.#tokens.get(FILE_SOURCE)?.token;
  }

  /** The cached token of a source while younger than SECRET_TOKEN_MAX_AGE_MS (and not forgotten), else `read` (given the one cached). */
  async #token(source: string, read: (previous: string | undefined) => string | Promise<string>): Promise<string> {
    const cached = this.#tokens.get(source);
    if (cached !== undefined && this.#now() - cached.readAt < SECRET_TOKEN_MAX_AGE_MS) return cached.token;
    const token = await read(cached?.token);
    this.#tokens.set(source, { token, readAt: this.#now() });
    return token;
  }

  async #secretToken(namespace: string, name: string, key: string): Promise<string> {
    // Only ever the CR's own namespace: a CR cannot make the operator read another tenant's Secret.
    return sidecarTokenOf(await this.#transport.get<SecretObject>(SECRETS, namespace, name), { namespace, name, key });
  }
}

export type SecretObject = KubeObject & { type?: string; data?: Record<string, string> };

/**
 * The token under `key` of a Secret a CR named. Its type is checked before anything else: a Secret
 * not made to be a sidecar token (a database password, say) throws SidecarSecretTypeError, its data
 * untouched, so that a CR author who may not read Secrets cannot have one sent to a URL of theirs.
 */
export function sidecarTokenOf(secret: SecretObject, ref: { namespace: string; name: string; key: string }): string {
  const { namespace, name, key } = ref;
  // The API server writes an absent type as Opaque; said so, for the message.
  if (secret.type !== SIDECAR_TOKEN_SECRET_TYPE) throw new SidecarSecretTypeError(namespace, name, secret.type ?? 'Opaque');
  const encoded = secret.data?.[key];
  if (encoded === undefined) throw new SidecarSecretError(`Secret ${namespace}/${name} has no key "${key}"`);
  const token = Buffer.from(encoded, 'base64').toString('utf8').trim();
  if (token === '') throw new SidecarSecretError(`key "${key}" of Secret ${namespace}/${name} is empty`);
  return token;
}
