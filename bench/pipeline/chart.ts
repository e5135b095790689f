/**
 * Latency CDF charts as self-contained SVG (no scripts, fonts or stylesheets from outside),
 * so a result directory can be opened, committed and rendered by GitHub as it is. Pure: the
 * SVG text is returned, output.ts writes it.
 */
import { cdfPoints } from './summary.js';

export interface ChartSeries {
  label: string;
  samples: readonly number[];
}

export interface CdfChartOptions {
  title: string;
  xLabel: string;
  series: ChartSeries[];
  /** A logarithmic latency axis (values ≤ 0 are drawn at its left edge). */
  logX?: boolean;
}

/** Okabe–Ito: told apart with any common colour-vision deficiency; yellow last (faint on white). */
export const PALETTE = [
  '#0072B2',
  '#E69F00',
  '#009E73',
  '#D55E00',
  '#CC79A7',
  '#56B4E9',
  '#000000',
  '#F0E442',
];
/** Past the palette, series repeat its colours with a dash pattern. */
const DASHES = ['', '6 3', '2 2', '8 3 2 3'];

const WIDTH = 760;
const PLOT = { left: 70, top: 44, width: 640, height: 300 };
const LEGEND_ROW = 18;
/** Quantile guide lines: the report quotes these. */
const GUIDES = [0.5, 0.95, 0.99];

