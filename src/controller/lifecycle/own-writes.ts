// This controller's own writes: what it wrote, newer than the informer's cache until the watch brings
// it (client-go's mutation cache), and the echo of each write told from another writer's change, so
// that an echo wakes nothing (the reconcile that wrote it has already asked for what comes next).
// An update older than the last write is no news either (a late echo of an earlier write, say): every
// write is conditional on the resourceVersion its reconcile read, so what came before it was read.
import { objectKey, type KubeObject } from '../../kube/transport/index.ts';
import { dropManagedFields } from '../informer.ts';

export class OwnWrites<T extends KubeObject> {
  /** Objects this controller wrote, newer than the cache until the watch brings them. */
  readonly #written = new Map<string, T>();
  /**
   * Keys with a write of this controller in flight, and the newest update the watch brought meanwhile:
   * the watch often brings a write's echo before its answer, and only the answer tells the echo.
   */
  readonly #writing = new Map<string, T | undefined>();
  readonly #lookAgain: (key: string) => void;

  /** `lookAgain`: enqueues a resource whose update, arrived during a write, was not that write's echo. */
  constructor(lookAgain: (key: string) => void) {
    this.#lookAgain = lookAgain;
  }

  /** The cached object, or the one this controller wrote last when the watch has not brought it yet. */
  current(key: string, cached: T | undefined): T | undefined {
    const written = this.#written.get(key);
    if (cached === undefined || written === undefined) return cached;
    return isNewer(written, cached) ? written : cached;
  }

  /** Whether an update the watch brought is news: neither this controller's write nor older (one in flight is told by its answer). */
  isNews(obj: T): boolean {
    const key = objectKey(obj);
    if (!this.#writing.has(key)) return !this.#isOwnOrOlder(obj);
    this.#writing.set(key, obj);
    return false;
  }

  /**
   * Sends one write of `obj` and keeps what the server answered (the next reconcile starts from it);
   * an update the watch brought meanwhile is looked at once the answer says whether it is the echo.
   */
  async write(obj: T, send: () => Promise<T>): Promise<T> {
    const key = objectKey(obj);
    this.#writing.set(key, undefined);
    try {
      const kept = dropManagedFields(await send());
      this.#written.set(key, kept);
      return kept;
    } finally {
      const arrived = this.#writing.get(key);
      this.#writing.delete(key);
      // A failed write, or another writer's change: looked at again (the watch has it in the cache).
      if (arrived !== undefined && !this.#isOwnOrOlder(arrived)) this.#lookAgain(key);
    }
  }

  forget(key: string): void {
    this.#written.delete(key);
  }

  /**
   * Whether `obj` is what this controller wrote last, or older: the echo of an earlier write the watch
   * brings late (while or after the next write), which that write was made over. Once the cache has
   * the last write, its copy goes.
   */
  #isOwnOrOlder(obj: T): boolean {
    const key = objectKey(obj);
    const written = this.#written.get(key);
    if (written === undefined) return false;
    if (isNewer(written, obj)) return true;
    this.#written.delete(key);
    return written.metadata.resourceVersion === obj.metadata.resourceVersion;
  }
}

/** resourceVersions are etcd revisions in every API server we know; where one is not a number, trust the cache. */
function isNewer(a: KubeObject, b: KubeObject): boolean {
  try {
    return BigInt(a.metadata.resourceVersion ?? '0') > BigInt(b.metadata.resourceVersion ?? '0');
  } catch {
    return false;
  }
}
