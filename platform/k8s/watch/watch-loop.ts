/**
 * A list+watch loop (client-go's reflector with an informer's cache) that keeps only the
 * fields the controller uses, built on a ListWatchClient.
 *
 * ```
 *         ┌──────── 410 Gone (ERROR event or HTTP status): re-list, diff with the cache ───────┐
 *         ▼                                                                                   │
 *   ┌──────────┐ list ok ┌───────────────────────────┐ server ended it, watchdog fired: ──┐    │
 *   │   list   │ ──────▶ │ watch from resourceVersion│ resume from the last one seen      │    │
 *   └──────────┘         └───────────────────────────┘ ◀──────────────────────────────────┘    │
 *     │ ▲ error:                    │  error: backoff, then resume ───────────────────────────┘
 *     └─┘ backoff                   └─ events: transform → add / update / delete handlers
 * ```
 *
 * - **Only the fields used.** `transform(raw)` turns an object into the value cached for it,
 *   or undefined to cache nothing (the key is then treated as absent: a cached value is
 *   deleted). Whole objects are held one list page at a time, never kept.
 * - **Level-triggered re-list.** After 410 the collection is listed again and compared with
 *   the cache: what appeared is added, what changed updated, and what vanished meanwhile,
 *   including objects deleted while no watch was open, is reported deleted.
 * - **Watchdog.** A watch that brings neither an event nor a bookmark for `watchdogMs` (the
 *   apiserver sends a bookmark about every minute, so 90 s means the stream is stuck: a
 *   half-open connection, a proxy holding it) is dropped and resumed from the last
 *   resourceVersion.
 * - **Server timeout.** Each watch asks the server to end it after minWatchTimeoutSeconds ×
 *   (1 + rand) (client-go: 5–10 min), so connections are renewed and spread over apiservers.
 * - **Never a crash, never a tight loop.** Errors (a 403, a refused connection, a broken
 *   stream) and watches that end without delivering anything back off exponentially with
 *   jitter, capped; a handler that throws is logged and the loop goes on. Only the signal
 *   stops it.
 *
 * Every restart is counted in `watch_restarts_total{resource,reason}`, every event in
 * `watch_events_total{resource,type}`.
 */
import { isDeepStrictEqual } from 'node:util';
import { isGone, K8sApiError, type Clock, type Logger, type Registry, type Runnable } from '../../index.js';
import {
  objectKey,
  resourceVersionOf,
  type ListWatchClient,
  type RawObject,
  type WatchEvent,
  type WatchRequest,
} from './list-watch-client.js';
import { RESTART_REASONS, watchMetrics, type RestartReason, type WatchMetrics } from './metrics.js';

/** Called as the cache changes (synchronously, from the loop; a throw is logged, never fatal). */
export interface WatchHandlers<T> {
  /** `key` appeared (first list, a watch event, or a re-list). */
  onAdd?(key: string, value: T): void;
  /** `key`'s cached value changed (values `equals` calls the same are not reported). */
  onUpdate?(key: string, value: T, previous: T): void;
  /** `key` is gone: deleted, no longer cached by `transform`, or missing from a re-list. */
  onDelete?(key: string, previous: T): void;
  /** The first complete list is in the cache (its onAdd calls came first). Called once. */
  onSynced?(): void;
}

/** What a loop is built from. */
export interface WatchLoopDeps {
  client: ListWatchClient;
  clock: Clock;
  log: Logger;
  /** Metrics go here (shared by every loop of the component). */
  registry: Registry;
  /** Jitter source in [0, 1) (default Math.random). */
  random?: () => number;
}

/** Defaults of WatchLoopOptions. */
export const WATCH_DEFAULTS = {
  watchdogMs: 90_000,
  minWatchTimeoutSeconds: 300,
  initialBackoffMs: 1_000,
  maxBackoffMs: 30_000,
} as const;

/** What a loop watches and how. */
export interface WatchLoopOptions<T> {
  /** The `resource` label of its metrics and its Runnable name (`watch-<resource>`): a fixed lower-case word. */
  resource: string;
  /** The value cached for an object, or undefined to cache nothing for it. Must not keep `raw`. */
  transform(raw: RawObject): T | undefined;
  /** Whether two cached values are the same (default: deep equality); the same value is stored silently. */
  equals?(a: T, b: T): boolean;
  handlers?: WatchHandlers<T>;
  /** Drop a watch that brings no event or bookmark for this long, ms (default 90 000). */
  watchdogMs?: number;
  /** The server ends a watch after this × (1 + rand) seconds (default 300). */
  minWatchTimeoutSeconds?: number;
  /** First backoff after an error, ms (default 1000); doubles per consecutive failure. */
  initialBackoffMs?: number;
  /** Longest backoff, ms (default 30 000). */
  maxBackoffMs?: number;
  /** Metric names start `npu_fault_<metricsComponent>_` (default `controller`). */
  metricsComponent?: string;
}

