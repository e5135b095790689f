/**
 * The sender's bounded queue. Sampling never waits on the network: when the function is slow
 * or away, snapshots pile up here, and past `max` the oldest is dropped (its one-shot events
 * carried into the next queued snapshot of its node, see carry.ts). Not thread-of-control
 * aware: the sender takes batches off the front and puts failed ones back there.
 */
import type { SnapshotInput } from '../../contracts/index.js';
import { carryOneShotEvents, oneShotEventCount } from './carry.js';

/** A queued snapshot and its JSON (serialised once, when first needed). */
export interface QueuedSnapshot {
  readonly snapshot: SnapshotInput;
  /** The snapshot's JSON text. */
  readonly json: string;
}

/** A snapshot the queue dropped to stay within its bound. */
export interface DroppedSnapshot {
  snapshot: SnapshotInput;
  /** Whether its one-shot events went into a later snapshot (false also when it had none). */
  carried: boolean;
  /** Events that found no place (no later snapshot of the node, or no such GPU there). */
  lost: number;
}

/** A FIFO of at most `max` snapshots that drops the oldest. */
export class SnapshotQueue {
  readonly max: number;
  #items: Entry[] = [];

  constructor(max: number) {
    if (!Number.isInteger(max) || max < 1)
      throw new RangeError(`push maxQueue: expected a positive integer, got ${max}`);
    this.max = max;
  }

  get length(): number {
    return this.#items.length;
  }

  /** Adds `snapshot` at the back; returns what had to be dropped from the front. */
  push(snapshot: SnapshotInput): DroppedSnapshot[] {
    this.#items.push(new Entry(snapshot));
    return this.#trim();
  }

  /**
   * Takes up to `maxCount` snapshots off the front whose JSON adds up to at most `maxBytes`
   * (always at least one, however large: the function says whether it is too large).
   */
  take(maxCount: number, maxBytes: number): QueuedSnapshot[] {
    const taken: Entry[] = [];
    let bytes = 0;
    for (const item of this.#items) {
      if (taken.length >= maxCount) break;
      const size = Buffer.byteLength(item.json);
      if (taken.length > 0 && bytes + size > maxBytes) break;
      bytes += size;
      taken.push(item);
    }
    this.#items.splice(0, taken.length);
    return taken;
  }

  /** Puts a batch that failed back at the front, in order; returns what had to be dropped. */
  requeue(batch: readonly QueuedSnapshot[]): DroppedSnapshot[] {
    this.#items.unshift(...batch.map((item) => (item instanceof Entry ? item : new Entry(item.snapshot))));
    return this.#trim();
  }

  /** Empties the queue, returning what it held. */
  drain(): QueuedSnapshot[] {
    return this.#items.splice(0);
  }

  #trim(): DroppedSnapshot[] {
    const dropped: DroppedSnapshot[] = [];
    while (this.#items.length > this.max) {
      const oldest = this.#items.shift() as Entry;
      dropped.push(this.#carry(oldest.snapshot));
    }
    return dropped;
  }

  /** Moves the one-shot events of `snapshot` into the next queued snapshot of its node. */
  #carry(snapshot: SnapshotInput): DroppedSnapshot {
    const next = this.#items.findIndex((item) => item.snapshot.node === snapshot.node);
    const target = this.#items[next];
    if (!target) return { snapshot, carried: false, lost: oneShotEventCount(snapshot) };
    const { snapshot: merged, unplaced } = carryOneShotEvents(snapshot, target.snapshot);
    const carried = merged !== target.snapshot;
    if (carried) this.#items[next] = new Entry(merged);
    return { snapshot, carried, lost: unplaced };
  }
}

class Entry implements QueuedSnapshot {
  readonly snapshot: SnapshotInput;
  #json: string | undefined;
  constructor(snapshot: SnapshotInput) {
    this.snapshot = snapshot;
  }
  get json(): string {
    this.#json ??= JSON.stringify(this.snapshot);
    return this.#json;
  }
}
