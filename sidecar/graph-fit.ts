// Whether a graph's part of the sidecar config fits the graph. A node name the graph lacks, or an event
// no decision can take there, passes the config's schema and leaves a CR waiting for ever: the sidecar
// refuses it at start instead.
import type { Graph } from '../src/graph/index.ts';
import { DEFAULT_STATE_EVENT } from '../src/sidecar-client/protocol.ts';
import { didYouMean } from '../src/util/did-you-mean.ts';
import type { ActionConfig, ConfigProblem, GraphConfig } from './config.ts';

export interface GraphFit {
  problems: ConfigProblem[];
  /** Nodes with an action in the graph and none in the config: a CR that reaches one stalls (SidecarRefused). */
  missingActions: string[];
}

/** Checks `config`, the config of graph `name`, against `graph`, loaded from `file`. */
export function fitToGraph(name: string, config: GraphConfig, graph: Graph, file: string): GraphFit {
  const problems: ConfigProblem[] = [];
  const at = `graphs.${name}`;
  const withActions = graph.nodeNames.filter((node) => graph.node(node).hasAction);
  if (graph.name !== name) {
    // The operator names the graph in every start: a config key other than the graph's name is never asked for.
    problems.push({ field: `${at}.graph`, reason: `${file} holds graph "${graph.name}", not "${name}"` });
  }
  for (const [node, action] of Object.entries(config.nodes)) {
    const field = `${at}.nodes.${node}`;
    // A node's name before an upgrade (renamed, or removed and mapped): its action still serves the
    // operations started under that name, so a config may keep it while CRs migrate.
    if (!graph.has(node) && (graph.formerNames.has(node) || graph.migrations.removed.has(node))) continue;
    if (!graph.has(node)) {
      problems.push({ field, reason: `graph "${graph.name}" has no node ${node}${didYouMean(node, withActions)} (its nodes with an action: ${withActions.join(', ') || 'none'})` });
      continue;
    }
    if (!graph.node(node).hasAction) {
      const which = node === graph.entry ? 'the entry node' : 'a leaf';
      problems.push({ field, reason: `node ${node} of graph "${graph.name}" is ${which}, which has no action (the entry node and the leaves have none)` });
      continue;
    }
    // An action's events are decided at its own node: only its children, or the default one, move it.
    const events = [...graph.node(node).children, DEFAULT_STATE_EVENT];
    for (const [where, event] of raisedEvents(action)) {
      if (!events.includes(event)) {
        problems.push({ field: `${field}.${where}`, reason: `${event} moves nothing from node ${node}${didYouMean(event, events)} (its events: ${events.join(', ')})` });
      }
    }
  }
  const probe = config.probe;
  for (const [status, node] of Object.entries(probe?.states ?? {})) {
    if (!graph.has(node)) problems.push({ field: `${at}.probe.states.${status}`, reason: `graph "${graph.name}" has no node ${node}${didYouMean(node, graph.nodeNames)}` });
  }
  // A probe's events are decided at whatever node the resource is in: any node, or the default child.
  const anyEvent = [...graph.nodeNames, DEFAULT_STATE_EVENT];
  for (const [status, event] of Object.entries(probe?.events ?? {})) {
    if (!anyEvent.includes(event)) problems.push({ field: `${at}.probe.events.${status}`, reason: `${event} is neither a node of graph "${graph.name}" nor ${DEFAULT_STATE_EVENT}${didYouMean(event, anyEvent)}` });
  }
  return { problems, missingActions: withActions.filter((node) => !(node in config.nodes)) };
}

/** Every event an action may raise by the config's say-so, with the field that says it. */
function raisedEvents(action: ActionConfig): [string, string][] {
  const raised: [string, string][] = action.onSuccess.map((event, i) => [`onSuccess.${i}`, event]);
  if (action.onFailure !== undefined) raised.push(['onFailure', action.onFailure]);
  if ('http' in action) {
    for (const [status, events] of Object.entries(action.http.statusEvents)) events.forEach((event, i) => raised.push([`http.statusEvents.${status}.${i}`, event]));
  }
  return raised;
}