/** A running cache of one collection; run it as a Runnable. */
export interface WatchLoop<T> extends Runnable {
  /** True once the first complete list is in the cache (stays true across re-lists). */
  synced(): boolean;
  /** Resolves when `synced()` becomes true (at once when it is). */
  whenSynced(): Promise<void>;
  /** The cached value of `key` (`name`, or `namespace/name` for namespaced objects). */
  get(key: string): T | undefined;
  /** Every cached value. */
  values(): IterableIterator<T>;
  /** Every cached key and value. */
  entries(): IterableIterator<[string, T]>;
  /** How many values are cached. */
  readonly size: number;
}

/** Builds a loop; start it (Runnable) to fill and follow the cache. */
export function createWatchLoop<T>(deps: WatchLoopDeps, options: WatchLoopOptions<T>): WatchLoop<T> {
  return new ListWatchLoop(deps, options);
}

/** How one watch ended. */
interface Outcome {
  readonly reason: RestartReason;
  readonly error?: unknown;
}

class ListWatchLoop<T> implements WatchLoop<T> {
  readonly name: string;
  readonly #client: ListWatchClient;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #random: () => number;
  readonly #metrics: WatchMetrics;
  readonly #resource: string;
  readonly #transform: (raw: RawObject) => T | undefined;
  readonly #equals: (a: T, b: T) => boolean;
  readonly #handlers: WatchHandlers<T>;
  readonly #watchdogMs: number;
  readonly #minWatchTimeoutSeconds: number;
  readonly #initialBackoffMs: number;
  readonly #maxBackoffMs: number;
  readonly #cache = new Map<string, T>();
  /** Where the next watch resumes; undefined means list first. */
  #resourceVersion: string | undefined;
  /** Consecutive attempts that brought nothing (failed lists, errors, empty or expired watches). */
  #failures = 0;
  #synced = false;
  #markSynced: () => void = () => undefined;
  readonly #syncedPromise: Promise<void>;
  #running = false;

