import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { PathSummary, RunResult } from './result.js';
import { cdfPoints, knee, percentile, summarise } from './summary.js';
import { sampleRun } from './testing.js';

describe('percentile (nearest rank)', () => {
  it('picks the sample at rank ceil(q·n)', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 0.5)).toBe(50);
    expect(percentile(xs, 0.95)).toBe(95);
    expect(percentile(xs, 0.99)).toBe(99);
    expect(percentile(xs, 1)).toBe(100);
    expect(percentile(xs, 0)).toBe(1);
    expect(percentile([7, 3, 5], 0.5)).toBe(5);
  });

  it('is the same sorted or not, and leaves its input alone', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ noNaN: true }), { minLength: 1 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (xs, q) => {
          const before = [...xs];
          const sorted = [...xs].sort((a, b) => a - b);
          expect(percentile(xs, q)).toBe(percentile(sorted, q));
          expect(xs).toEqual(before);
          expect(xs).toContain(percentile(xs, q));
        },
      ),
    );
  });

  it('is NaN for no samples and refuses a q outside [0, 1]', () => {
    expect(percentile([], 0.5)).toBeNaN();
    expect(() => percentile([1], 1.5)).toThrow(/q must lie in \[0, 1\]/);
    expect(() => percentile([1], Number.NaN)).toThrow(/q must lie/);
  });
});

describe('summarise', () => {
  it('gives nearest-rank p50/p95/p99 and max, rounded to 0.1 ms', () => {
    const xs = Array.from({ length: 200 }, (_, i) => (200 - i) * 1.234);
    expect(summarise(xs)).toEqual({ count: 200, p50: 123.4, p95: 234.5, p99: 244.3, max: 246.8 });
  });

  it('is all nulls for no samples, and ignores non-finite ones', () => {
    expect(summarise([])).toEqual({ count: 0, p50: null, p95: null, p99: null, max: null });
    expect(summarise([Number.NaN, Infinity])).toEqual({
      count: 0,
      p50: null,
      p95: null,
      p99: null,
      max: null,
    });
    expect(summarise([Number.NaN, 4, 2])).toMatchObject({ count: 2, p50: 2, max: 4 });
  });

  it('keeps negative delays and writes no negative zero', () => {
    expect(summarise([-12.34, -0.01])).toEqual({ count: 2, p50: -12.3, p95: 0, p99: 0, max: 0 });
    expect(Object.is(summarise([-0.01]).p50, 0)).toBe(true);
  });

  it('orders its quantiles', () => {
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1e6, max: 1e6, noNaN: true }), { minLength: 1 }), (xs) => {
        const s = summarise(xs);
        expect(s.count).toBe(xs.length);
        expect(s.p50!).toBeLessThanOrEqual(s.p95!);
        expect(s.p95!).toBeLessThanOrEqual(s.p99!);
        expect(s.p99!).toBeLessThanOrEqual(s.max!);
      }),
    );
  });
});

describe('cdfPoints', () => {
  it('is every distinct sample when there are few, with the fraction at or below it', () => {
    expect(cdfPoints([3, 1, 2, 2])).toEqual([
      { ms: 1, fraction: 0.25 },
      { ms: 2, fraction: 0.75 },
      { ms: 3, fraction: 1 },
    ]);
  });

  it('downsamples to at most maxPoints, rising, ending at the max with fraction 1', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: -50, max: 5000 }), { minLength: 1, maxLength: 3000 }),
        fc.integer({ min: 1, max: 300 }),
        (xs, maxPoints) => {
          const points = cdfPoints(xs, maxPoints);
          expect(points.length).toBeGreaterThan(0);
          expect(points.length).toBeLessThanOrEqual(maxPoints);
          for (let i = 1; i < points.length; i++) {
            expect(points[i]!.ms).toBeGreaterThan(points[i - 1]!.ms);
            expect(points[i]!.fraction).toBeGreaterThan(points[i - 1]!.fraction);
          }
          expect(points.at(-1)).toEqual({ ms: Math.max(...xs), fraction: 1 });
          // Each point is the true CDF at its ms.
          for (const p of points) expect(p.fraction).toBe(xs.filter((x) => x <= p.ms).length / xs.length);
        },
      ),
    );
  });

  it('is empty for no samples and refuses a bad maxPoints', () => {
    expect(cdfPoints([])).toEqual([]);
    expect(() => cdfPoints([1], 0)).toThrow(/maxPoints/);
  });
});

describe('knee', () => {
  const p99 = (v: number | null): PathSummary => ({
    count: v === null ? 0 : 10,
    p50: v,
    p95: v,
    p99: v,
    max: v,
  });
  const run = (nodes: number, value: number | null, saturated = false): RunResult => {
    const r = sampleRun(nodes, { saturated });
    return { ...r, latency: { ...r.latency, injected_to_watch: p99(value) } };
  };

  it('names the first N more than 25 % and 20 ms above the smallest N', () => {
    const sentence = knee([run(1000, 900), run(100, 400), run(250, 480), run(500, 520)], 'injected_to_watch');
    expect(sentence).toBe(
      'injected_to_watch: p99 starts to climb at N = 500: 520 ms against 400 ms at N = 100 (+30 %).',
    );
  });

  it('needs both the relative and the absolute rise', () => {
    // +50 % but only 10 ms: no climb.
    expect(knee([run(100, 20), run(1000, 30)], 'injected_to_watch')).toBe(
      'injected_to_watch: no climb up to N = 1000 (p99 20 ms at N = 100, 30 ms at N = 1000).',
    );
    // +25 % exactly is not "more than 25 %".
    expect(knee([run(100, 400), run(1000, 500)], 'injected_to_watch')).toMatch(/no climb up to N = 1000/);
  });

  it('names saturated runs and leaves them out', () => {
    const sentence = knee([run(100, 400), run(500, 420), run(1000, 5000, true)], 'injected_to_watch');
    expect(sentence).toMatch(/^injected_to_watch: no climb up to N = 500 /);
    expect(sentence).toMatch(/N = 1000 saturated .*not used\.$/);
  });

  it('says so when nothing can be judged', () => {
    expect(knee([run(100, null), run(250, 300, true)], 'injected_to_watch')).toMatch(
      /no unsaturated run with samples.*N = 250 saturated/,
    );
    expect(knee([run(100, 400)], 'injected_to_watch')).toBe(
      'injected_to_watch: no climb up to N = 100 (only N = 100 measured, p99 400 ms).',
    );
  });
});
