import { describe, expect, it } from '@jest/globals';
import { PALETTE, cdfChart, escapeXml } from './chart.js';
import { spread } from './testing.js';

/** The attributes of every `<tag …/>` element in `svg`. */
function elements(svg: string, tag: string): Record<string, string>[] {
  return [...svg.matchAll(new RegExp(`<${tag}\\s([^>]*?)/?>`, 'g'))].map((m) =>
    Object.fromEntries([...m[1]!.matchAll(/([\w-]+)="([^"]*)"/g)].map((a) => [a[1]!, a[2]!])),
  );
}

const viewBox = (svg: string): number[] => elements(svg, 'svg')[0]!.viewBox!.split(' ').map(Number);

function polylinePoints(line: Record<string, string>): [number, number][] {
  return line.points!.split(' ').map((pair) => pair.split(',').map(Number) as [number, number]);
}

/** Text content is well formed: every `&` starts an entity, no raw `<` outside tags. */
function expectWellFormedText(svg: string): void {
  const text = svg.replace(/<[^<>]*>/g, '');
  expect(text).not.toMatch(/[<>]/);
  expect(text.replace(/&(amp|lt|gt|quot|apos);/g, '')).not.toContain('&');
}

describe('cdfChart', () => {
  const chart = cdfChart({
    title: 'injected_to_watch <p99> & "friends"',
    xLabel: 'latency (ms)',
    series: [
      { label: 'N = 100', samples: spread(50, 10, 900) },
      { label: 'N = <250> & co', samples: spread(80, 20, 1400) },
      { label: 'N = 500', samples: [] },
      { label: 'N = 1000', samples: [5, 5, 5, Number.NaN, 2000] },
    ],
  });

  it('is one self-contained SVG document', () => {
    expect(chart.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(chart.trimEnd().endsWith('</svg>')).toBe(true);
    expect(chart).not.toMatch(/<script|href=|@import|url\(/);
    expect(chart.match(/<svg/g)).toHaveLength(1);
    expectWellFormedText(chart);
  });

  it('draws one line per non-empty series, each its own colour, and a legend entry per series', () => {
    const lines = elements(chart, 'polyline');
    expect(lines).toHaveLength(3);
    expect(lines.map((l) => l.stroke)).toEqual([PALETTE[0], PALETTE[1], PALETTE[3]]);
    expect(chart).toContain('>N = 100 (n = 50)</text>');
    expect(chart).toContain('>N = 500 (no samples)</text>');
    expect(chart).toContain('>N = 1000 (n = 4)</text>');
  });

  it('escapes labels and the title', () => {
    expect(chart).toContain('N = &lt;250&gt; &amp; co (n = 80)');
    expect(chart).toContain('<title>injected_to_watch &lt;p99&gt; &amp; &quot;friends&quot;</title>');
    expect(chart).not.toContain('<250>');
  });

  it('keeps every coordinate finite and inside the viewBox, and each CDF rising', () => {
    const [, , width, height] = viewBox(chart);
    for (const line of elements(chart, 'polyline')) {
      const points = polylinePoints(line);
      expect(points.length).toBeGreaterThan(2);
      for (const [x, y] of points) {
        expect(Number.isFinite(x) && Number.isFinite(y)).toBe(true);
        expect(x).toBeGreaterThanOrEqual(0);
        expect(x).toBeLessThanOrEqual(width!);
        expect(y).toBeGreaterThanOrEqual(0);
        expect(y).toBeLessThanOrEqual(height!);
      }
      // SVG y grows downwards: a rising CDF never moves down, and x never moves left.
      for (let i = 1; i < points.length; i++) {
        expect(points[i]![1]).toBeLessThanOrEqual(points[i - 1]![1]);
        expect(points[i]![0]).toBeGreaterThanOrEqual(points[i - 1]![0]);
      }
    }
    for (const attrs of [...elements(chart, 'line'), ...elements(chart, 'text')])
      for (const key of ['x', 'y', 'x1', 'x2', 'y1', 'y2'])
        if (attrs[key] !== undefined) expect(Number.isFinite(Number(attrs[key]))).toBe(true);
  });

  it('starts each line at fraction 0 and ends it at fraction 1 on the same y for every series', () => {
    const lines = elements(chart, 'polyline').map(polylinePoints);
    const bottoms = new Set(lines.map((p) => p[0]![1]));
    const tops = new Set(lines.map((p) => p.at(-1)![1]));
    expect(bottoms.size).toBe(1);
    expect(tops.size).toBe(1);
    expect([...bottoms][0]).toBeGreaterThan([...tops][0]!);
  });

  it('labels axis ticks, the quantile guides and the axis names', () => {
    expect(chart).toContain('>latency (ms)</text>');
    for (const guide of ['p50', 'p95', 'p99']) expect(chart).toContain(`>${guide}</text>`);
    // Linear axis from zero, in round steps, covering the largest sample (2000).
    const ticks = [...chart.matchAll(/text-anchor="middle">(-?[\d.]+)<\/text>/g)].map((m) => Number(m[1]));
    expect(ticks[0]).toBe(0);
    expect(ticks.at(-1)).toBeGreaterThanOrEqual(2000);
  });

  it('draws a log axis in decades, negative samples at its left edge', () => {
    const svg = cdfChart({
      title: 't',
      xLabel: 'ms',
      series: [{ label: 'a', samples: [-3, 0, 12, 340, 9000] }],
      logX: true,
    });
    expect(svg).toContain('ms (log scale)');
    for (const decade of ['10', '100', '1000', '10000']) expect(svg).toContain(`>${decade}</text>`);
    const points = polylinePoints(elements(svg, 'polyline')[0]!);
    expect(points[0]![0]).toBe(points[1]![0]);
    for (const [x] of points) expect(Number.isFinite(x)).toBe(true);
  });

  it('still draws axes and a legend with no samples at all, or one value only', () => {
    const empty = cdfChart({ title: 't', xLabel: 'ms', series: [{ label: 'x', samples: [] }] });
    expect(elements(empty, 'polyline')).toHaveLength(0);
    expect(empty).toContain('>x (no samples)</text>');
    expect(empty).not.toMatch(/NaN|Infinity/);
    for (const logX of [false, true]) {
      const flat = cdfChart({ title: 't', xLabel: 'ms', series: [{ label: 'x', samples: [7, 7] }], logX });
      expect(flat).not.toMatch(/NaN|Infinity/);
      expect(elements(flat, 'polyline')).toHaveLength(1);
    }
  });

  it('keeps series told apart past the palette with dash patterns', () => {
    const series = Array.from({ length: PALETTE.length + 1 }, (_, i) => ({
      label: `s${i}`,
      samples: [i + 1],
    }));
    const lines = elements(cdfChart({ title: 't', xLabel: 'ms', series }), 'polyline');
    const styles = new Set(lines.map((l) => `${l.stroke}/${l['stroke-dasharray'] ?? ''}`));
    expect(styles.size).toBe(series.length);
  });
});

describe('escapeXml', () => {
  it('escapes markup and drops characters XML forbids', () => {
    expect(escapeXml(`a<b>&"c'\u0001\td`)).toBe('a&lt;b&gt;&amp;&quot;c&apos;\td');
  });
});
