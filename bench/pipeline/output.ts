/**
 * Writes one benchmark's files: `<dir>/<timestamp>.json` (the result, samples included),
 * `<dir>/<timestamp>.md` (the report) and `<dir>/<timestamp>-<name>.svg` (the CDF charts).
 * The only file of bench/pipeline/ output that touches the file system; what to draw is
 * decided by the pure `chartsFor`.
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { cdfChart } from './chart.js';
import { markdownReport } from './report.js';
import { PATHS, type BenchResult } from './result.js';

/** One chart to write: `name` becomes `<timestamp>-<name>.svg`. */
export interface PlannedChart {
  name: string;
  title: string;
  svg: string;
}

/** `startedAt` as a file-name-safe UTC stamp: 2026-03-01T10-20-30Z. */
export function fileStamp(startedAt: string): string {
  const ms = Date.parse(startedAt);
  if (Number.isNaN(ms)) throw new Error(`startedAt: not a date: ${JSON.stringify(startedAt)}`);
  return new Date(ms)
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/:/g, '-');
}

/**
 * The charts of a result: a CDF per path with one series per N (paths with no sample at any
 * N left out), and, when there are baselines, the pipeline's end to end (injected_to_watch,
 * per N) against each baseline's samples on a log axis (they differ by a factor of ten or more).
 */
export function chartsFor(result: BenchResult): PlannedChart[] {
  const runs = [...result.runs].sort((a, b) => a.nodes - b.nodes);
  const runLabel = (nodes: number, saturated: boolean): string =>
    `N = ${nodes}${saturated ? ' (saturated: not quoted)' : ''}`;
  const charts: PlannedChart[] = [];
  for (const path of PATHS) {
    if (!runs.some((r) => (r.samples[path]?.length ?? 0) > 0)) continue;
    const title = `${path}: latency CDF per fleet size`;
    const series = runs.map((r) => ({
      label: runLabel(r.nodes, r.saturated),
      samples: r.samples[path] ?? [],
    }));
    charts.push({ name: path, title, svg: cdfChart({ title, xLabel: `${path} (ms)`, series }) });
  }
  if (result.baselines.length > 0) {
    const title = 'End to end, fault injected → seen: pipeline against baselines';
    const series = [
      ...runs.map((r) => ({
        label: `pipeline injected_to_watch, ${runLabel(r.nodes, r.saturated)}`,
        samples: r.samples.injected_to_watch ?? [],
      })),
      ...result.baselines.map((b) => ({ label: `baseline ${b.name}`, samples: b.samples })),
    ];
    charts.push({
      name: 'pipeline-vs-baselines',
      title,
      svg: cdfChart({ title, xLabel: 'fault injected → seen (ms)', series, logX: true }),
    });
  }
  return charts;
}

/** Writes the result, its report and its charts under `dir` (created if absent); returns their paths. */
export async function writeResults(
  result: BenchResult,
  dir: string,
): Promise<{ json: string; markdown: string; charts: string[] }> {
  const stamp = fileStamp(result.startedAt);
  await mkdir(dir, { recursive: true });
  const planned = chartsFor(result).map((c) => ({ ...c, file: `${stamp}-${c.name}.svg` }));
  const charts: string[] = [];
  for (const c of planned) {
    const path = join(dir, c.file);
    await writeFile(path, c.svg);
    charts.push(path);
  }
  const markdown = join(dir, `${stamp}.md`);
  await writeFile(markdown, markdownReport(result, planned));
  const json = join(dir, `${stamp}.json`);
  await writeFile(json, `${JSON.stringify(result, null, 2)}\n`);
  return { json, markdown, charts };
}
