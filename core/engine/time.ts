/**
 * Times of the engine: epoch milliseconds as a float that keeps the sub-millisecond part.
 *
 * `collected_at` is RFC 3339 with up to 9 fractional digits (a Go agent writes
 * nanoseconds), and `Date.parse` drops every digit after the third, so 59.9992 s of a
 * warning would read as 60 s. `parseTimestamp` keeps the fraction: between 2004 and 2039
 * an epoch-ms float has a grid of 2^-12 ms (0.24 µs), and times of one binade share that
 * grid, so two timestamps that differ in their first 6 fractional digits compare and
 * subtract correctly (an error below 1 µs cannot flip a comparison against a whole-µs
 * duration). Nanosecond digits are kept only to that grid.
 *
 * `formatTimestamp` renders a whole millisecond as `Date#toISOString` does
 * (`2026-11-29T08:23:45.123Z`, so every existing output stays byte-identical) and a time
 * with a sub-millisecond part with 6 fractional digits, rounded to the microsecond
 * (`2026-11-29T08:23:45.123456Z`): the precision the float actually holds.
 */

/** `YYYY-MM-DDTHH:MM:SS`, an optional fraction, then `Z` or `±HH:MM` (RFC 3339). */
const RFC3339 = /^(\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d)(?:\.(\d+))?([Zz]|[+-]\d\d:\d\d)$/;

/**
 * Epoch milliseconds of an RFC 3339 time, with its sub-millisecond part as the fraction
 * (`...:00.0008Z` → `T + 0.8`). Text that is not RFC 3339 goes to `Date.parse` (NaN when
 * that cannot read it either).
 */
export function parseTimestamp(text: string): number {
  const match = RFC3339.exec(text);
  if (match === null) return Date.parse(text);
  const [, whole, digits, zone] = match as unknown as [string, string, string | undefined, string];
  const seconds = Date.parse(`${whole}${zone}`);
  if (digits === undefined) return seconds;
  // Milliseconds as an integer plus the digits beyond them as a fraction, so the common
  // case (3 digits) yields exactly the integer Date.parse would.
  const ms = Number(digits.slice(0, 3).padEnd(3, '0'));
  const rest = digits.length > 3 ? Number(`0.${digits.slice(3)}`) : 0;
  return seconds + ms + rest;
}

/** ISO-8601 UTC: milliseconds for a whole millisecond, else microseconds (rounded). */
export function formatTimestamp(ms: number): string {
  if (Number.isInteger(ms)) return new Date(ms).toISOString();
  const micros = Math.round(ms * 1000);
  const whole = Math.floor(micros / 1000);
  const rest = micros - whole * 1000;
  const text = new Date(whole).toISOString();
  return rest === 0 ? text : `${text.slice(0, -1)}${String(rest).padStart(3, '0')}Z`;
}
