/**
 * An in-memory ListWatchClient that behaves as the apiserver does where the loop depends on
 * it: every write bumps one resourceVersion counter; a list is consistent at the current one
 * (in pages); a watch replays the events after its resourceVersion, then follows new writes;
 * a watch from before the compaction point gets an ERROR event with a 410 Status and ends.
 * Tests act as the server: write (`apply`, `delete`), send bookmarks, end or expire open
 * watches, compact history, and inject failures. Events are delivered synchronously, so a
 * write's handlers have run when the write returns.
 */
import { K8sApiError } from '../../index.js';
import {
  objectKey,
  type ListWatchClient,
  type RawObject,
  type WatchEvent,
  type WatchRequest,
} from './list-watch-client.js';

/** A watch the fake is serving. */
interface OpenWatch {
  readonly onEvent: (event: WatchEvent) => void;
  readonly finish: (error?: unknown) => void;
}

/** An in-memory collection with list and watch (one "apiserver" for one resource). */
export class FakeListWatchClient implements ListWatchClient {
  readonly description: string;
  /** Items per list page. */
  readonly pageSize: number;
  /** Every watch request received, in order (failed ones included). */
  readonly watchRequests: WatchRequest[] = [];
  /** Lists started (failed ones included). */
  listCalls = 0;
  readonly #objects = new Map<string, RawObject>();
  readonly #history: { readonly version: number; readonly event: WatchEvent }[] = [];
  readonly #open = new Set<OpenWatch>();
  readonly #listFailures: Error[] = [];
  readonly #watchFailures: Error[] = [];
  readonly #watchWaiters: { count: number; resolve: (request: WatchRequest) => void }[] = [];
  #servedCount = 0;
  #version = 100;
  /** Watches from a resourceVersion below this get 410. */
  #compactedAt = 0;

  constructor(options: { description?: string; pageSize?: number } = {}) {
    this.description = options.description ?? 'fake collection';
    this.pageSize = options.pageSize ?? 2;
  }

