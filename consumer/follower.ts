/**
 * The follower: one API over any transport. A transport delivers documents (file, watch),
 * node entries and heartbeats (sse) and errors to a sink; the follower turns them into
 * views, tells listeners when the view changes, when a device becomes failed (once per
 * failure), when the publisher goes quiet (stale) and comes back, and of every error. It
 * never throws at its listeners' callers: a throwing listener is reported through onError.
 */
import type { PublishedDocument, PublishedNode } from '../contracts/index.js';
import { cannotShow, changeKey, failedId, viewOfDocument, viewOfEntry } from './view.js';
import {
  FollowError,
  type ConsumerClock,
  type FailedDevice,
  type StatusUpdate,
  type TransportKind,
} from './types.js';

/** Where a transport delivers. */
export interface TransportSink {
  /** A whole document (already version-checked and parsed). */
  document(document: PublishedDocument): void;
  /** One node's entry as the agent serves it (null: healthy). */
  entry(input: {
    node: string;
    entry: PublishedNode | null;
    leader: string | null;
    term: number | null;
    updatedAt: string | null;
    /** The agent has heard nothing from the ingest function lately: its entry is old. */
    stale?: boolean;
  }): void;
  /** Proof of life without news (an SSE heartbeat). */
  alive(): void;
  error(error: FollowError): void;
}

/** A source of status. */
export interface Transport {
  readonly kind: TransportKind;
  start(sink: TransportSink): void;
  /** Stops for good; resolves once nothing is left open. */
  stop(): Promise<void>;
  /** Counters (connections, re-lists, reads…), for tests and logs. */
  stats(): Record<string, number>;
}

/** How a follower judges freshness. */
export interface FollowerSettings {
  /** The node followed; null for the whole cluster. */
  node: string | null;
  /** Stale when the document's timestamp (sse: the last event or heartbeat) is older than this, ms. */
  staleAfterMs: number;
  clock: ConsumerClock;
}

type Listener<T> = (value: T) => void;

/** A followed status: callbacks, the current view, an async iterator of changes. */
export interface StatusFollower extends AsyncIterable<StatusUpdate> {
  readonly transport: TransportKind;
  /** The newest view; undefined before the first. */
  current(): StatusUpdate | undefined;
  /** Resolves with the first view. */
  ready(): Promise<StatusUpdate>;
  /** Is the publisher stale now? */
  readonly stale: boolean;
  /** After every change of the view (and once for the first). Returns the removal. */
  onChange(listener: Listener<StatusUpdate>): () => void;
  /** Once per device becoming failed (again after it recovered). */
  onDeviceFailed(listener: Listener<FailedDevice>): () => void;
  /** true when the publisher went quiet, false when it moves again. */
  onStale(listener: Listener<boolean>): () => void;
  /** Every error; the follower keeps going and keeps its last good view. */
  onError(listener: Listener<FollowError>): () => void;
  /** Transport counters. */
  stats(): Record<string, number>;
  /** Stops following; iterators end. */
  close(): Promise<void>;
}

