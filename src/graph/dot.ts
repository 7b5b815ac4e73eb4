import type { Graph } from './graph.ts';
import { objectNotes, policyNotes, timeoutLabel } from './mermaid.ts';

/**
 * A Graphviz DOT digraph (`dot -Tsvg`). Like the Mermaid diagram: the entry is marked by an arrow
 * from a point, leaves are double circles, each edge is labelled with its priority and "trigger" or
 * "default"; trigger edges are dashed. Node descriptions become tooltips. A deadline's edge is labelled
 * "timeout <duration>" and dotted; a deadline that stalls, and when the node's action may be cancelled,
 * are an external label (xlabel) of its node.
 */
export function renderDot(graph: Graph): string {
  const lines = [
    `digraph ${quote(graph.name)} {`,
    `  label=${quote(graph.name)};`,
    '  labelloc=t;',
    '  rankdir=TB;',
    '  node [shape=box, style=rounded, fontname="Helvetica"];',
    '  edge [fontname="Helvetica", fontsize=10];',
    '  "__entry" [shape=point, label=""];',
  ];
  for (const name of graph.nodeNames) {
    const node = graph.node(name);
    const attributes = [`label=${quote(name)}`];
    if (node.isLeaf) attributes.push('shape=doublecircle');
    if (node.description !== '') attributes.push(`tooltip=${quote(node.description)}`);
    const notes = [...policyNotes(node), ...objectNotes(graph, name)];
    if (notes.length > 0) attributes.push(`xlabel=${quote(notes.join(', '))}`);
    lines.push(`  ${quote(name)} [${attributes.join(', ')}];`);
  }
  lines.push(`  "__entry" -> ${quote(graph.entry)};`);
  for (const name of graph.nodeNames) {
    const node = graph.node(name);
    node.children.forEach((child, i) => {
      const isTrigger = i < node.triggers.length;
      const role = isTrigger ? ' trigger' : child === node.defaultChild ? ' default' : '';
      const timeout = timeoutLabel(node, child);
      const style = isTrigger ? ', style=dashed' : timeout !== '' ? ', style=dotted' : '';
      lines.push(`  ${quote(name)} -> ${quote(child)} [label=${quote(`${i + 1}${role}${timeout}`)}${style}];`);
    });
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

function quote(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\s+/g, ' ')}"`;
}
