/**
 * Quantiles, CDF points and the "knee" sentence for the pipeline benchmark's report. Pure:
 * no clock, no I/O. Quantiles are nearest-rank (an actual sample, never an interpolation),
 * so anyone can recompute them from the raw samples kept in the result file.
 */
import type { PathName, PathSummary, RunResult } from './result.js';

/** A point of an empirical CDF: `fraction` of the samples are ≤ `ms`. */
export interface CdfPoint {
  ms: number;
  fraction: number;
}

/** How far a path's p99 must rise over the smallest fleet's to count as a climb. */
export const KNEE_RELATIVE_RISE = 0.25;
export const KNEE_ABSOLUTE_RISE_MS = 20;

const ascending = (a: number, b: number): number => a - b;

function isAscending(xs: readonly number[]): boolean {
  for (let i = 1; i < xs.length; i++) if (!(xs[i - 1]! <= xs[i]!)) return false;
  return true;
}

/**
 * The nearest-rank q-quantile (q in [0, 1]) of `samples`, sorted or not (an unsorted list is
 * sorted on a copy); NaN for an empty list.
 */
export function percentile(samples: readonly number[], q: number): number {
  if (!(q >= 0 && q <= 1)) throw new RangeError(`percentile: q must lie in [0, 1], got ${q}`);
  const n = samples.length;
  if (n === 0) return Number.NaN;
  const sorted = isAscending(samples) ? samples : [...samples].sort(ascending);
  return sorted[Math.min(n - 1, Math.max(0, Math.ceil(q * n) - 1))]!;
}

/** Rounds to 0.1 ms, without a negative zero. */
const roundMs = (x: number): number => Math.round(x * 10) / 10 || 0;

/** count, p50, p95, p99 and max (0.1 ms) of the finite samples; nulls when there are none. */
export function summarise(samples: readonly number[]): PathSummary {
  // A NaN or an infinity is a measuring bug, not a latency: it would poison the sort.
  const sorted = samples.filter(Number.isFinite).sort(ascending);
  if (sorted.length === 0) return { count: 0, p50: null, p95: null, p99: null, max: null };
  return {
    count: sorted.length,
    p50: roundMs(percentile(sorted, 0.5)),
    p95: roundMs(percentile(sorted, 0.95)),
    p99: roundMs(percentile(sorted, 0.99)),
    max: roundMs(sorted.at(-1)!),
  };
}

/**
 * The empirical CDF of the finite samples, at most `maxPoints` points, strictly rising in
 * `ms`, never falling in `fraction`, and ending at the largest sample with fraction 1. Ranks
 * are picked evenly, so a long tail keeps its share of points.
 */
export function cdfPoints(samples: readonly number[], maxPoints = 200): CdfPoint[] {
  if (!Number.isInteger(maxPoints) || maxPoints < 1)
    throw new RangeError(`cdfPoints: maxPoints must be a positive integer, got ${maxPoints}`);
  const sorted = samples.filter(Number.isFinite).sort(ascending);
  const n = sorted.length;
  const m = Math.min(n, maxPoints);
  const points: CdfPoint[] = [];
  for (let j = 1; j <= m; j++) {
    let rank = Math.ceil((j * n) / m); // 1-based; j = m gives n
    // Of equal samples, the last one carries the CDF's value at that ms.
    while (rank < n && sorted[rank] === sorted[rank - 1]) rank++;
    const ms = sorted[rank - 1]!;
    const point = { ms, fraction: rank / n };
    if (points.at(-1)?.ms === ms) points[points.length - 1] = point;
    else points.push(point);
  }
  return points;
}

const formatMs = (ms: number): string => `${roundMs(ms)} ms`;

/**
 * Where `path`'s p99 starts to climb with the fleet: the first N whose p99 exceeds the
 * smallest measured N's by more than 25 % and more than 20 ms. Saturated runs are named and
 * left out (their latency measures the machine, not the pipeline).
 */
export function knee(runs: readonly RunResult[], path: PathName): string {
  const byN = [...runs].sort((a, b) => a.nodes - b.nodes);
  const saturated = byN.filter((r) => r.saturated);
  const usable = byN.filter((r) => !r.saturated && r.latency[path].p99 !== null);
  const saturatedNote =
    saturated.length === 0
      ? ''
      : ` ${saturated.map((r) => `N = ${r.nodes}`).join(', ')} saturated (machine busy > 85 %): not used.`;
  const base = usable[0];
  if (base === undefined) return `${path}: no unsaturated run with samples, no knee to tell.${saturatedNote}`;
  const baseP99 = base.latency[path].p99!;
  const climb = usable.slice(1).find((r) => {
    const p99 = r.latency[path].p99!;
    return p99 > baseP99 * (1 + KNEE_RELATIVE_RISE) && p99 - baseP99 > KNEE_ABSOLUTE_RISE_MS;
  });
  if (climb === undefined) {
    const last = usable.at(-1)!;
    const range =
      last === base
        ? `only N = ${base.nodes} measured, p99 ${formatMs(baseP99)}`
        : `p99 ${formatMs(baseP99)} at N = ${base.nodes}, ${formatMs(last.latency[path].p99!)} at N = ${last.nodes}`;
    return `${path}: no climb up to N = ${last.nodes} (${range}).${saturatedNote}`;
  }
  const p99 = climb.latency[path].p99!;
  const rise = baseP99 > 0 ? ` (+${Math.round((100 * (p99 - baseP99)) / baseP99)} %)` : '';
  return (
    `${path}: p99 starts to climb at N = ${climb.nodes}: ${formatMs(p99)} against ` +
    `${formatMs(baseP99)} at N = ${base.nodes}${rise}.${saturatedNote}`
  );
}