  constructor(deps: WatchLoopDeps, options: WatchLoopOptions<T>) {
    if (!/^[a-z][a-z0-9-]*$/.test(options.resource))
      throw new RangeError(`watch loop: resource must be a lower-case word, got "${options.resource}"`);
    this.#resource = options.resource;
    this.name = `watch-${options.resource}`;
    this.#client = deps.client;
    this.#clock = deps.clock;
    this.#random = deps.random ?? Math.random;
    this.#log = deps.log.child({ watch: options.resource });
    this.#metrics = watchMetrics(deps.registry, options.metricsComponent);
    this.#transform = options.transform;
    this.#equals = options.equals ?? isDeepStrictEqual;
    this.#handlers = options.handlers ?? {};
    this.#watchdogMs = positive('watchdogMs', options.watchdogMs ?? WATCH_DEFAULTS.watchdogMs);
    this.#minWatchTimeoutSeconds = positive(
      'minWatchTimeoutSeconds',
      options.minWatchTimeoutSeconds ?? WATCH_DEFAULTS.minWatchTimeoutSeconds,
    );
    this.#initialBackoffMs = positive(
      'initialBackoffMs',
      options.initialBackoffMs ?? WATCH_DEFAULTS.initialBackoffMs,
    );
    this.#maxBackoffMs = positive('maxBackoffMs', options.maxBackoffMs ?? WATCH_DEFAULTS.maxBackoffMs);
    this.#syncedPromise = new Promise((resolve) => {
      this.#markSynced = resolve;
    });
    // Every reason starts at 0, so an alert on increase() sees the first restart.
    for (const reason of RESTART_REASONS) this.#metrics.restarts.inc({ resource: this.#resource, reason }, 0);
  }

  synced(): boolean {
    return this.#synced;
  }

  whenSynced(): Promise<void> {
    return this.#syncedPromise;
  }

  get(key: string): T | undefined {
    return this.#cache.get(key);
  }

  values(): IterableIterator<T> {
    return this.#cache.values();
  }

  entries(): IterableIterator<[string, T]> {
    return this.#cache.entries();
  }

  get size(): number {
    return this.#cache.size;
  }

  /** Lists and watches until `signal` aborts; never rejects for an API failure. */
  async start(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error(`${this.name}: already started`);
    this.#running = true;
    this.#log.info({ collection: this.#client.description }, 'watch starting');
    try {
      while (!signal.aborted) {
        const pauseMs =
          this.#resourceVersion === undefined ? await this.#list(signal) : await this.#watch(signal);
        if (signal.aborted) break;
        if (pauseMs > 0) await this.#clock.sleep(pauseMs, signal).catch(() => undefined);
      }
    } finally {
      this.#running = false;
    }
  }

  /** Lists into a fresh map, then reconciles the cache with it. Returns the pause before the next step. */
  async #list(signal: AbortSignal): Promise<number> {
    const fresh = new Map<string, T>();
    let resourceVersion: string;
    try {
      ({ resourceVersion } = await this.#client.list((items) => {
        for (const raw of items) {
          const key = objectKey(raw);
          const value = key === undefined ? undefined : this.#safeTransform(raw, key);
          if (key !== undefined && value !== undefined) fresh.set(key, value);
        }
      }, signal));
    } catch (error) {
      if (signal.aborted) return 0;
      return this.#failed({ reason: 'error', error }, 'list failed');
    }
    if (signal.aborted) return 0;
    this.#reconcile(fresh);
    this.#resourceVersion = resourceVersion;
    this.#log.debug({ resourceVersion, size: this.#cache.size }, 'listed');
    if (!this.#synced) {
      this.#synced = true;
      this.#log.info({ size: this.#cache.size }, 'watch synced');
      this.#call('onSynced', () => this.#handlers.onSynced?.());
      this.#markSynced();
    }
    return 0;
  }

  /** One watch from the current resourceVersion until it ends. Returns the pause before the next step. */
  async #watch(signal: AbortSignal): Promise<number> {
    const request: WatchRequest = {
      resourceVersion: this.#resourceVersion ?? '',
      timeoutSeconds: Math.floor(this.#minWatchTimeoutSeconds * (1 + this.#random())),
      allowWatchBookmarks: true,
      idleTimeoutMs: 2 * this.#watchdogMs,
    };
    const stop = new AbortController();
    const watchSignal = AbortSignal.any([signal, stop.signal]);
    let outcome: Outcome | undefined;
    let productive = false;
    const end = (why: Outcome): void => {
      outcome ??= why;
      stop.abort();
    };
    let cancelWatchdog = this.#clock.schedule(this.#watchdogMs, () => end({ reason: 'watchdog' }));
    const onEvent = (event: WatchEvent): void => {
      if (outcome || watchSignal.aborted) return;
      cancelWatchdog();
      cancelWatchdog = this.#clock.schedule(this.#watchdogMs, () => end({ reason: 'watchdog' }));
      this.#metrics.events.inc({ resource: this.#resource, type: eventTypeLabel(event.type) });
      if (event.type === 'ERROR') {
        const error =
          K8sApiError.from(event.object) ?? new Error(`watch ERROR event: ${JSON.stringify(event.object)}`);
        end({ reason: isGone(error) ? 'gone' : 'error', error });
        return;
      }
      productive = true;
      this.#apply(event);
    };
    try {
      await this.#client.watch(request, onEvent, watchSignal);
      outcome ??= { reason: 'ended' };
    } catch (error) {
      outcome ??= classify(error);
    } finally {
      cancelWatchdog();
      stop.abort();
    }
    if (signal.aborted) return 0;
    if (productive) this.#failures = 0;
    return this.#restart(outcome, productive);
  }

  /** Counts and logs a restart; returns the pause before the next step. */
  #restart(outcome: Outcome, productive: boolean): number {
    const { reason } = outcome;
    const at = { resourceVersion: this.#resourceVersion };
    switch (reason) {
      case 'watchdog':
        // The watchdog itself waited watchdogMs: resuming at once cannot spin.
        this.#metrics.restarts.inc({ resource: this.#resource, reason });
        this.#log.warn(
          { ...at, watchdogMs: this.#watchdogMs },
          'no watch event or bookmark in time; watching again',
        );
        return 0;
      case 'gone': {
        this.#metrics.restarts.inc({ resource: this.#resource, reason });
        this.#log.info({ ...at, err: outcome.error }, 'watch expired (410 Gone); listing again');
        this.#resourceVersion = undefined;
        // The first re-list is immediate; repeated expiries without progress back off.
        this.#failures += 1;
        return this.#failures > 1 ? this.#backoffMs(this.#failures - 1) : 0;
      }
      case 'ended':
        if (productive) {
          this.#metrics.restarts.inc({ resource: this.#resource, reason });
          this.#log.debug(at, 'watch ended; watching again');
          return 0;
        }
        return this.#failed(outcome, 'watch ended without an event');
      case 'error':
        return this.#failed(outcome, 'watch failed');
    }
  }

  /** Counts a failure and returns its backoff. */
  #failed(outcome: Outcome, message: string): number {
    this.#metrics.restarts.inc({ resource: this.#resource, reason: outcome.reason });
    this.#failures += 1;
    const backoffMs = this.#backoffMs(this.#failures);
    const level = outcome.reason === 'ended' ? 'info' : 'warn';
    this.#log[level](
      { resourceVersion: this.#resourceVersion, err: outcome.error, failures: this.#failures, backoffMs },
      message,
    );
    return backoffMs;
  }

  /** initial × 2^(n-1), capped, then jittered down by up to half (so replicas drift apart). */
  #backoffMs(failures: number): number {
    const ceiling = Math.min(this.#maxBackoffMs, this.#initialBackoffMs * 2 ** Math.min(failures - 1, 30));
    return Math.round(ceiling * (0.5 + 0.5 * this.#random()));
  }

  #apply(event: WatchEvent): void {
    const version = resourceVersionOf(event.object);
    if (version !== undefined) this.#resourceVersion = version;
    if (event.type === 'BOOKMARK') return;
    const key = objectKey(event.object);
    if (key === undefined) {
      this.#log.debug({ type: event.type }, 'watch event without a name ignored');
      return;
    }
    switch (event.type) {
      case 'ADDED':
      case 'MODIFIED':
        this.#upsert(key, this.#safeTransform(event.object, key));
        return;
      case 'DELETED':
        this.#remove(key);
        return;
      default:
        this.#log.debug({ type: event.type }, 'watch event of an unknown type ignored');
    }
  }

  /** Deletes what the fresh list lacks, then adds or updates the rest. */
  #reconcile(fresh: ReadonlyMap<string, T>): void {
    for (const key of [...this.#cache.keys()]) if (!fresh.has(key)) this.#remove(key);
    for (const [key, value] of fresh) this.#upsert(key, value);
  }

  #upsert(key: string, value: T | undefined): void {
    if (value === undefined) {
      this.#remove(key);
      return;
    }
    const had = this.#cache.has(key);
    const previous = this.#cache.get(key) as T;
    this.#cache.set(key, value);
    if (!had) this.#call('onAdd', () => this.#handlers.onAdd?.(key, value));
    else if (!this.#equals(previous, value))
      this.#call('onUpdate', () => this.#handlers.onUpdate?.(key, value, previous));
  }

  #remove(key: string): void {
    if (!this.#cache.has(key)) return;
    const previous = this.#cache.get(key) as T;
    this.#cache.delete(key);
    this.#call('onDelete', () => this.#handlers.onDelete?.(key, previous));
  }

  /** The transform's value; a transform that throws is logged and caches nothing new (the old value stays). */
  #safeTransform(raw: RawObject, key: string): T | undefined {
    try {
      return this.#transform(raw);
    } catch (error) {
      this.#log.error({ key, err: error }, 'transform failed; object ignored');
      return this.#cache.get(key);
    }
  }

  #call(handler: string, call: () => void): void {
    try {
      call();
    } catch (error) {
      this.#log.error({ handler, err: error }, 'watch handler failed');
    }
  }
}

/** A watch failure's restart reason: 410 re-lists, the client's idle timeout is a watchdog, anything else an error. */
function classify(error: unknown): Outcome {
  if (isGone(error)) return { reason: 'gone', error };
  // By name: client-node aborts with a DOMException, which need not be an Error of this realm.
  if ((error as { name?: unknown } | null)?.name === 'TimeoutError') return { reason: 'watchdog', error };
  return { reason: 'error', error };
}

const EVENT_TYPES = new Set(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);

/** The metric label of an event type: the known ones in lower case, anything else `other` (bounded). */
function eventTypeLabel(type: string): string {
  return EVENT_TYPES.has(type) ? type.toLowerCase() : 'other';
}

function positive(name: string, value: number): number {
  if (!(value > 0) || !Number.isFinite(value))
    throw new RangeError(`watch loop: ${name} must be a positive number, got ${value}`);
  return value;
}
