// Node names are mirrored into metav1.Condition types, so they must be valid ones:
// `(dns1123Subdomain/)?qualifiedName`, at most 316 characters (the apiserver's own rule).
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const MAX_CONDITION_TYPE = 316;
const MAX_PREFIX = 253;
const MAX_NAME = 63;

/** The special event meaning "go to the default (last) child, whatever its name". */
export const DEFAULT_STATE = 'DefaultState';

/** The one name a node cannot take: the special event (an event is a node's name). */
export const RESERVED_NAMES: readonly string[] = [DEFAULT_STATE];

/** The kstatus conditions okt writes itself (kubectl, Flux and Argo read them): a node of the same name gets a prefixed condition. */
export const KSTATUS_CONDITION_TYPES: readonly string[] = ['Ready', 'Reconciling', 'Stalled'];

/** The condition okt writes while its cycle brake holds a CR: which cycle, how often it turned, when its action starts (docs/operator.md#the-cycle-brake). */
export const CYCLE_BRAKE_CONDITION = 'CycleBrake';

/** The condition okt writes about the objects the graph makes at the CR's node: applied, or which one failed and why. */
export const OBJECTS_CONDITION = 'ObjectsApplied';

/** The condition okt writes when an action waits for its node's objects: ready (its action starts), not yet, or one failed. */
export const OBJECTS_READY_CONDITION = 'ObjectsReady';

/** Every condition type okt writes besides the node conditions. */
export const OWN_CONDITION_TYPES: readonly string[] = [...KSTATUS_CONDITION_TYPES, CYCLE_BRAKE_CONDITION, OBJECTS_CONDITION, OBJECTS_READY_CONDITION];

/** Where a node's condition goes when its name is one of okt's own condition types. */
export const NODE_CONDITION_PREFIX = 'node.okt.dev/';

/**
 * The condition type that mirrors a node: its name, except for a node named as one of okt's own
 * conditions (`Ready` -> `node.okt.dev/Ready`), so that any condition-type name can be a node name.
 */
export function nodeConditionType(node: string): string {
  return OWN_CONDITION_TYPES.includes(node) ? `${NODE_CONDITION_PREFIX}${node}` : node;
}

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
