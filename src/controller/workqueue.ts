import { ExponentialFailureRateLimiter, type RateLimiter } from './rate-limiter.ts';

/** Optional hooks for metrics: depth after every change, and how long a key waited in the queue. */
export interface WorkQueueObserver {
  depth?(queued: number): void;
  latency?(seconds: number): void;
}

export interface WorkQueueOptions {
  rateLimiter?: RateLimiter;
  observer?: WorkQueueObserver;
}

/**
 * client-go's rate-limited delaying work queue. A key is queued at most once (dirty set); a key
 * being processed is never handed out again until `done(key)`: re-added meanwhile, it is queued
 * again at `done`. `addAfter` keeps the earliest deadline per key; `replaceAfter` sets it anew.
 * A deadline that comes while its key is processed, handed out after the deadline was set, adds
 * nothing: that processing is a later look than the one asked for, and its caller says as it ends
 * when the key is due again (the controller's `replaceAfter` or backoff), so the look it would queue
 * after `done` would be one too many (a running action's safety look racing the look its end woke).
 */
export class WorkQueue {
  readonly #rateLimiter: RateLimiter;
  readonly #observer: WorkQueueObserver;
  #queue: string[] = [];
  #head = 0;
  readonly #dirty = new Map<string, number>(); // key -> time it was queued (performance.now)
  /** Keys handed out and not done yet, each with the serial number of its hand-out. */
  readonly #processing = new Map<string, number>();
  #handedOut = 0;
  readonly #waiting = new Map<string, { readyAt: number; timer: NodeJS.Timeout }>();
  #getters: ((key: string | undefined) => void)[] = [];
  #idle: (() => void)[] = [];
  #shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.#rateLimiter = options.rateLimiter ?? new ExponentialFailureRateLimiter();
    this.#observer = options.observer ?? {};
  }

  /** Keys ready to hand out. */
  get length(): number {
    return this.#queue.length - this.#head;
  }
  get processing(): number {
    return this.#processing.size;
  }
  /** Keys waiting for an `addAfter` deadline. */
  get delayed(): number {
    return this.#waiting.size;
  }
  get shuttingDown(): boolean {
    return this.#shuttingDown;
  }

  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.set(key, performance.now());
    if (this.#processing.has(key)) return;
    this.#push(key);
  }

  /** Adds the key once `delayMs` has passed; a sooner deadline already set for it wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    const readyAt = Date.now() + delayMs;
    const existing = this.#waiting.get(key);
    if (existing) {
      if (existing.readyAt <= readyAt) return;
      clearTimeout(existing.timer);
    }
    const setAtHandOut = this.#handedOut;
    const timer = setTimeout(() => {
      this.#waiting.delete(key);
      if ((this.#processing.get(key) ?? 0) > setAtHandOut) return;
      this.add(key);
    }, delayMs);
    this.#waiting.set(key, { readyAt, timer });
  }

  /**
   * The key's next delayed look is `delayMs` from now, or none: any deadline set for it before is
   * dropped (the last reconcile, which saw everything, knows when it must look again).
   */
  replaceAfter(key: string, delayMs: number | undefined): void {
    const existing = this.#waiting.get(key);
    if (existing) {
      clearTimeout(existing.timer);
      this.#waiting.delete(key);
    }
    if (delayMs !== undefined && delayMs > 0) this.addAfter(key, delayMs);
  }

  /** Adds the key after its rate limiter's backoff (one more failure). */
  addRateLimited(key: string): void {
    this.addAfter(key, this.#rateLimiter.when(key));
  }

  /** Forgets the key's failures: its next error starts the backoff from the beginning. */
  forget(key: string): void {
    this.#rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.#rateLimiter.numRequeues(key);
  }

  /**
   * The next key to process (the caller must call `done(key)` after), or undefined once the
   * queue is shut down and no queued key remains.
   */
  get(): Promise<string | undefined> {
    if (this.length > 0) return Promise.resolve(this.#take());
    if (this.#shuttingDown) return Promise.resolve(undefined);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  done(key: string): void {
    if (!this.#processing.delete(key)) return;
    if (this.#dirty.has(key)) this.#push(key);
    else this.#settleIfIdle();
  }

  /**
   * Stops accepting keys and cancels pending `addAfter`s. Keys already queued are still handed
   * out; `get` resolves undefined once none is left.
   */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    for (const { timer } of this.#waiting.values()) clearTimeout(timer);
    this.#waiting.clear();
    if (this.length === 0) this.#releaseGetters();
    this.#settleIfIdle();
  }

  /** Shuts down and resolves when every queued key has been handed out and every one is done. */
  shutDownWithDrain(): Promise<void> {
    this.shutDown();
    return this.#drained();
  }

  /**
   * Shuts down and drops every queued key (a key re-added while processed included): `get`
   * resolves undefined from now on. Resolves once the keys already handed out are done.
   */
  shutDownAndDrop(): Promise<void> {
    this.#queue = [];
    this.#head = 0;
    this.#dirty.clear();
    this.#observer.depth?.(0);
    this.shutDown();
    return this.#drained();
  }

  #drained(): Promise<void> {
    if (this.#isDrained()) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #push(key: string): void {
    const getter = this.#getters.shift();
    if (getter) {
      this.#queue.push(key);
      getter(this.#take());
      return;
    }
    this.#queue.push(key);
    this.#observer.depth?.(this.length);
  }

  #take(): string {
    const key = this.#queue[this.#head] as string;
    this.#head += 1;
    if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    const queuedAt = this.#dirty.get(key);
    this.#dirty.delete(key);
    this.#handedOut += 1;
    this.#processing.set(key, this.#handedOut);
    if (queuedAt !== undefined) this.#observer.latency?.((performance.now() - queuedAt) / 1000);
    this.#observer.depth?.(this.length);
    if (this.#shuttingDown && this.length === 0) this.#releaseGetters();
    return key;
  }

  #releaseGetters(): void {
    const getters = this.#getters;
    this.#getters = [];
    for (const getter of getters) getter(undefined);
  }

  #isDrained(): boolean {
    return this.length === 0 && this.#processing.size === 0;
  }

  #settleIfIdle(): void {
    if (!this.#shuttingDown || !this.#isDrained()) return;
    const idle = this.#idle;
    this.#idle = [];
    for (const resolve of idle) resolve();
  }
}
