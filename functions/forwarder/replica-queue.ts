/**
 * One replica's queue: every batch, in order, one request at a time (so a node's snapshots
 * never overtake each other); whatever queued up meanwhile goes out as one request within the
 * batch limits. A queue holds at most `maxQueuedBatches`; beyond, its oldest batch is dropped,
 * and that replica misses those observations (a follower's engine diverges until it is
 * seeded again; a follower that becomes leader after such a gap merges the published document
 * when it takes over, so what the old leader published is kept).
 */
import type { Cancel } from '../../platform/index.js';
import type { Batch } from './batch.js';
import type { Replica } from './replicas.js';

/** How much one request may carry: ForwarderSettings' `maxBatch` and `maxBatchBytes`. */
export interface RequestLimits {
  readonly maxBatch: number;
  readonly maxBatchBytes: number;
}

/** One replica's queue and connection state. */
export class ReplicaQueue {
  readonly replica: Replica;
  /** The batches waiting, oldest first (the request in flight excluded). */
  readonly batches: Batch[];
  /** A request to the replica is in flight. */
  inFlight = false;
  /** The replica left (or the forwarder stopped): nothing more is sent. */
  closed = false;
  /** Aborts its requests when it leaves. */
  readonly abort = new AbortController();
  /** Its last request failed (failures are logged at warn once, then at debug). */
  failing = false;
  /** A follower's queue waits for its window to pass: the cancel of that timer. */
  window: Cancel | undefined;
  /** Its request in flight, settled once the answer is taken in. */
  sending: Promise<void> | undefined;
  /** Its last answer said `leader: false`: only such a replica's queue ever waits. */
  answeredFollower = false;

  /** `batches`: what was queued for the same replica at its old address, if it moved. */
  constructor(replica: Replica, batches: Batch[] = []) {
    this.replica = replica;
    this.batches = batches;
  }

  /** Nothing in flight and nothing queued. */
  get idle(): boolean {
    return !this.inFlight && this.batches.length === 0;
  }

  /** Takes out the oldest batch when the queue holds `max` already, to make room; else undefined. */
  dropOldestIfFull(max: number): Batch | undefined {
    return this.batches.length >= max ? this.batches.shift() : undefined;
  }

  /** Queues `batch` behind the others. */
  push(batch: Batch): void {
    this.batches.push(batch);
  }

  /**
   * Takes out the oldest batches that fit one request together (always at least one: a batch
   * is within the limits by itself).
   */
  takeRequest(limits: RequestLimits): Batch[] {
    const taken: Batch[] = [];
    let size = 0;
    let bytes = 0;
    for (let next = this.batches[0]; next; next = this.batches[0]) {
      if (
        taken.length > 0 &&
        (size + next.count > limits.maxBatch || bytes + next.json.length > limits.maxBatchBytes)
      )
        break;
      bytes += next.json.length;
      taken.push(this.batches.shift() as Batch);
      size += next.count;
    }
    return taken;
  }

  /**
   * How much longer a follower's queue waits for later batches to join its request, ms at
   * `now` (monotonic ms): until its oldest batch has waited `windowMs` since it was flushed,
   * or no longer once what is queued fills a request (by count or by bytes).
   */
  followerWindowLeft(now: number, windowMs: number, limits: RequestLimits): number {
    const oldest = this.batches[0];
    if (oldest === undefined) return 0;
    let count = 0;
    let bytes = 0;
    for (const batch of this.batches) {
      count += batch.count;
      bytes += batch.json.length;
    }
    if (count >= limits.maxBatch || bytes >= limits.maxBatchBytes) return 0;
    return Math.max(0, oldest.flushedAt + windowMs - now);
  }

  /** Stops waiting for the follower window, if it was. */
  cancelWindow(): void {
    this.window?.();
    this.window = undefined;
  }

  /** Closes the queue (the replica left): its window cancelled, its requests aborted; returns what was queued. */
  close(): Batch[] {
    this.closed = true;
    this.cancelWindow();
    this.abort.abort();
    return this.batches.splice(0);
  }
}
