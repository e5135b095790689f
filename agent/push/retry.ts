/**
 * When the sender tries again: exponential backoff with full jitter (a uniform delay below a
 * ceiling that doubles per failure, AWS's "full jitter": the agents of a whole cluster that
 * lost the function at once come back spread out, not in waves), or what the function asks
 * for in Retry-After.
 */

/** The backoff's bounds, ms. */
export interface BackoffOptions {
  /** Ceiling after the first failure (default 200). */
  initialMs: number;
  /** Highest ceiling (default 10 000). */
  maxMs: number;
}

/** The longest Retry-After honoured: a wrong header must not silence an agent for hours. */
export const MAX_RETRY_AFTER_MS = 60_000;

/** The delay after failure number `failures` (1 for the first): uniform in [0, ceiling). */
export function backoffDelay(backoff: BackoffOptions, failures: number, random: () => number): number {
  const exponent = Math.min(Math.max(failures - 1, 0), 30);
  const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** exponent);
  return Math.floor(clampUnit(random()) * ceiling);
}

/**
 * The delay a Retry-After asks for, plus up to `jitterMs` so agents told the same second do
 * not all return at once; at most MAX_RETRY_AFTER_MS.
 */
export function retryAfterDelay(retryAfterMs: number, jitterMs: number, random: () => number): number {
  return Math.min(retryAfterMs + Math.floor(clampUnit(random()) * jitterMs), MAX_RETRY_AFTER_MS);
}

/**
 * A Retry-After header in ms (RFC 9110 §10.2.3: delay-seconds or an HTTP-date, the latter
 * relative to `nowMs`); undefined when absent or unreadable.
 */
export function parseRetryAfter(value: string | null | undefined, nowMs: number): number | undefined {
  const text = value?.trim();
  if (!text) return undefined;
  if (/^\d+$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  // Every HTTP-date form starts with the day's name; Date.parse would read "-1" as a year.
  const date = /^[A-Za-z]/.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(date)) return undefined;
  return Math.min(Math.max(date - nowMs, 0), MAX_RETRY_AFTER_MS);
}

/** A random number forced into [0, 1), whatever the injected source returns. */
function clampUnit(value: number): number {
  return Number.isFinite(value) ? Math.min(Math.max(value, 0), 1 - Number.EPSILON) : 0;
}
