import { DEFAULT_STATE, graphTable, type Graph, type GraphTable } from '../graph/index.ts';

/**
 * A reusable set of events for the compiled form. Membership is a generation stamp per event id, so
 * clear() is O(1) and nothing is allocated once the set exists. Event id = node id, and
 * `DefaultState` gets the id just after the last node.
 */
export class EventSet {
  /** marks[id] === generation means the event is in the set. */
  readonly marks: Uint32Array;
  generation = 1;
  readonly #ids: ReadonlyMap<string, number>;

  constructor(ids: ReadonlyMap<string, number>, nodeCount: number) {
    this.#ids = ids;
    this.marks = new Uint32Array(nodeCount + 1);
  }

  clear(): void {
    // Wrap while the stamp is still a small integer (smi), so bumping it never boxes a number.
    if (++this.generation === 0x3fff_ffff) {
      this.marks.fill(0);
      this.generation = 1;
    }
  }

  /** Adds an event by name; returns false (and ignores it) when it names no node and is not DefaultState. */
  add(event: string): boolean {
    const id = event === DEFAULT_STATE ? this.marks.length - 1 : this.#ids.get(event);
    if (id === undefined) return false;
    this.marks[id] = this.generation;
    return true;
  }

  addId(id: number): void {
    this.marks[id] = this.generation;
  }

  hasId(id: number): boolean {
    return this.marks[id] === this.generation;
  }
}

/**
 * The low-level form of a graph for the operator's hot path: node and event names interned to small
 * integers, children as int arrays. `next(current, events)` allocates nothing.
 */
export class CompiledGraph<S extends string = string> {
  readonly graph: Graph<S>;
  /** The id of the DefaultState event in every EventSet of this graph. */
  readonly defaultEvent: number;
  readonly entry: number;
  readonly #table: GraphTable;
  readonly #childStart: Int32Array;
  readonly #children: Int32Array;

  constructor(graph: Graph<S>) {
    this.graph = graph;
    this.#table = graphTable(graph);
    this.#childStart = this.#table.childStart;
    this.#children = this.#table.children;
    this.defaultEvent = this.#table.names.length;
    this.entry = this.#table.entry;
  }

  get size(): number {
    return this.#table.names.length;
  }

  /** The id of a node, or of DefaultState; -1 when the name is unknown. */
  id(name: string): number {
    if (name === DEFAULT_STATE) return this.defaultEvent;
    return this.#table.ids.get(name) ?? -1;
  }

  name(id: number): S {
    const name = this.#table.names[id];
    if (name === undefined) throw new RangeError(`graph "${this.graph.name}" has no node id ${id}`);
    return name as S;
  }

  isLeaf(id: number): boolean {
    return this.#childStart[id] === this.#childStart[id + 1];
  }

  /** A new, empty, reusable event set for this graph. */
  events(): EventSet {
    return new EventSet(this.#table.ids, this.#table.names.length);
  }

  /**
   * OKT's EnterNextState: the first child (in priority order) named by an event is entered; the
   * default (last) child is also entered on DefaultState. No match, or a leaf: stay.
   */
  next(current: number, events: EventSet): number {
    const start = this.#childStart[current]!;
    const end = this.#childStart[current + 1]!;
    if (start === end) return current;
    const marks = events.marks;
    const generation = events.generation;
    for (let i = start; i < end; i++) {
      const child = this.#children[i]!;
      if (marks[child] === generation) return child;
    }
    // Checking DefaultState after the loop is the same as checking it at the default child: it is the last.
    return marks[this.defaultEvent] === generation ? this.#children[end - 1]! : current;
  }
}

const compiled = new WeakMap<Graph<string>, { compiled: CompiledGraph<string>; scratch: EventSet }>();

function compiledEntry<S extends string>(graph: Graph<S>) {
  let entry = compiled.get(graph);
  if (entry === undefined) {
    const form = new CompiledGraph<string>(graph);
    entry = { compiled: form, scratch: form.events() };
    compiled.set(graph, entry);
  }
  return entry as { compiled: CompiledGraph<S>; scratch: EventSet };
}

/** The compiled form of a graph, built once per graph and cached. */
export function compileGraph<S extends string>(graph: Graph<S>): CompiledGraph<S> {
  return compiledEntry(graph).compiled;
}

/**
 * One decision (OKT EnterNextState): the node to be in after offering `events` at `current`.
 * Returns `current` when no child matches. Events that name no child are ignored. An array of events
 * is read without allocating.
 */
export function decide<S extends string>(graph: Graph<S>, current: NoInfer<S>, events: Iterable<string>): S {
  const { compiled: form, scratch } = compiledEntry(graph);
  const id = form.id(current);
  if (id < 0 || id === form.defaultEvent) throw new RangeError(`graph "${graph.name}" has no node "${current}"`);
  scratch.clear();
  if (Array.isArray(events)) {
    for (let i = 0; i < events.length; i++) scratch.add(events[i] as string);
  } else {
    for (const event of events) scratch.add(event);
  }
  return form.name(form.next(id, scratch));
}
