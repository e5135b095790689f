/**
 * Quantiles of a Prometheus histogram between two scrapes of an exposition, interpolated
 * linearly within a bucket as PromQL's histogram_quantile does: how the benchmark reads a
 * latency a component measures itself (the leader's collected_at → write acknowledged).
 */
import type { PathSummary } from './result.js';

interface Bucket {
  le: number;
  count: number;
}

/** The cumulative buckets of `name` whose labels include every one of `labels` (`key="value"`). */
export function bucketsOf(text: string, name: string, labels: readonly string[] = []): Bucket[] {
  const buckets: Bucket[] = [];
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}_bucket{`)) continue;
    if (!labels.every((l) => line.includes(l))) continue;
    const le = /le="([^"]+)"/.exec(line)?.[1];
    if (le === undefined) continue;
    buckets.push({
      le: le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le),
      count: Number(line.slice(line.lastIndexOf(' ') + 1)),
    });
  }
  return buckets.sort((a, b) => a.le - b.le);
}

/** The `q` quantile of what was observed between `before` and `after` (NaN when nothing was). */
export function quantileBetween(before: readonly Bucket[], after: readonly Bucket[], q: number): number {
  const base = new Map(before.map((b) => [b.le, b.count]));
  const buckets = after.map((b) => ({ le: b.le, count: b.count - (base.get(b.le) ?? 0) }));
  const total = buckets.at(-1)?.count ?? 0;
  if (total <= 0) return Number.NaN;
  const rank = q * total;
  let previous = { le: 0, count: 0 };
  for (const bucket of buckets) {
    if (bucket.count >= rank) {
      // In +Inf: the largest finite bound is all PromQL can say too.
      if (!Number.isFinite(bucket.le)) return previous.le;
      const within = bucket.count - previous.count;
      return previous.le + (bucket.le - previous.le) * (within === 0 ? 0 : (rank - previous.count) / within);
    }
    previous = bucket;
  }
  return Number.NaN;
}

/** p50/p95/p99 in ms (a histogram has no max: its largest bound holding the p100 is given). */
export function histogramSummary(
  beforeText: string,
  afterText: string,
  name: string,
  labels: readonly string[] = [],
): PathSummary {
  const before = bucketsOf(beforeText, name, labels);
  const after = bucketsOf(afterText, name, labels);
  const total = (after.at(-1)?.count ?? 0) - (before.at(-1)?.count ?? 0);
  const ms = (q: number): number | null => {
    const v = quantileBetween(before, after, q);
    return Number.isFinite(v) ? Math.round(v * 10000) / 10 : null;
  };
  return { count: total, p50: ms(0.5), p95: ms(0.95), p99: ms(0.99), max: ms(1) };
}
