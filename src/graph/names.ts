// Node names are mirrored into metav1.Condition types, so they must be valid ones:
// `(dns1123Subdomain/)?qualifiedName`, at most 316 characters (the apiserver's own rule).
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const MAX_CONDITION_TYPE = 316;
const MAX_PREFIX = 253;
const MAX_NAME = 63;

/** The special event meaning "go to the default (last) child, whatever its name". */
export const DEFAULT_STATE = 'DefaultState';

/** Names a node cannot take: the special event and the condition types the operator writes itself. */
export const RESERVED_NAMES: readonly string[] = [DEFAULT_STATE, 'Ready', 'Reconciling', 'Stalled'];

/** Why `name` is not a valid Kubernetes condition type, or undefined when it is one. */
export function conditionTypeProblem(name: string): string | undefined {
  if (name.length === 0) return 'is empty';
  if (name.length > MAX_CONDITION_TYPE) return `is longer than ${MAX_CONDITION_TYPE} characters`;
  const slash = name.indexOf('/');
  const prefix = slash === -1 ? undefined : name.slice(0, slash);
  const local = slash === -1 ? name : name.slice(slash + 1);
  if (prefix !== undefined) {
    if (prefix.length > MAX_PREFIX) return `has a prefix longer than ${MAX_PREFIX} characters`;
    if (!DNS1123_SUBDOMAIN.test(prefix)) return `has a prefix "${prefix}" that is not a DNS-1123 subdomain`;
  }
  if (local.length > MAX_NAME) return `has a name part longer than ${MAX_NAME} characters`;
  if (!QUALIFIED_NAME.test(local)) {
    return 'is not a Kubernetes condition type: alphanumerics, "-", "_" and "." only, starting and ending with an alphanumeric, with an optional "dns.prefix/"';
  }
  return undefined;
}
