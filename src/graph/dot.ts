import type { Graph } from './graph.ts';
import { cancelNote } from './validate.ts';

/**
 * A Graphviz DOT digraph (`dot -Tsvg`). Like the Mermaid diagram: the entry is marked by an arrow
 * from a point, leaves are double circles, a node whose action may be cancelled has
 * an outside label (xlabel) saying when, each edge is labelled with its priority and "trigger" or
 * "default"; trigger edges are dashed. Node descriptions become tooltips.
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
    const cancellable = cancelNote(node.cancellable);
    if (cancellable !== undefined) attributes.push(`xlabel=${quote(cancellable)}`);
    lines.push(`  ${quote(name)} [${attributes.join(', ')}];`);
  }
  lines.push(`  "__entry" -> ${quote(graph.entry)};`);
  for (const name of graph.nodeNames) {
    const node = graph.node(name);
    node.children.forEach((child, i) => {
      const isTrigger = i < node.triggers.length;
      const role = isTrigger ? ' trigger' : child === node.defaultChild ? ' default' : '';
      const style = isTrigger ? ', style=dashed' : '';
      lines.push(`  ${quote(name)} -> ${quote(child)} [label=${quote(`${i + 1}${role}`)}${style}];`);
    });
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

function quote(text: string): string {
  return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\s+/g, ' ')}"`;
}
