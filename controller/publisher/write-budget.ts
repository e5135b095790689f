/**
 * The write budget of CONTRACT §5.4, as pure arithmetic on times given by the caller
 * (monotonic milliseconds): it remembers recent writes and says when the next one may go.
 *
 * - **Rate ceiling.** At most `maxWritesPerSecond` writes in any 1 s window: a write at T
 *   needs fewer than that many writes in (T − 1000, T].
 * - **Byte ceiling.** At most `maxBytesPerSecond` averaged over `bytesWindowSeconds`: a write
 *   of B bytes at T needs (bytes written in (T − window, T]) + B ≤ rate × window.
 * - **An oversized write** (B above rate × window on its own) could never fit. It goes once
 *   the window is empty (no write in (T − window, T]), so it is never left unwritten and is
 *   alone in every window that holds it; the writes after it wait until it has left the
 *   window. (The status document is cut at 900 KiB, far below the default 15 MiB allowance,
 *   so only a misconfigured budget meets this.)
 *
 * Record writes at the time they were acknowledged: a write cannot be seen before then, so
 * spacing measured from acknowledgements holds for anyone watching.
 */

/** The two ceilings. */
export interface WriteBudgetLimits {
  readonly maxWritesPerSecond: number;
  readonly maxBytesPerSecond: number;
  readonly bytesWindowSeconds: number;
}

/** When a write may go, and which ceiling (if any) holds it back. */
export interface BudgetDecision {
  /** The earliest time (≥ now) the write may go. */
  readonly at: number;
  /** The ceiling that sets `at` when it is later than now; undefined when the write may go now. */
  readonly limitedBy: 'writes' | 'bytes' | undefined;
}

const RATE_WINDOW_MS = 1000;

interface Recorded {
  readonly at: number;
  readonly bytes: number;
}

/** The budget's memory of recent writes. One per writer. */
export class WriteBudget {
  readonly #limits: WriteBudgetLimits;
  readonly #windowMs: number;
  readonly #allowance: number;
  /** Writes within the longer window, oldest first. */
  #writes: Recorded[] = [];
  /** Bytes of the writes in #writes. */
  #bytes = 0;

  constructor(limits: WriteBudgetLimits) {
    const { maxWritesPerSecond, maxBytesPerSecond, bytesWindowSeconds } = limits;
    for (const [field, value] of Object.entries({
      maxWritesPerSecond,
      maxBytesPerSecond,
      bytesWindowSeconds,
    })) {
      if (!(Number.isFinite(value) && value > 0))
        throw new RangeError(`write budget: ${field} must be a positive number, got ${String(value)}`);
    }
    this.#limits = { maxWritesPerSecond, maxBytesPerSecond, bytesWindowSeconds };
    this.#windowMs = limits.bytesWindowSeconds * 1000;
    this.#allowance = limits.maxBytesPerSecond * limits.bytesWindowSeconds;
  }

  /** How many bytes fit in one window: maxBytesPerSecond × bytesWindowSeconds. */
  get allowance(): number {
    return this.#allowance;
  }

  /** When a write of `bytes` may go, asked at `now`; never earlier than `now`. */
  earliest(now: number, bytes: number): BudgetDecision {
    const byRate = this.#rateEarliest();
    const byBytes = this.#bytesEarliest(bytes);
    const at = Math.max(now, byRate, byBytes);
    if (at === now) return { at, limitedBy: undefined };
    return { at, limitedBy: byBytes >= byRate ? 'bytes' : 'writes' };
  }

  /** Records a write of `bytes` acknowledged at `at` (times must not go backwards). */
  record(at: number, bytes: number): void {
    const last = this.#writes.at(-1);
    if (last && at < last.at)
      throw new RangeError(`write budget: writes are recorded in time order (${at} < ${last.at})`);
    this.#writes.push({ at, bytes });
    this.#bytes += bytes;
    this.#forgetBefore(at - Math.max(RATE_WINDOW_MS, this.#windowMs));
  }

  /** Writes remembered (those that can still hold a write back), oldest first. */
  recent(): readonly Recorded[] {
    return this.#writes;
  }

  /** The rate ceiling: the write that would be the (max+1)-th in a second must wait for the oldest of the last max to leave. */
  #rateEarliest(): number {
    const max = this.#limits.maxWritesPerSecond;
    const bound = this.#writes[this.#writes.length - max];
    return bound === undefined ? -Infinity : bound.at + RATE_WINDOW_MS;
  }

  /** The byte ceiling: wait until enough of the oldest writes have left the window. */
  #bytesEarliest(bytes: number): number {
    const newest = this.#writes.at(-1);
    if (newest === undefined) return -Infinity;
    // Oversized: alone in its window, so it waits for the newest write to leave.
    if (bytes > this.#allowance) return newest.at + this.#windowMs;
    let inWindow = this.#bytes;
    if (inWindow + bytes <= this.#allowance) return -Infinity;
    for (const write of this.#writes) {
      inWindow -= write.bytes;
      // Once `write` has left the window (at write.at + window), the rest fits.
      if (inWindow + bytes <= this.#allowance) return write.at + this.#windowMs;
    }
    return newest.at + this.#windowMs;
  }

  #forgetBefore(cutoff: number): void {
    let drop = 0;
    while (drop < this.#writes.length && (this.#writes[drop]?.at ?? Infinity) <= cutoff) {
      this.#bytes -= this.#writes[drop]?.bytes ?? 0;
      drop++;
    }
    if (drop > 0) this.#writes = this.#writes.slice(drop);
  }
}
