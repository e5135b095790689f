/**
 * Time, injected. Components never call Date.now or setTimeout directly: they take a Clock,
 * so tests drive them with FakeClock and never sleep for real.
 *
 * `now()` is wall time (epoch ms; may jump when NTP steps the clock), `monotonic()` only
 * moves forward and is what durations are measured with (lease expiry, timeouts). Sleeps and
 * timers run on monotonic time, as the runtime's own timers do.
 */

/** Cancels a scheduled callback; calling it after the callback ran does nothing. */
export type Cancel = () => void;

/** A source of time and delays. */
export interface Clock {
  /** Wall-clock time, epoch milliseconds. */
  now(): number;
  /** Milliseconds from an arbitrary origin; never decreases. Only differences mean anything. */
  monotonic(): number;
  /**
   * Resolves after `ms` (negative or NaN counts as 0). When `signal` aborts first, rejects
   * with `signal.reason` (at once when it already has).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `callback` once after `ms` (as setTimeout); returns its cancel function. */
  schedule(ms: number, callback: () => void): Cancel;
}

/** Node's timers fire at once (with a warning) past 2^31-1 ms, so longer waits are chained. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The real clock: Date.now, performance.now and the runtime's timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: (ms, signal) => sleepOn(systemClock, ms, signal),
  schedule(ms, callback) {
    const deadline = performance.now() + delayOf(ms);
    let timer: NodeJS.Timeout;
    const arm = (): void => {
      const left = deadline - performance.now();
      timer = setTimeout(left > MAX_TIMER_MS ? arm : callback, Math.min(Math.max(left, 0), MAX_TIMER_MS));
    };
    arm();
    return () => clearTimeout(timer);
  },
};

/** A timer waiting in a FakeClock. */
interface FakeTimer {
  deadline: number;
  /** Scheduling order, so timers due at the same instant fire in the order they were set. */
  seq: number;
  callback: () => void;
}

/**
 * A clock that moves only when told. `advance(ms)` fires every timer and sleep that falls due,
 * in deadline order, with `now()`/`monotonic()` reading each one's deadline while it fires,
 * and lets promise continuations run between firings, so a loop that awaits a sleep and then
 * sleeps again is driven through all its iterations within the advanced span.
 */
export class FakeClock implements Clock {
  #wall: number;
  #mono = 0;
  #seq = 0;
  #timers: FakeTimer[] = [];

  /** `start`: the initial wall time, epoch ms (default 2026-01-01T00:00:00Z). */
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#wall = start;
  }

  now(): number {
    return this.#wall;
  }

  monotonic(): number {
    return this.#mono;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  schedule(ms: number, callback: () => void): Cancel {
    const timer: FakeTimer = { deadline: this.#mono + delayOf(ms), seq: this.#seq++, callback };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  /** Timers and sleeps waiting to fire. */
  get pending(): number {
    return this.#timers.length;
  }

  /**
   * Moves time forward by `ms`, firing what falls due (a callback that throws stops the
   * advance at its deadline and the error is thrown here). Lets pending continuations run
   * first, so code started just before reaches its sleep.
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`FakeClock.advance: ms must be >= 0, got ${ms}`);
    const end = this.#mono + ms;
    await settle();
    for (let next = this.#nextDue(end); next; next = this.#nextDue(end)) {
      this.#moveTo(next.deadline);
      this.#timers = this.#timers.filter((t) => t !== next);
      next.callback();
      await settle();
    }
    this.#moveTo(end);
  }

  /** Advances to the wall time `epochMs` (not backwards: use stepWallClock for a jump). */
  async set(epochMs: number): Promise<void> {
    if (epochMs < this.#wall)
      throw new RangeError('FakeClock.set: time only moves forward; use stepWallClock');
    await this.advance(epochMs - this.#wall);
  }

  /** Steps only the wall clock by `deltaMs` (either way), as NTP does; timers are unaffected. */
  stepWallClock(deltaMs: number): void {
    this.#wall += deltaMs;
  }

  #moveTo(mono: number): void {
    this.#wall += mono - this.#mono;
    this.#mono = mono;
  }

  #nextDue(end: number): FakeTimer | undefined {
    let next: FakeTimer | undefined;
    for (const t of this.#timers) {
      if (t.deadline > end) continue;
      if (!next || t.deadline < next.deadline || (t.deadline === next.deadline && t.seq < next.seq)) next = t;
    }
    return next;
  }
}

/** `sleep` for any clock, built on its `schedule`. */
function sleepOn(clock: Clock, ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason as Error);
      return;
    }
    const onAbort = (): void => {
      cancel();
      reject(signal?.reason as Error);
    };
    const cancel = clock.schedule(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

function delayOf(ms: number): number {
  return ms > 0 ? ms : 0;
}

/** One macrotask turn: every promise continuation queued so far runs before it ends. */
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
