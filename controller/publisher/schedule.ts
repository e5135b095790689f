/**
 * When the next status write is due (CONTRACT §5.4), as pure bookkeeping on times given by
 * the caller (monotonic milliseconds). The write budget (write-budget.ts) may hold a due
 * write back further; this module knows nothing of bytes.
 *
 * ```
 *  start ──▶ write at once
 *  after each write (rendered at S, acknowledged at A):
 *                                            next tick at max(S + uniform(tickMinMs, tickMaxMs), A + earlyMinGapMs)
 *  early request at R (a device failed):     due at min(next tick, max(S + earlyMinGapMs, R))
 *  due, document unchanged but for its       skip (no request), next tick from now, unless
 *  timestamp:                                heartbeatMs have passed since the last write
 * ```
 *
 * - The tick and the early gap are measured from when the previous write **began** (its
 *   render), so the request's own duration does not stretch the cadence: a change waits at
 *   most one tick plus one write, and a failure at most `earlyMinGapMs` plus one write (the
 *   latency targets). Writes still go one at a time, and the next never starts sooner than
 *   `earlyMinGapMs` after the previous began, so there are never more than 4 a second.
 *   A write that took longer than a tick is followed by the next no sooner than
 *   `earlyMinGapMs` after its acknowledgement (a slow apiserver is not hammered).
 * - A request made while a write is being rendered or sent is not lost: that write may have
 *   rendered before the failure reached the engine, so another write is due `earlyMinGapMs`
 *   after it is acknowledged (and skipped by the heartbeat rule if nothing changed).
 */

/** The schedule's settings (publisherConfigSchema's fields of the same names). */
export interface ScheduleSettings {
  readonly tickMinMs: number;
  readonly tickMaxMs: number;
  readonly earlyMinGapMs: number;
  readonly heartbeatMs: number;
}

/** The schedule of one publisher (one term). */
export class WriteSchedule {
  readonly #settings: ScheduleSettings;
  readonly #random: () => number;
  /** When the next regular write is due. */
  #nextTick: number;
  /** When the last write attempt began (its render); undefined before the first. */
  #lastStarted: number | undefined;
  /** When the attempt now in progress began rendering; undefined between attempts. */
  #rendering: number | undefined;
  /** When an early write was requested and not yet rendered; undefined when none is pending. */
  #earlySince: number | undefined;
  /** The last document written, without its timestamp, and when that write was acknowledged. */
  #lastContent: string | undefined;
  #lastWrittenAt = -Infinity;

  /** `start`: when the publisher started (its first write is due then); `random` in [0, 1) jitters ticks. */
  constructor(settings: ScheduleSettings, start: number, random: () => number) {
    this.#settings = settings;
    this.#random = random;
    this.#nextTick = start;
  }

  /** When the next write is due (possibly in the past: then it is due now). */
  due(): number {
    if (this.#earlySince === undefined) return this.#nextTick;
    const early = Math.max((this.#lastStarted ?? -Infinity) + this.#settings.earlyMinGapMs, this.#earlySince);
    return Math.min(this.#nextTick, early);
  }

  /** A device became failed at `now`: pull the next write forward. */
  requestEarly(now: number): void {
    this.#earlySince ??= now;
  }

  /** True while an early write is pending (requested and not yet rendered). */
  get earlyPending(): boolean {
    return this.#earlySince !== undefined;
  }

  /** The write due now renders at `now`: it carries everything requested so far. */
  rendering(now: number): void {
    this.#earlySince = undefined;
    this.#rendering = now;
  }

  /**
   * Whether a document whose content (without timestamp) is `content` is worth writing at
   * `now`: it changed since the last write, or the heartbeat is due.
   */
  worthWriting(content: string, now: number): boolean {
    return content !== this.#lastContent || now - this.#lastWrittenAt >= this.#settings.heartbeatMs;
  }

  /** The write of `content` was acknowledged at `at`. */
  written(content: string, at: number): void {
    this.#lastContent = content;
    // The heartbeat, like the tick, counts from when the write began.
    this.#lastWrittenAt = this.#rendering ?? at;
    this.ended(at);
  }

  /** A write attempt ended at `at` without a write (it failed, or nothing was worth writing). */
  ended(at: number): void {
    const started = this.#rendering ?? at;
    this.#rendering = undefined;
    this.#lastStarted = started;
    this.#nextTick = Math.max(started + this.#tick(), at + this.#settings.earlyMinGapMs);
  }

  /** Nothing was worth writing at `at`: wait for the next tick; no request was made. */
  skipped(at: number): void {
    this.#nextTick = at + this.#tick();
  }

  #tick(): number {
    const { tickMinMs, tickMaxMs } = this.#settings;
    return tickMinMs + this.#random() * (tickMaxMs - tickMinMs);
  }
}
