/**
 * A one-slot doorbell between callbacks (fs.watch, timers, abort) and a loop that awaits
 * them: rings that come while the loop is busy are kept as one, so no change is missed and a
 * burst costs one pass.
 */
export class Wakeup {
  #resolve: (() => void) | null = null;
  #rung = false;

  /** Rings: the pending wait resolves, or the next one will at once. */
  ring(): void {
    const resolve = this.#resolve;
    if (resolve === null) {
      this.#rung = true;
      return;
    }
    this.#resolve = null;
    resolve();
  }

  /** Resolves at the next ring (at once if one came since the last wait). */
  wait(): Promise<void> {
    if (this.#rung) {
      this.#rung = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      this.#resolve = resolve;
    });
  }
}
