/**
 * The engine's deadline queue: a binary min-heap of time-driven overlay deadlines
 * (agent-unreachable at last_seen + 5 s, collector-error at first cached + 10 s), so that
 * `tick(now)` touches only what is due instead of every node.
 *
 * Invalidation is lazy. The owner keeps a reference to each key's live entry; an entry that
 * is no longer the live one (superseded by an earlier deadline) is dropped when popped.
 * A live entry may sit *earlier* than its key's real deadline (last_seen moved on since it
 * was queued): the owner re-checks the real deadline when the entry pops and queues it
 * again if it is not yet due, so a node seen every second costs one pop per 5 s, not one
 * push per snapshot. The invariant the owner keeps: every pending deadline has a live
 * entry at or before it.
 *
 * Ties are broken by `order` (the node's creation order) and then `kind`, so the order in
 * which deadlines fire is deterministic.
 */

/** One queued deadline. */
export interface DeadlineEntry<T> {
  /** Epoch ms at which to look at the key again. */
  readonly at: number;
  /** The owner's key (the engine: a node). */
  readonly key: T;
  /** Tie-breaker: the key's creation order. */
  readonly order: number;
  /** Which deadline of the key (the engine: an overlay bit). */
  readonly kind: number;
}

/** Work done by a queue since it was made (for tests and metrics). */
export interface DeadlineCounters {
  pushes: number;
  pops: number;
}

function before<T>(a: DeadlineEntry<T>, b: DeadlineEntry<T>): boolean {
  return a.at < b.at || (a.at === b.at && (a.order < b.order || (a.order === b.order && a.kind < b.kind)));
}

/** A binary min-heap of deadline entries. */
export class DeadlineQueue<T> {
  readonly #heap: Array<DeadlineEntry<T>> = [];
  readonly counters: DeadlineCounters = { pushes: 0, pops: 0 };

  /** Entries queued, superseded ones included. */
  get size(): number {
    return this.#heap.length;
  }

  /** Queues a deadline and returns its entry (the caller keeps it as the live one). */
  push(at: number, key: T, order: number, kind: number): DeadlineEntry<T> {
    const entry: DeadlineEntry<T> = { at, key, order, kind };
    const heap = this.#heap;
    heap.push(entry);
    this.counters.pushes++;
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const up = heap[parent] as DeadlineEntry<T>;
      if (!before(entry, up)) break;
      heap[i] = up;
      i = parent;
    }
    heap[i] = entry;
    return entry;
  }

  /** The earliest entry, or undefined when empty. */
  peek(): DeadlineEntry<T> | undefined {
    return this.#heap[0];
  }

  /** Removes and returns the earliest entry, or undefined when empty. */
  pop(): DeadlineEntry<T> | undefined {
    const heap = this.#heap;
    const top = heap[0];
    if (top === undefined) return undefined;
    this.counters.pops++;
    const last = heap.pop() as DeadlineEntry<T>;
    if (heap.length > 0) this.#siftDown(last);
    return top;
  }

  #siftDown(entry: DeadlineEntry<T>): void {
    const heap = this.#heap;
    const n = heap.length;
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (right < n && before(heap[right] as DeadlineEntry<T>, heap[child] as DeadlineEntry<T>))
        child = right;
      const next = heap[child] as DeadlineEntry<T>;
      if (!before(next, entry)) break;
      heap[i] = next;
      i = child;
    }
    heap[i] = entry;
  }
}