class Listeners<T> {
  readonly #set = new Set<Listener<T>>();
  constructor(readonly report: (error: unknown) => void) {}
  add(listener: Listener<T>): () => void {
    this.#set.add(listener);
    return () => this.#set.delete(listener);
  }
  emit(value: T): void {
    for (const listener of [...this.#set]) {
      try {
        listener(value);
      } catch (error) {
        this.report(error);
      }
    }
  }
}

/** Starts `transport` and follows it. */
export function createFollower(transport: Transport, settings: FollowerSettings): StatusFollower {
  const { clock, node, staleAfterMs } = settings;
  const errors = new Set<Listener<FollowError>>();
  const reportListenerError = (error: unknown): void =>
    sink.error(new FollowError('config', `a listener threw: ${String(error)}`, { cause: error }));
  const changes = new Listeners<StatusUpdate>(reportListenerError);
  const failures = new Listeners<FailedDevice>(reportListenerError);
  const staleness = new Listeners<boolean>(reportListenerError);
  const iterators = new Set<{ push(u: StatusUpdate | undefined): void }>();
  let view: StatusUpdate | undefined;
  let key: string | undefined;
  let failedNow = new Map<string, FailedDevice>();
  let freshAt = clock.now();
  let stale = false;
  let closed = false;
  let cancelCheck: (() => void) | undefined;
  let resolveReady: (view: StatusUpdate) => void = () => undefined;
  const readyPromise = new Promise<StatusUpdate>((resolve) => (resolveReady = resolve));

  const checkStale = (): void => {
    const isStale = clock.now() - freshAt > staleAfterMs;
    if (isStale === stale) return;
    stale = isStale;
    staleness.emit(stale);
  };
  const checkEveryMs = Math.max(10, Math.min(1000, Math.floor(staleAfterMs / 2)));
  const armCheck = (): void => {
    cancelCheck = clock.schedule(checkEveryMs, () => {
      if (closed) return;
      checkStale();
      armCheck();
    });
  };

  const accept = (delivered: StatusUpdate): void => {
    if (closed) return;
    const next = carryFailures(delivered, failedNow);
    view = next;
    checkStale();
    const nextKey = changeKey(next);
    if (nextKey === key) return;
    key = nextKey;
    resolveReady(next);
    changes.emit(next);
    for (const iterator of iterators) iterator.push(next);
    const nowFailed = new Map<string, FailedDevice>();
    for (const failed of next.failed) {
      const id = failedId(failed);
      nowFailed.set(id, failed);
      if (!failedNow.has(id)) failures.emit(failed);
    }
    failedNow = nowFailed;
  };

  const sink: TransportSink = {
    document(document) {
      const at = Date.parse(document.timestamp);
      if (Number.isFinite(at)) freshAt = Math.max(freshAt, at);
      accept(viewOfDocument(document, node, transport.kind, clock.now()));
    },
    entry(input) {
      if (node !== null && input.node !== node) {
        sink.error(new FollowError('config', `the agent serves node ${input.node}, not ${node}`));
        return;
      }
      freshAt = clock.now();
      accept(viewOfEntry(input, clock.now()));
    },
    alive() {
      freshAt = clock.now();
      checkStale();
    },
    error(error) {
      if (closed) return;
      for (const listener of [...errors]) {
        try {
          listener(error);
        } catch {
          // an error listener that throws has nowhere left to report to
        }
      }
    },
  };

  transport.start(sink);
  armCheck();

  return {
    transport: transport.kind,
    current: () => view,
    ready: () => readyPromise,
    get stale() {
      return stale;
    },
    onChange: (listener) => changes.add(listener),
    onDeviceFailed: (listener) => failures.add(listener),
    onStale: (listener) => staleness.add(listener),
    onError(listener) {
      errors.add(listener);
      return () => errors.delete(listener);
    },
    stats: () => transport.stats(),
    async close() {
      if (closed) return;
      closed = true;
      cancelCheck?.();
      for (const iterator of iterators) iterator.push(undefined);
      await transport.stop();
    },
    [Symbol.asyncIterator]() {
      return iterate(iterators, () => closed, view);
    },
  };
}

/**
 * `view` with the devices failed before that it cannot show (left out of the document, an old
 * agent answer) still counted failed, so a failure never turns healthy by going unseen.
 */
function carryFailures(view: StatusUpdate, before: ReadonlyMap<string, FailedDevice>): StatusUpdate {
  if (before.size === 0) return view;
  const shown = new Set(view.failed.map(failedId));
  const carried = [...before].filter(([id, failed]) => !shown.has(id) && cannotShow(view, failed));
  if (carried.length === 0) return view;
  return { ...view, health: 'failed', failed: [...view.failed, ...carried.map(([, failed]) => failed)] };
}

/** An iterator of changes; starts with the current view when there is one. */
function iterate(
  iterators: Set<{ push(u: StatusUpdate | undefined): void }>,
  isClosed: () => boolean,
  first: StatusUpdate | undefined,
): AsyncIterator<StatusUpdate> {
  const queue: (StatusUpdate | undefined)[] = first ? [first] : [];
  let waiter: ((result: IteratorResult<StatusUpdate>) => void) | undefined;
  const entry = {
    push(update: StatusUpdate | undefined) {
      if (waiter) {
        const resolve = waiter;
        waiter = undefined;
        resolve(update ? { value: update, done: false } : { value: undefined, done: true });
      } else queue.push(update);
    },
  };
  if (isClosed()) queue.push(undefined);
  else iterators.add(entry);
  const done = (): IteratorResult<StatusUpdate> => {
    iterators.delete(entry);
    return { value: undefined, done: true };
  };
  return {
    next() {
      if (queue.length > 0) {
        const update = queue.shift();
        return Promise.resolve(update ? { value: update, done: false } : done());
      }
      return new Promise((resolve) => (waiter = resolve));
    },
    return() {
      waiter?.({ value: undefined, done: true });
      waiter = undefined;
      return Promise.resolve(done());
    },
  };
}
