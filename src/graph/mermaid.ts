import { formatDuration } from './duration.ts';
import type { Graph, GraphNode } from './graph.ts';
import { cancelNote } from './validate.ts';
import { objectName } from './objects.ts';

/** A Mermaid class: its CSS (`fill:#ffd54f,stroke-width:3px`) and the nodes it applies to. */
export interface MermaidClass {
  readonly css: string;
  readonly nodes: readonly string[];
}

/**
 * A Mermaid state diagram. Nodes get short ids (names may hold '.', '/' or '-', which Mermaid ids
 * do not allow); a node whose action may be cancelled says so under its description; each edge is labelled with its priority, and "trigger" or "default".
 */
export function renderMermaid(graph: Graph, classes: Readonly<Record<string, MermaidClass>> = {}): string {
  const id = new Map(graph.nodeNames.map((name, i) => [name, `s${i}`]));
  const lines = ['---', `title: ${oneLine(graph.name)}`, '---', 'stateDiagram-v2'];
  for (const name of graph.nodeNames) {
    lines.push(`  state "${name}" as ${id.get(name)}`);
    const description = graph.node(name).description;
    if (description !== '') lines.push(`  ${id.get(name)} : ${oneLine(description)}`);
    for (const note of policyNotes(graph.node(name))) lines.push(`  ${id.get(name)} : ${note}`);
    for (const note of objectNotes(graph, name)) lines.push(`  ${id.get(name)} : ${oneLine(note)}`);
  }
  lines.push(`  [*] --> ${id.get(graph.entry)}`);
  for (const name of graph.nodeNames) {
    const node = graph.node(name);
    node.children.forEach((child, i) => {
      const role = i < node.triggers.length ? ' trigger' : child === node.defaultChild ? ' default' : '';
      lines.push(`  ${id.get(name)} --> ${id.get(child)} : ${i + 1}${role}${timeoutLabel(node, child)}`);
    });
    if (node.isLeaf) lines.push(`  ${id.get(name)} --> [*]`);
  }
  // Styling, e.g. the current node of a resource (`okt status --html`).
  for (const [className, { css, nodes }] of Object.entries(classes)) {
    const ids = nodes.filter((n) => id.has(n)).map((n) => id.get(n));
    if (ids.length === 0) continue;
    lines.push(`  classDef ${className} ${css}`, `  class ${ids.join(',')} ${className}`);
  }
  return `${lines.join('\n')}\n`;
}

/** ' timeout 10m' on the edge a node's deadline takes, else ''. */
export function timeoutLabel(node: GraphNode, child: string): string {
  return node.deadline?.then === child ? ` timeout ${formatDuration(node.deadline.afterMs)}` : '';
}

/** What a diagram writes beside a node of its policies: cancellation, a deadline that stalls, its own parameters and their re-run. */
export function policyNotes(node: GraphNode): string[] {
  const params = Object.keys((node.params?.properties as Record<string, unknown> | undefined) ?? {});
  const notes = [
    cancelNote(node.cancellable),
    stallingDeadline(node),
    params.length > 0 ? `params ${params.join(', ')}` : undefined,
    node.onParamsChange === 'Rerun' ? 'reruns on params change' : undefined,
  ];
  return notes.filter((note) => note !== undefined);
}

/**
 * What a node makes: the objects of its lifetime, of the spans starting there (until their end) and,
 * on the entry node, the graph's own (they live as long as the CR).
 */
export function objectNotes(graph: Graph, node: string): string[] {
  return graph.objects.flatMap(({ kind, name, lifetime }) => {
    // Not <cr>: Mermaid reads angle brackets as HTML.
    const made = `makes ${kind} ${objectName('{cr}', name)}`;
    if (lifetime.kind === 'graph') return node === graph.entry ? [`${made} for the graph`] : [];
    if (lifetime.kind === 'node') return lifetime.node === node ? [made] : [];
    return lifetime.from === node ? [`${made} until ${lifetime.until}`] : [];
  });
}

/** What a node whose deadline has no edge says of it: it stalls then. */
function stallingDeadline(node: GraphNode): string | undefined {
  return node.deadline !== undefined && node.deadline.then === undefined ? `deadline ${formatDuration(node.deadline.afterMs)}, then stalls` : undefined;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').replace(/[:;#]/g, ' ').trim();
}
