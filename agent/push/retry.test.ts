import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { MAX_RETRY_AFTER_MS, backoffDelay, parseRetryAfter, retryAfterDelay } from './retry.js';

const backoff = { initialMs: 200, maxMs: 10_000 };

describe('backoffDelay', () => {
  it('doubles its ceiling per failure up to maxMs (random near 1 reads the ceiling)', () => {
    const top = (): number => 1 - Number.EPSILON;
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => backoffDelay(backoff, n, top))).toEqual([
      199, 399, 799, 1599, 3199, 6399, 9999, 9999,
    ]);
  });

  it('is uniform below the ceiling: full jitter', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.double({ min: 0, max: 1, noNaN: true }), (n, r) => {
        const delay = backoffDelay(backoff, n, () => r);
        const ceiling = Math.min(backoff.maxMs, backoff.initialMs * 2 ** (n - 1));
        return (
          delay >= 0 && delay < ceiling && delay === Math.floor(Math.min(r, 1 - Number.EPSILON) * ceiling)
        );
      }),
    );
  });

  it('survives a random source out of range', () => {
    expect(backoffDelay(backoff, 1, () => Number.NaN)).toBe(0);
    expect(backoffDelay(backoff, 1, () => 5)).toBe(199);
  });
});

describe('retryAfterDelay', () => {
  it('adds up to the jitter span, and caps the total', () => {
    expect(retryAfterDelay(2000, 200, () => 0)).toBe(2000);
    expect(retryAfterDelay(2000, 200, () => 0.5)).toBe(2100);
    expect(retryAfterDelay(MAX_RETRY_AFTER_MS, 200, () => 0.5)).toBe(MAX_RETRY_AFTER_MS);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 0, 1);
  it.each([
    ['seconds', '3', 3000],
    ['zero', '0', 0],
    ['seconds with spaces', ' 7 ', 7000],
    ['an HTTP date', new Date(now + 4000).toUTCString(), 4000],
    ['a date in the past', new Date(now - 4000).toUTCString(), 0],
    ['huge seconds, capped', '86400', MAX_RETRY_AFTER_MS],
    ['nothing', null, undefined],
    ['empty', '', undefined],
    ['garbage', 'soon', undefined],
    ['negative', '-1', undefined],
  ])('%s', (_name, value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });
});
