import { databaseGraph } from '../../graphs/database.ts';
import { reconciliationGraph } from '../../graphs/reconciliation.ts';
import type { Graph } from '../graph/index.ts';
import type { CrdNames } from '../kube/crd.ts';

/** A graph shipped with okt, with the names of its committed CRD (crds/<graph name>.yaml). */
export interface BundledGraph {
  readonly graph: Graph;
  /** The module that defines it, relative to the package root. */
  readonly file: string;
  readonly crd: CrdNames;
}

export const BUNDLED_GRAPHS: readonly BundledGraph[] = [
  {
    graph: databaseGraph,
    file: 'graphs/database.ts',
    crd: { group: 'okt.dev', version: 'v1alpha1', kind: 'Database', shortNames: ['odb'] },
  },
  {
    graph: reconciliationGraph,
    file: 'graphs/reconciliation.ts',
    crd: { group: 'okt.dev', version: 'v1alpha1', kind: 'Reconciliation', shortNames: ['orc'] },
  },
];

/** The bundled graph of that name (what a CRD's okt.dev/graph annotation names), if any. */
export function bundledGraph(name: string): BundledGraph | undefined {
  return BUNDLED_GRAPHS.find((b) => b.graph.name === name);
}
