// Which sidecar URLs may receive the operator-wide token (`okt run --sidecar-token-file`). Every CR
// author is a tenant of one operator: a CR naming any URL must not be able to collect the token every
// sidecar accepts. The operator's token goes only to `--sidecar-url` and to URLs matching one of the
// `--sidecar-url-allow` patterns; a CR naming another URL brings its own token (a Secret in its own
// namespace), or nothing is sent.

/**
 * One allow-list entry: `http[s]://HOST[:PORT][/PATH]`.
 * - HOST: an exact host name or IP address (`[::1]` for IPv6), or `*.SUFFIX`, which matches any host
 *   with one or more labels before `.SUFFIX` (`*.okt-apps.svc.cluster.local`; never SUFFIX itself).
 * - PORT: a number, or `*` for any port; absent: the scheme's default port (80, 443) only.
 * - PATH: a path prefix matched at segment boundaries (`/a` matches `/a` and `/a/b`, not `/ab`); absent: any path.
 * A URL matches only with the same scheme, and without user info, query or fragment.
 */
export interface SidecarUrlPattern {
  readonly source: string;
  readonly protocol: 'http:' | 'https:';
  /** Lower case; with `wildcard`, the suffix after `*.`. */
  readonly host: string;
  readonly wildcard: boolean;
  /** undefined: any port. */
  readonly port: string | undefined;
  /** Without a trailing slash; '' matches every path. */
  readonly path: string;
}

export class SidecarUrlPatternError extends Error {
  override name = 'SidecarUrlPatternError';
}

const PATTERN = /^(https?):\/\/(\*\.)?(\[[0-9a-fA-F:.]+\]|[^/:?#@*\[\]]+)(?::(\d{1,5}|\*))?(\/[^?#*]*)?$/;
const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/** Parses one `--sidecar-url-allow` pattern; throws SidecarUrlPatternError saying what is wrong. */
export function parseSidecarUrlPattern(source: string): SidecarUrlPattern {
  const match = PATTERN.exec(source.trim());
  if (match === null) {
    throw new SidecarUrlPatternError(`"${source}" is not http[s]://HOST[:PORT][/PATH] (HOST may start with "*.", PORT may be "*"; no user info, query or fragment)`);
  }
  const [, scheme, star, rawHost, rawPort, rawPath] = match;
  const protocol = `${scheme}:` as 'http:' | 'https:';
  let parsed: URL;
  try {
    // The WHATWG parser normalizes the host (case, punycode, IPv4 forms) exactly as it will for a CR's URL.
    parsed = new URL(`${protocol}//${rawHost}${rawPort !== undefined && rawPort !== '*' ? `:${rawPort}` : ''}${rawPath ?? ''}`);
  } catch {
    throw new SidecarUrlPatternError(`"${source}": not a valid URL`);
  }
  const wildcard = star !== undefined;
  if (wildcard && (rawHost!.startsWith('[') || /^[\d.]+$/.test(rawHost!))) throw new SidecarUrlPatternError(`"${source}": "*." goes before a DNS name, not an IP address`);
  const port = rawPort === '*' ? undefined : parsed.port === '' ? DEFAULT_PORTS[protocol]! : parsed.port;
  return { source, protocol, host: parsed.hostname, wildcard, port, path: trimSlashes(parsed.pathname) };
}

/** The pattern that allows exactly the operator's own `--sidecar-url` (and the paths under it). */
export function exactUrlPattern(url: string): SidecarUrlPattern {
  const parsed = new URL(url);
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new SidecarUrlPatternError(`--sidecar-url "${url}": not http or https`);
  return {
    source: url,
    protocol: parsed.protocol,
    host: parsed.hostname,
    wildcard: false,
    port: parsed.port === '' ? DEFAULT_PORTS[parsed.protocol]! : parsed.port,
    path: trimSlashes(parsed.pathname),
  };
}

/** Whether the operator-wide token may go to `url`. */
export function urlMatches(pattern: SidecarUrlPattern, url: URL): boolean {
  if (url.protocol !== pattern.protocol || url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') return false;
  const host = url.hostname;
  if (pattern.wildcard ? !(host.endsWith(`.${pattern.host}`) && host.length > pattern.host.length + 1) : host !== pattern.host) return false;
  const port = url.port === '' ? DEFAULT_PORTS[url.protocol] : url.port;
  if (pattern.port !== undefined && port !== pattern.port) return false;
  const path = trimSlashes(url.pathname);
  return pattern.path === '' || path === pattern.path || path.startsWith(`${pattern.path}/`);
}

/** What the operator makes of a CR's sidecar URL. */
export type SidecarUrlVerdict =
  /** `url`: normalized, as the client will use it (the WHATWG parser's view, so no trick in the raw text changes the host). */
  | { kind: 'url'; url: string; operatorTokenAllowed: boolean }
  | { kind: 'invalid'; problem: string };

/** The operator's own sidecar URL and the patterns its token may also go to. */
export class SidecarUrlPolicy {
  readonly #patterns: readonly SidecarUrlPattern[];
  /** The last URL judged and its verdict: most CRs name one sidecar (--sidecar-url), looked at on every reconcile. */
  #last: { raw: string; verdict: SidecarUrlVerdict } | undefined;

  constructor(options: { defaultUrl?: string; allow?: readonly string[] }) {
    const patterns = (options.allow ?? []).map(parseSidecarUrlPattern);
    if (options.defaultUrl !== undefined) patterns.unshift(exactUrlPattern(options.defaultUrl));
    this.#patterns = patterns;
  }

  /** The patterns, as given (for messages). */
  get patterns(): readonly string[] {
    return this.#patterns.map((p) => p.source);
  }

  judge(raw: string): SidecarUrlVerdict {
    if (this.#last?.raw === raw) return this.#last.verdict;
    const verdict = Object.freeze(this.#judged(raw));
    this.#last = { raw, verdict };
    return verdict;
  }

  #judged(raw: string): SidecarUrlVerdict {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return { kind: 'invalid', problem: `"${raw}" is not a URL` };
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return { kind: 'invalid', problem: `"${raw}" is not http or https` };
    // Credentials belong in a Secret; user info is also the classic way to dress a foreign host up as an allowed one.
    if (url.username !== '' || url.password !== '') return { kind: 'invalid', problem: `"${raw}" has user info (user@ or user:password@ before the host ${url.host}); name a Secret in spec.sidecar.tokenSecretRef instead` };
    const normalized = url.href.replace(/\/+$/, '');
    return { kind: 'url', url: normalized, operatorTokenAllowed: this.#patterns.some((p) => urlMatches(p, url)) };
  }
}

function trimSlashes(path: string): string {
  return path.replace(/\/+$/, '');
}
