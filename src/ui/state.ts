// The CRs `okt ui` shows, as the watch tells of them: each change goes to every open page.
import type { Graph } from '../graph/index.ts';
import { isDeepStrictEqual } from 'node:util';
import type { ObjectView } from '../cli/status-objects.ts';
import type { LifecycleResource } from '../cli/status-view.ts';
import { crView, eventsBetween, initialEvents, layoutGraph, type CrView, type UiEvent, type UiEventDraft, type UiGraph } from './model.ts';

/** What the page's headline says. */
export interface UiTitle {
  kind: string;
  /** The CRD's name: databases.okt.dev. */
  crd: string;
  version: string;
  /** null: all namespaces. */
  namespace: string | null;
}

/** All a page needs to draw itself; later changes come as UiMessages. */
export interface UiSnapshot {
  title: UiTitle;
  /** The revision a CR whose own is not among `graphs` is drawn on (the CRD's, or --graph's). */
  defaultRevision: string;
  graphs: Record<string, UiGraph>;
  resources: CrView[];
  /** Oldest first. */
  events: UiEvent[];
}

export type UiMessage =
  | { type: 'resource'; resource: CrView }
  | { type: 'deleted'; key: string }
  | { type: 'event'; event: UiEvent }
  | { type: 'graph'; graph: UiGraph };

export interface UiStateOptions {
  title: UiTitle;
  graphs: readonly Graph[];
  defaultRevision: string;
  /** How many events are kept for a page that opens now. Default 200. */
  maxEvents?: number;
  /** A CR on a revision none of `graphs` is: the caller may find it and addGraph it. */
  onUnknownRevision?: (revision: string) => void;
  now?: () => Date;
}

export class UiState {
  readonly #title: UiTitle;
  readonly #defaultRevision: string;
  readonly #graphs = new Map<string, UiGraph>();
  readonly #resources = new Map<string, CrView>();
  readonly #events: UiEvent[] = [];
  /** Per CR, its objects as last read (setObjects): a change of the CR keeps them until the next read. */
  readonly #objectReads = new Map<string, ObjectView[]>();
  readonly #listeners = new Set<(message: UiMessage) => void>();
  readonly #maxEvents: number;
  readonly #onUnknownRevision: ((revision: string) => void) | undefined;
  readonly #asked = new Set<string>();
  readonly #now: () => Date;
  #nextEventId = 1;
  /** Until the first list is in: CRs arrive without events (they were there before). */
  #live = false;

  constructor(options: UiStateOptions) {
    this.#title = options.title;
    this.#defaultRevision = options.defaultRevision;
    for (const graph of options.graphs) this.#graphs.set(graph.revision, layoutGraph(graph));
    this.#maxEvents = options.maxEvents ?? 200;
    this.#onUnknownRevision = options.onUnknownRevision;
    this.#now = options.now ?? (() => new Date());
  }

  /** From now on changes are events; the events to start with are each CR's last transition. */
  goLive(): void {
    if (this.#live) return;
    this.#live = true;
    this.#record(initialEvents([...this.#resources.values()]));
  }

  upsert(resource: LifecycleResource): void {
    const view = this.#withReads(crView(resource));
    const before = this.#resources.get(view.key);
    this.#resources.set(view.key, view);
    this.#checkRevision(view);
    this.#send({ type: 'resource', resource: view });
    if (this.#live) this.#record(eventsBetween(before, view, this.#now()));
  }

  remove(resource: LifecycleResource): void {
    const view = crView(resource);
    const before = this.#resources.get(view.key) ?? view;
    if (!this.#resources.delete(view.key)) return;
    this.#objectReads.delete(view.key);
    this.#send({ type: 'deleted', key: view.key });
    if (this.#live) this.#record(eventsBetween(before, undefined, this.#now()));
  }

  /** The objects of the CR `key` as just read: its page is told when what they say changed. */
  setObjects(key: string, objects: ObjectView[]): void {
    const current = this.#resources.get(key);
    if (current === undefined) return;
    this.#objectReads.set(key, objects);
    const view = this.#withReads(current);
    if (isDeepStrictEqual(view.objects, current.objects)) return;
    this.#resources.set(key, view);
    this.#send({ type: 'resource', resource: view });
  }

  /** The view with its inventory's objects as last read (one not read yet stays as it is). */
  #withReads(view: CrView): CrView {
    const reads = this.#objectReads.get(view.key);
    if (reads === undefined) return view;
    const objects = view.objects.map((o) => reads.find((read) => read.id === o.id && read.kind === o.kind && read.name === o.name) ?? o);
    return { ...view, objects };
  }

  addGraph(graph: Graph): void {
    if (this.#graphs.has(graph.revision)) return;
    const layout = layoutGraph(graph);
    this.#graphs.set(graph.revision, layout);
    this.#send({ type: 'graph', graph: layout });
  }

  hasRevision(revision: string): boolean {
    return this.#graphs.has(revision);
  }

  snapshot(): UiSnapshot {
    return {
      title: this.#title,
      defaultRevision: this.#defaultRevision,
      graphs: Object.fromEntries(this.#graphs),
      resources: [...this.#resources.values()].sort((a, b) => a.key.localeCompare(b.key)),
      events: [...this.#events],
    };
  }

  /** Calls `listener` with every change; returns the function that stops it. */
  subscribe(listener: (message: UiMessage) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #checkRevision(view: CrView): void {
    const revision = view.revision;
    if (revision === null || this.#graphs.has(revision) || this.#asked.has(revision)) return;
    this.#asked.add(revision);
    this.#onUnknownRevision?.(revision);
  }

  #record(drafts: readonly UiEventDraft[]): void {
    for (const draft of drafts) {
      const event: UiEvent = { id: this.#nextEventId++, ...draft };
      this.#events.push(event);
      if (this.#events.length > this.#maxEvents) this.#events.shift();
      this.#send({ type: 'event', event });
    }
  }

  #send(message: UiMessage): void {
    for (const listener of this.#listeners) listener(message);
  }
}
