import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical-json.ts';
import type { ParamsDeclaration } from './params.ts';
import type { ObjectData } from './schema.ts';
import type { CancelPolicy, ResolvedNode } from './validate.ts';

/** The digits of a revision: 64 bits of sha256, plenty to tell a kind's revisions apart, short enough to read. */
const REVISION_HEX_DIGITS = 16;

/**
 * A graph's revision: a hash of what it does, normalized (nodes sorted by name, policies with their
 * defaults filled in). Descriptions, `formerly`, migrations and earlier revisions are left out: they
 * change no CR's course, so editing them makes no new revision.
 */
export function graphRevision(name: string, entry: string, nodes: readonly ResolvedNode[], params: ParamsDeclaration | undefined, objects: readonly ObjectData[] = []): string {
  const behaviour = [...nodes]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((n) => [
      n.name,
      n.children,
      n.triggers.length,
      n.retry === undefined ? null : [n.retry.attempts, n.retry.backoffMs],
      cancelBehaviour(n.cancellable),
      ...deletionBehaviour(n, n.name === entry),
      // Only when declared: a graph without deadlines keeps the revision it had before they existed.
      ...(n.deadline === undefined ? [] : [[n.deadline.afterMs, n.deadline.then ?? null]]),
      // Parameters (what the CRD holds and an action gets) and their policy, likewise only when declared.
      ...(n.params === undefined && n.onParamsChange === 'NextTransition' ? [] : [[canonicalJson(n.params?.schema ?? null), n.onParamsChange]]),
    ]);
  // Objects (as data: their functions are code), likewise only when declared, in the graph's order (the order deletion goes by).
  const made = objects.length === 0 ? [] : [['objects', canonicalJson(objects)]];
  const text = JSON.stringify([name, entry, behaviour, ...(params === undefined ? [] : [canonicalJson(params.schema)]), ...made]);
  return createHash('sha256').update(text).digest('hex').slice(0, REVISION_HEX_DIGITS);
}

/**
 * The deletion child, and for the entry node the default child it was before deletion stopped taking it
 * there (so a graph without an entry onDelete keeps its revision), marked when an entry's onDelete names
 * that default child: deletion then runs it, which the unmarked form says it does not.
 */
function deletionBehaviour(n: ResolvedNode, isEntry: boolean): unknown[] {
  if (!isEntry) return [n.deletionChild ?? null];
  const defaultChild = n.children.length > n.triggers.length ? n.children.at(-1) : undefined;
  const slot = n.deletionChild ?? defaultChild ?? null;
  return n.deletionChild !== undefined && n.deletionChild === defaultChild ? [slot, ['entryOnDelete', slot]] : [slot];
}

/** A node cancelled on nothing hashes as `false`, as before the policy had cases: graphs without it keep their revision. */
function cancelBehaviour(policy: CancelPolicy): false | [boolean, boolean] {
  return policy.onDelete || policy.onDesiredChange ? [policy.onDelete, policy.onDesiredChange] : false;
}