  /** The collection's current resourceVersion. */
  get resourceVersion(): string {
    return String(this.#version);
  }

  /** Watches open now. */
  get openWatches(): number {
    return this.#open.size;
  }

  async list(
    onPage: (items: readonly RawObject[]) => void,
    signal: AbortSignal,
  ): Promise<{ resourceVersion: string }> {
    this.listCalls += 1;
    await Promise.resolve();
    signal.throwIfAborted();
    const failure = this.#listFailures.shift();
    if (failure !== undefined) throw failure;
    const items = [...this.#objects.keys()].sort().map((key) => this.#objects.get(key) as RawObject);
    for (let i = 0; i < items.length; i += this.pageSize) onPage(items.slice(i, i + this.pageSize).map(copy));
    if (items.length === 0) onPage([]);
    return { resourceVersion: this.resourceVersion };
  }

  async watch(
    request: WatchRequest,
    onEvent: (event: WatchEvent) => void,
    signal: AbortSignal,
  ): Promise<void> {
    this.watchRequests.push(request);
    await Promise.resolve();
    const failure = this.#watchFailures.shift();
    if (failure !== undefined) {
      this.#served();
      throw failure;
    }
    if (signal.aborted) {
      this.#served();
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const open: OpenWatch = {
        onEvent,
        finish: (error) => {
          this.#open.delete(open);
          signal.removeEventListener('abort', onAbort);
          if (error === undefined) resolve();
          else reject(error as Error);
        },
      };
      const onAbort = (): void => open.finish();
      signal.addEventListener('abort', onAbort, { once: true });
      this.#open.add(open);
      this.#replay(open, request.resourceVersion);
      this.#served();
    });
  }

  /** Creates or replaces the object (by namespace/name), as another client would; returns it as stored. */
  apply(object: RawObject): RawObject {
    const key = objectKey(object);
    if (key === undefined) throw new RangeError('FakeListWatchClient.apply: the object has no metadata.name');
    const type = this.#objects.has(key) ? 'MODIFIED' : 'ADDED';
    const stored = this.#stamp(object);
    this.#objects.set(key, stored);
    this.#emit({ type, object: stored });
    return copy(stored);
  }

  /** Deletes the object `key` (`name` or `namespace/name`); a missing one is a 404. */
  delete(key: string): void {
    const current = this.#objects.get(key);
    if (!current) throw new K8sApiError(404, 'NotFound', `"${key}" not found`);
    this.#objects.delete(key);
    this.#emit({ type: 'DELETED', object: this.#stamp(current) });
  }

  /**
   * Runs `writes` without telling the open watches, as if they missed them (a partition);
   * the history keeps them, so a watch that resumes from before them still replays them
   * unless `compact` dropped them.
   */
  unseen(writes: () => void): void {
    const open = [...this.#open];
    this.#open.clear();
    try {
      writes();
    } finally {
      for (const watch of open) this.#open.add(watch);
    }
  }

  /** Sends every open watch a BOOKMARK at the current resourceVersion. */
  bookmark(): void {
    const event: WatchEvent = {
      type: 'BOOKMARK',
      object: { metadata: { resourceVersion: this.resourceVersion } },
    };
    for (const watch of [...this.#open]) watch.onEvent(event);
  }

  /** The server ends every open watch (its timeout, a restart). */
  endWatches(): void {
    for (const watch of [...this.#open]) watch.finish();
  }

  /** Breaks every open watch with `error` (a reset connection). */
  breakWatches(error: unknown): void {
    for (const watch of [...this.#open]) watch.finish(error);
  }

  /**
   * Forgets the history up to now, as etcd compaction or a watch cache that moved on does: a
   * watch from an older resourceVersion gets 410. With `expireOpen`, open watches get the
   * ERROR event now and end.
   */
  compact(options: { expireOpen?: boolean } = {}): void {
    this.#compactedAt = this.#version;
    this.#history.length = 0;
    if (!options.expireOpen) return;
    for (const watch of [...this.#open]) {
      watch.onEvent(expired(this.#version, this.#version));
      watch.finish();
    }
  }

  /** The next list fails with `error` (once per call). */
  failNextList(error: Error): void {
    this.#listFailures.push(error);
  }

  /** The next watch fails to start with `error` (once per call). */
  failNextWatch(error: Error): void {
    this.#watchFailures.push(error);
  }

  /**
   * Resolves with the `count`-th watch request (1-based) once it has been served: open (its
   * replay delivered), refused, or ended at once (410).
   */
  waitForWatch(count: number): Promise<WatchRequest> {
    const served = this.watchRequests[count - 1];
    if (served && this.#servedCount >= count) return Promise.resolve(served);
    return new Promise((resolve) => this.#watchWaiters.push({ count, resolve }));
  }

  #served(): void {
    this.#servedCount += 1;
    for (const waiter of this.#watchWaiters.splice(0)) {
      const request = this.watchRequests[waiter.count - 1];
      if (request && this.#servedCount >= waiter.count) waiter.resolve(request);
      else this.#watchWaiters.push(waiter);
    }
  }

  #replay(watch: OpenWatch, resourceVersion: string): void {
    if (resourceVersion === '') {
      for (const object of this.#objects.values()) watch.onEvent({ type: 'ADDED', object: copy(object) });
      return;
    }
    const from = Number(resourceVersion);
    if (!Number.isInteger(from) || from < this.#compactedAt) {
      watch.onEvent(expired(from, this.#compactedAt));
      watch.finish();
      return;
    }
    for (const { version, event } of this.#history) {
      if (version > from) watch.onEvent({ type: event.type, object: copy(event.object) });
    }
  }

  #stamp(object: RawObject): RawObject {
    this.#version += 1;
    const stored = copy(object);
    return { ...stored, metadata: { ...stored.metadata, resourceVersion: String(this.#version) } };
  }

  #emit(event: WatchEvent): void {
    this.#history.push({ version: this.#version, event });
    for (const watch of [...this.#open]) watch.onEvent({ type: event.type, object: copy(event.object) });
  }
}

/** The ERROR event the apiserver sends for a resourceVersion older than it keeps. */
function expired(requested: number, oldest: number): WatchEvent {
  return {
    type: 'ERROR',
    object: {
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      code: 410,
      reason: 'Expired',
      message: `too old resource version: ${requested} (${oldest})`,
    },
  };
}

function copy(object: RawObject): RawObject {
  return structuredClone(object);
}
