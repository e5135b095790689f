import { describe, expect, it } from '@jest/globals';
import { bucketsOf, histogramSummary, quantileBetween } from './histogram.js';

const NAME = 'npu_fault_controller_publish_latency_seconds';

/** An exposition of the histogram with cumulative `counts` for le 0.1, 0.25, 0.5, +Inf. */
function exposition(failed: number[], other: number[] = [0, 0, 0, 0]): string {
  const les = ['0.1', '0.25', '0.5', '+Inf'];
  return [
    `# TYPE ${NAME} histogram`,
    ...les.map((le, i) => `${NAME}_bucket{le="${le}",kind="failed"} ${failed[i]}`),
    ...les.map((le, i) => `${NAME}_bucket{kind="other",le="${le}"} ${other[i]}`),
    `${NAME}_count{kind="failed"} ${failed[3]}`,
  ].join('\n');
}

describe('histogram quantiles between two scrapes', () => {
  it('reads only the series with the wanted labels, whatever their order', () => {
    expect(
      bucketsOf(exposition([1, 2, 3, 4], [5, 6, 7, 8]), NAME, ['kind="other"']).map((b) => b.count),
    ).toEqual([5, 6, 7, 8]);
  });

  it('interpolates within the bucket of the rank, as histogram_quantile does', () => {
    const after = bucketsOf(exposition([0, 10, 10, 10]), NAME, ['kind="failed"']);
    // All ten observations in (0.1, 0.25]: the median is halfway through it.
    expect(quantileBetween([], after, 0.5)).toBeCloseTo(0.175);
  });

  it('counts only what was observed between the scrapes', () => {
    const summary = histogramSummary(exposition([10, 10, 10, 10]), exposition([10, 10, 20, 20]), NAME, [
      'kind="failed"',
    ]);
    // The ten new observations all fell in (0.25, 0.5].
    expect(summary.count).toBe(10);
    expect(summary.p50).toBe(375);
    expect(summary.p99).toBeGreaterThan(495);
  });

  it('has no quantiles when nothing was observed, and caps +Inf at the largest bound', () => {
    expect(histogramSummary(exposition([1, 1, 1, 1]), exposition([1, 1, 1, 1]), NAME)).toMatchObject({
      count: 0,
      p50: null,
    });
    expect(histogramSummary('', exposition([0, 0, 0, 4]), NAME, ['kind="failed"']).p50).toBe(500);
  });
});
