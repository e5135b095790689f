/**
 * One log line per failing spell, not per failure: a source that cannot be read every 5 s
 * for a day writes one warning when it starts failing and one info line when it reads again,
 * while its metric counts every failure.
 */
import type { Logger } from '../../platform/index.js';

/** Failing spells by source key (`net`, `mc0`, `hccn npu3`). */
export class FailureSpells {
  readonly #failing = new Set<string>();
  readonly #log: Logger;
  constructor(log: Logger) {
    this.#log = log;
  }

  /** A failure of `key`: logs `message` at warn when it starts a spell; true when it did. */
  fail(key: string, fields: Record<string, unknown>, message: string): boolean {
    if (this.#failing.has(key)) return false;
    this.#failing.add(key);
    this.#log.warn({ source: key, ...fields }, message);
    return true;
  }

  /** A success of `key`: ends its spell, if any, with one info line. */
  succeed(key: string, message = 'reads again'): void {
    if (!this.#failing.delete(key)) return;
    this.#log.info({ source: key }, message);
  }

  /** Whether `key` is failing now. */
  failing(key: string): boolean {
    return this.#failing.has(key);
  }
}