/** Escapes text for XML content and attribute values, dropping characters XML 1.0 forbids. */
export function escapeXml(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

const fmt = (x: number): string => String(Math.round(x * 10) / 10 || 0);
/** A tick label without floating-point noise (0.30000000000000004 → 0.3). */
const tickLabel = (v: number): string => String(Number(v.toPrecision(6)));

interface Axis {
  /** Maps a value to an x pixel inside the plot. */
  x: (v: number) => number;
  ticks: number[];
}

/** Ticks at 1, 2 or 5 × 10^k, about `target` of them, covering [lo, hi]. */
function niceLinear(lo: number, hi: number, target = 6): { lo: number; hi: number; ticks: number[] } {
  const raw = (hi - lo) / target;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? 10 * magnitude;
  const start = Math.floor(lo / step) * step;
  const end = Math.ceil(hi / step) * step;
  const ticks: number[] = [];
  for (let i = 0; start + i * step <= end + step / 2; i++)
    ticks.push(Number((start + i * step).toPrecision(12)));
  return { lo: start, hi: end, ticks };
}

/** Smallest and largest value, by a loop (spreading 100 000 samples into Math.min overflows the stack). */
function extent(values: readonly number[]): [number, number] {
  let lo = Infinity;
  let hi = -Infinity;
  for (const v of values) {
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  return [lo, hi];
}

function linearAxis(values: readonly number[]): Axis {
  // Latencies read best from zero; a negative delay (watch_to_sse) extends the axis left.
  const [min, max] = extent(values);
  let lo = Math.min(0, min);
  let hi = max;
  if (hi === lo) hi = lo + 1;
  const nice = niceLinear(lo, hi);
  lo = nice.lo;
  hi = nice.hi;
  return { x: (v) => PLOT.left + ((v - lo) / (hi - lo)) * PLOT.width, ticks: nice.ticks };
}

function logAxis(values: readonly number[]): Axis {
  const positive = values.filter((v) => v > 0);
  const [min, max] = positive.length > 0 ? extent(positive) : [1, 10];
  const lo = Math.floor(Math.log10(min));
  let hi = Math.ceil(Math.log10(max));
  if (hi === lo) hi = lo + 1;
  const ticks: number[] = [];
  const decades = hi - lo;
  for (let e = lo; e <= hi; e++) {
    ticks.push(10 ** e);
    // Few decades: label 2 and 5 too, so the axis is still readable.
    if (decades <= 2 && e < hi) ticks.push(2 * 10 ** e, 5 * 10 ** e);
  }
  const x = (v: number): number => {
    const t = v > 0 ? (Math.log10(v) - lo) / decades : 0;
    return PLOT.left + Math.min(1, Math.max(0, t)) * PLOT.width;
  };
  return { x, ticks: ticks.map((t) => Number(t.toPrecision(12))) };
}

const y = (fraction: number): number => PLOT.top + (1 - fraction) * PLOT.height;

/** One series as a step line: flat until each sample, then up to its fraction. */
function stepPoints(samples: readonly number[], axis: Axis): string {
  const points = cdfPoints(samples);
  const coords: string[] = [`${fmt(axis.x(points[0]!.ms))},${fmt(y(0))}`];
  let previous = 0;
  for (const p of points) {
    const px = fmt(axis.x(p.ms));
    coords.push(`${px},${fmt(y(previous))}`, `${px},${fmt(y(p.fraction))}`);
    previous = p.fraction;
  }
  return coords.join(' ');
}

/**
 * A latency CDF chart: one line per non-empty series (colour by series index, so the same
 * series order keeps its colours across charts), quantile guides at p50/p95/p99, axes with
 * ticks, and a legend below the plot naming every series, empty ones as "(no samples)".
 */
export function cdfChart(options: CdfChartOptions): string {
  const { title, xLabel, series, logX = false } = options;
  const finite = series.map((s) => s.samples.filter(Number.isFinite));
  const all = finite.flat();
  const axis = logX ? logAxis(all) : linearAxis(all.length > 0 ? all : [0, 1]);
  const legendTop = PLOT.top + PLOT.height + 56;
  const height = legendTop + Math.max(1, series.length) * LEGEND_ROW + 10;
  const bottom = PLOT.top + PLOT.height;
  const right = PLOT.left + PLOT.width;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${height}" viewBox="0 0 ${WIDTH} ${height}" font-family="sans-serif" font-size="12">`,
    `<title>${escapeXml(title)}</title>`,
    `<rect x="0" y="0" width="${WIDTH}" height="${height}" fill="#ffffff"/>`,
    `<text x="${WIDTH / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${escapeXml(title)}</text>`,
  ];
  // Grid and ticks.
  for (const t of axis.ticks) {
    const x = fmt(axis.x(t));
    out.push(
      `<line x1="${x}" y1="${PLOT.top}" x2="${x}" y2="${bottom}" stroke="#e5e5e5"/>`,
      `<line x1="${x}" y1="${bottom}" x2="${x}" y2="${bottom + 5}" stroke="#333333"/>`,
      `<text x="${x}" y="${bottom + 18}" text-anchor="middle">${escapeXml(tickLabel(t))}</text>`,
    );
  }
  for (let i = 0; i <= 5; i++) {
    const f = i / 5;
    out.push(
      `<line x1="${PLOT.left}" y1="${fmt(y(f))}" x2="${right}" y2="${fmt(y(f))}" stroke="#e5e5e5"/>`,
      `<text x="${PLOT.left - 8}" y="${fmt(y(f) + 4)}" text-anchor="end">${tickLabel(f)}</text>`,
    );
  }
  for (const g of GUIDES) {
    out.push(
      `<line x1="${PLOT.left}" y1="${fmt(y(g))}" x2="${right}" y2="${fmt(y(g))}" stroke="#999999" stroke-dasharray="3 3"/>`,
      `<text x="${right - 4}" y="${fmt(y(g) - 3)}" text-anchor="end" fill="#666666" font-size="10">p${Math.round(g * 100)}</text>`,
    );
  }
  out.push(
    `<rect x="${PLOT.left}" y="${PLOT.top}" width="${PLOT.width}" height="${PLOT.height}" fill="none" stroke="#333333"/>`,
    `<text x="${PLOT.left + PLOT.width / 2}" y="${bottom + 38}" text-anchor="middle">${escapeXml(xLabel)}${logX ? ' (log scale)' : ''}</text>`,
    `<text x="18" y="${PLOT.top + PLOT.height / 2}" text-anchor="middle" transform="rotate(-90 18 ${PLOT.top + PLOT.height / 2})">fraction of faults ≤ x</text>`,
  );
  if (all.length === 0)
    out.push(
      `<text x="${PLOT.left + PLOT.width / 2}" y="${PLOT.top + PLOT.height / 2}" text-anchor="middle" fill="#666666">no samples</text>`,
    );
  series.forEach((s, i) => {
    const colour = PALETTE[i % PALETTE.length]!;
    const dash = DASHES[Math.floor(i / PALETTE.length) % DASHES.length]!;
    const dashAttr = dash === '' ? '' : ` stroke-dasharray="${dash}"`;
    const samples = finite[i]!;
    if (samples.length > 0)
      out.push(
        `<polyline fill="none" stroke="${colour}" stroke-width="2"${dashAttr} points="${stepPoints(samples, axis)}"/>`,
      );
    const ly = legendTop + i * LEGEND_ROW;
    const label = samples.length > 0 ? `${s.label} (n = ${samples.length})` : `${s.label} (no samples)`;
    out.push(
      samples.length > 0
        ? `<line x1="${PLOT.left}" y1="${ly}" x2="${PLOT.left + 24}" y2="${ly}" stroke="${colour}" stroke-width="2"${dashAttr}/>`
        : `<line x1="${PLOT.left}" y1="${ly}" x2="${PLOT.left + 24}" y2="${ly}" stroke="#bbbbbb" stroke-width="2" stroke-dasharray="2 3"/>`,
      `<text x="${PLOT.left + 32}" y="${ly + 4}">${escapeXml(label)}</text>`,
    );
  });
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}
