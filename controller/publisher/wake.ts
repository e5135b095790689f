/**
 * A sleep that other code can cut short: the publisher sleeps until its next write is due,
 * and an early-write request (or, for mirrors, new data) wakes it to recompute.
 */
import type { Clock } from '../../platform/index.js';

/** One sleeper's alarm clock. */
export class Wakeable {
  readonly #clock: Clock;
  #wake: AbortController | undefined;
  #pending = false;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /**
   * Sleeps `ms` (≤ 0: returns at once; Infinity: until woken); resolves early when `wake()`
   * is called or `signal` aborts. Never rejects. A `wake()` made while nobody sleeps makes
   * the next sleep return at once, so a request made between two sleeps is not lost.
   */
  async sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#pending || signal.aborted) {
      this.#pending = false;
      return;
    }
    if (ms <= 0) return;
    const wake = new AbortController();
    this.#wake = wake;
    const either = AbortSignal.any([signal, wake.signal]);
    try {
      if (ms === Infinity) await aborted(either);
      else await this.#clock.sleep(ms, either).catch(() => undefined);
    } finally {
      this.#wake = undefined;
      this.#pending = false;
    }
  }

  /** Wakes the sleeper, or the next sleep when none is sleeping. */
  wake(): void {
    if (this.#wake) this.#wake.abort();
    else this.#pending = true;
  }
}

function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) resolve();
    else signal.addEventListener('abort', () => resolve(), { once: true });
  });
}
