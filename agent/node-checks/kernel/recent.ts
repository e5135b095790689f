/**
 * What the kernel check keeps of one kind of message, in memory that a flood of messages
 * cannot grow: the times of the last `capacity` of them (a ring), the last one's detail, and
 * the last few subjects (devices, tasks) with when each was last named. Pure: times are
 * arguments (epoch ms).
 */

/** Subjects kept per kind; the one named longest ago goes first. */
export const MAX_SUBJECTS = 8;

/** A count of messages since a time: `atLeast` when the ring may have dropped older ones. */
export interface RecentCount {
  count: number;
  atLeast: boolean;
}

/** The recent messages of one kind. */
export class RecentEvents {
  readonly #times: number[];
  #next = 0;
  #size = 0;
  #last: { at: number; detail: string } | null = null;
  /** Subject → when last named; Map order is recency (a subject named again moves to the end). */
  readonly #subjects = new Map<string, number>();

  constructor(readonly capacity: number) {
    this.#times = new Array<number>(capacity).fill(0);
  }

  /** One message at `at` about `subject`. O(1). */
  add(at: number, subject: string, detail: string): void {
    this.#times[this.#next] = at;
    this.#next = (this.#next + 1) % this.capacity;
    this.#size = Math.min(this.#size + 1, this.capacity);
    this.#last = { at, detail };
    this.#subjects.delete(subject);
    this.#subjects.set(subject, at);
    if (this.#subjects.size > MAX_SUBJECTS) {
      const oldest = this.#subjects.keys().next();
      if (!oldest.done) this.#subjects.delete(oldest.value);
    }
  }

  /** The last message (by arrival), or null before the first. */
  last(): { at: number; detail: string } | null {
    return this.#last;
  }

  /** How many of the kept messages came after `since`. O(capacity). */
  countSince(since: number): RecentCount {
    let count = 0;
    let oldestKept = Number.POSITIVE_INFINITY;
    for (let i = 0; i < this.#size; i++) {
      const at = this.#times[i] ?? 0;
      if (at > since) count++;
      oldestKept = Math.min(oldestKept, at);
    }
    // A full ring whose oldest is still in the span dropped some that were too.
    return { count, atLeast: this.#size === this.capacity && oldestKept > since };
  }

  /** The subjects named after `since`, the most recent last. */
  subjectsSince(since: number): string[] {
    return [...this.#subjects].filter(([, at]) => at > since).map(([subject]) => subject);
  }
}
