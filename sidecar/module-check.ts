// Every `module` action's file is loaded and its export looked up at start, so a missing file or a
// misspelled export is refused then, not found by the first resource that reaches the node. (The
// action later gets the same module instance: Node loads a module once.)
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ConfigProblem, SidecarConfig } from './config.ts';

export async function moduleProblems(config: SidecarConfig): Promise<ConfigProblem[]> {
  const problems: ConfigProblem[] = [];
  for (const [graph, graphConfig] of Object.entries(config.graphs)) {
    for (const [node, action] of Object.entries(graphConfig.nodes)) {
      if (!('module' in action)) continue;
      const reason = await moduleProblem(path.resolve(config.baseDir, action.module.path), action.module.export);
      if (reason !== undefined) problems.push({ field: `graphs.${graph}.nodes.${node}.module`, reason });
    }
  }
  return problems;
}

async function moduleProblem(file: string, exportName: string): Promise<string | undefined> {
  if (!existsSync(file)) return `${file}: no such file`;
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    return `${file} cannot be loaded: ${firstLine(error instanceof Error ? error.message : String(error))} (run it with node to see the whole error)`;
  }
  if (!(exportName in module)) return `${file} has no export "${exportName}" (its exports: ${Object.keys(module).join(', ') || 'none'})`;
  const value = module[exportName];
  if (typeof value !== 'function') return `${file}: its export "${exportName}" is ${value === null ? 'null' : `a ${typeof value}`}, not a function`;
  return undefined;
}

function firstLine(text: string): string {
  return text.split('\n', 1)[0]!.trim();
}
