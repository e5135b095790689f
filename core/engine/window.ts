/**
 * Smoothing and counters (CONTRACT §2.1 and "Samples"), allocation-free.
 *
 * The sliding window of the last N samples is a bit mask (newest sample in bit 0), so
 * "at least 3 of the last 5 samples above 85 °C" is a shift, a mask and a popcount.
 * Event reasons (an ECC counter increase, an XID) remember the per-device sample number of
 * their last event and stay active while that sample is inside the window.
 *
 * Counters: a `null` reading crosses no threshold and leaves the baseline alone; a reading
 * below the baseline is a reset (driver reload): it becomes the new baseline, no increase.
 */

/** The mask of a window of `size` samples (size ≤ 30). */
export function windowMask(size: number): number {
  return size >= 31 ? 0x7fffffff : (1 << size) - 1;
}

/** Shifts one sample's flag into a window. */
export function pushSample(bits: number, flag: boolean, mask: number): number {
  return ((bits << 1) | (flag ? 1 : 0)) & mask;
}

/** Number of set bits. */
export function popcount(bits: number): number {
  let x = bits - ((bits >>> 1) & 0x55555555);
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** True when a cumulative counter increased from `baseline` to `value` (nulls never do). */
export function increased(baseline: number | null, value: number | null): boolean {
  return baseline !== null && value !== null && value > baseline;
}

/** The baseline after reading `value`: the value itself (also after a reset), or unchanged on null. */
export function nextBaseline(baseline: number | null, value: number | null): number | null {
  return value === null ? baseline : value;
}

/** True while an event seen at sample `at` is inside a window of `size` samples ending at `n`. */
export function inWindow(n: number, at: number, size: number): boolean {
  return n - at < size;
}
