/**
 * Micro-batching: the snapshots of concurrent forward() calls join one open batch, sent at the
 * latest `batchWindowMs` after it opened, at once when it reaches `maxBatch` snapshots or
 * `maxBatchBytes`, and (`flushWhenIdle`) as soon as the leader has no request in flight, but
 * not within `leaderIntervalMs` of the batch before. At low load a snapshot waits one timer
 * turn, not the window; under load batches grow by themselves, and the idle flushes to the
 * leader come at most 1000 / `leaderIntervalMs` times a second (a request costs the function
 * far more CPU than a snapshot more in it; why: docs/decisions/0013-forwarder-request-pacing.md).
 * Full batches, windows shorter than the interval, expiries and retries are not held to it.
 */
import type { Cancel, Clock } from '../../platform/index.js';
import { addCall, newBatch, sealBatch, type Batch, type Call } from './batch.js';
import type { ForwarderSettings } from './options.js';

/** What a micro-batcher is built from. */
export interface MicroBatcherDeps {
  readonly clock: Clock;
  readonly settings: Pick<
    ForwarderSettings,
    'batchWindowMs' | 'maxBatch' | 'maxBatchBytes' | 'flushWhenIdle' | 'leaderIntervalMs'
  >;
  /** Whether the leader has nothing in flight or queued: a new batch may then go sooner. */
  leaderIdle(): boolean;
  /** A batch opened (its bound starts now). */
  opened(batch: Batch): void;
  /** A batch was sealed: send it. */
  flushed(batch: Batch): void;
}

/** Holds the open batch and decides when it is sent. */
export class MicroBatcher {
  readonly #deps: MicroBatcherDeps;
  #open: Batch | undefined;
  /** The open batch's window: it is sent at the latest then. */
  #cancelWindow: Cancel | undefined;
  /** The open batch is to be sent sooner, the leader being idle: the cancel of that timer. */
  #cancelSoon: Cancel | undefined;
  /** When the last batch was sent (the clock's monotonic ms). */
  #lastFlushAt = Number.NEGATIVE_INFINITY;
  #nextId = 1;

  constructor(deps: MicroBatcherDeps) {
    this.#deps = deps;
  }

  /** The batch new calls join, if one is open. */
  get open(): Batch | undefined {
    return this.#open;
  }

  /**
   * Adds `call` to the open batch: first sends the open batch when the call does not fit,
   * opens one when none is, and sends it at once when full. Otherwise, while the leader is
   * idle, it goes at the next timer turn (or once the interval has passed).
   */
  add(call: Call): void {
    const { maxBatch, maxBatchBytes, flushWhenIdle } = this.#deps.settings;
    const open = this.#open;
    if (open && (open.count + call.snapshots.length > maxBatch || open.bytes + call.bytes > maxBatchBytes))
      this.flush();
    const batch = (this.#open ??= this.#openBatch());
    addCall(batch, call);
    if (batch.count >= maxBatch || batch.bytes >= maxBatchBytes) this.flush();
    else if (flushWhenIdle && this.#cancelSoon === undefined && this.#deps.leaderIdle())
      // The leader has nothing in flight: gather this timer turn's snapshots, then send.
      this.#flushSoon();
  }

  /**
   * The leader has just become idle: with flushWhenIdle, the open batch goes now if
   * `leaderIntervalMs` has passed since the last one, else once it has.
   */
  leaderWentIdle(): void {
    const { flushWhenIdle, leaderIntervalMs } = this.#deps.settings;
    if (!this.#open || !flushWhenIdle) return;
    if (this.#deps.clock.monotonic() >= this.#lastFlushAt + leaderIntervalMs) this.flush();
    else this.#flushSoon();
  }

  /** Sends `batch` now if it is the open one. */
  flushIfOpen(batch: Batch): void {
    if (this.#open === batch) this.flush();
  }

  /** Seals the open batch, if any, and hands it to `flushed`. */
  flush(): void {
    const batch = this.#open;
    this.#cancelWindow?.();
    this.#cancelWindow = undefined;
    this.#cancelSoon?.();
    this.#cancelSoon = undefined;
    if (!batch) return;
    this.#open = undefined;
    sealBatch(batch, this.#deps.clock.monotonic());
    this.#lastFlushAt = batch.flushedAt;
    this.#deps.flushed(batch);
  }

  #openBatch(): Batch {
    const batch = newBatch(this.#nextId++);
    this.#deps.opened(batch);
    this.#cancelWindow = this.#deps.clock.schedule(this.#deps.settings.batchWindowMs, () => this.flush());
    return batch;
  }

  /**
   * Sends the open batch at the next timer turn (so that the turn's other snapshots join
   * it), or once `leaderIntervalMs` has passed since the last batch, whichever is later;
   * its window still bounds the wait.
   */
  #flushSoon(): void {
    if (this.#cancelSoon !== undefined) return;
    const wait = Math.max(
      0,
      this.#lastFlushAt + this.#deps.settings.leaderIntervalMs - this.#deps.clock.monotonic(),
    );
    this.#cancelSoon = this.#deps.clock.schedule(wait, () => this.flush());
  }
}
