import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { formatTimestamp, parseTimestamp } from './time.js';

const T = Date.parse('2026-11-29T08:00:00.000Z');

describe('parseTimestamp', () => {
  it.each([
    { text: '2026-11-29T08:00:00Z', ms: T },
    { text: '2026-11-29T08:00:00.5Z', ms: T + 500 },
    { text: '2026-11-29T08:00:00.123Z', ms: T + 123 },
    { text: '2026-11-29T08:00:00.0008Z', ms: T + 0.8 },
    { text: '2026-11-29T08:00:00.123456Z', ms: T + 123.456 },
    { text: '2026-11-29T08:00:00.123456789Z', ms: T + 123.456789 },
    { text: '2026-11-29T16:00:00.0008+08:00', ms: T + 0.8 },
    { text: '2026-11-29t08:00:00.25z', ms: T + 250 },
  ])('$text', ({ text, ms }) => {
    expect(parseTimestamp(text)).toBeCloseTo(ms, 6);
  });

  it('keeps what Date.parse keeps, exactly, for up to 3 fractional digits', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 253402300799999 }), (ms) => {
        const text = new Date(ms).toISOString();
        expect(parseTimestamp(text)).toBe(Date.parse(text));
      }),
    );
  });

  it('orders sub-millisecond times that Date.parse cannot tell apart', () => {
    expect(Date.parse('2026-11-29T08:00:00.0008Z')).toBe(Date.parse('2026-11-29T08:00:00.0000Z'));
    expect(parseTimestamp('2026-11-29T08:00:00.0008Z')).toBeGreaterThan(
      parseTimestamp('2026-11-29T08:00:00.0000Z'),
    );
    // 59.9992 s is less than 60 s, and 60.0000 s is exactly 60 s.
    const from = parseTimestamp('2026-11-29T08:00:00.0008Z');
    expect(parseTimestamp('2026-11-29T08:01:00.0000Z') - from).toBeLessThan(60_000);
    expect(parseTimestamp('2026-11-29T08:01:00.000800000Z') - from).toBe(60_000);
  });

  it('subtracts microsecond times exactly enough that a 1 µs difference is never lost', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 999_999 }),
        fc.integer({ min: 0, max: 999_999 }),
        fc.integer({ min: 1, max: 3600 }),
        (a, b, seconds) => {
          const text = (s: number, us: number): string =>
            `${new Date(T + s * 1000).toISOString().slice(0, 19)}.${String(us).padStart(6, '0')}Z`;
          const diff = parseTimestamp(text(seconds, b)) - parseTimestamp(text(0, a));
          const exact = seconds * 1_000_000 + b - a; // µs
          expect(Math.sign(diff - seconds * 1000)).toBe(Math.sign(exact - seconds * 1_000_000));
          expect(Math.abs(diff * 1000 - exact)).toBeLessThan(1);
        },
      ),
    );
  });

  it('hands text that is not RFC 3339 to Date.parse', () => {
    expect(parseTimestamp('not a time')).toBeNaN();
    expect(parseTimestamp('2026-11-29T08:00Z')).toBe(T);
  });
});

describe('formatTimestamp', () => {
  it('renders a whole millisecond as toISOString does (goldens stay byte-identical)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 253402300799999 }), (ms) => {
        expect(formatTimestamp(ms)).toBe(new Date(ms).toISOString());
      }),
    );
  });

  it.each([
    { ms: T + 0.8, text: '2026-11-29T08:00:00.000800Z' },
    { ms: T + 123.456, text: '2026-11-29T08:00:00.123456Z' },
    { ms: T + 123.4567, text: '2026-11-29T08:00:00.123457Z' },
    { ms: T + 999.9999, text: '2026-11-29T08:00:01.000Z' },
  ])('renders $text with microseconds', ({ ms, text }) => {
    expect(formatTimestamp(ms)).toBe(text);
  });

  it('round-trips microsecond times', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 3_600_000_000 }), (us) => {
        const ms = parseTimestamp(formatTimestamp(T + us / 1000));
        expect(Math.round((ms - T) * 1000)).toBe(us);
      }),
    );
  });
});
