import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { chartsFor, fileStamp, writeResults } from './output.js';
import type { RunResult } from './result.js';
import { sampleBenchResult, sampleRun } from './testing.js';

const withoutSamples = (run: RunResult, ...paths: (keyof RunResult['samples'])[]): RunResult => {
  const samples = { ...run.samples };
  for (const p of paths) delete samples[p];
  return { ...run, samples };
};

describe('fileStamp', () => {
  it('turns startedAt into a UTC stamp safe in any file system', () => {
    expect(fileStamp('2026-03-01T10:20:30.456Z')).toBe('2026-03-01T10-20-30Z');
    expect(fileStamp('2026-03-01T12:20:30+02:00')).toBe('2026-03-01T10-20-30Z');
    expect(() => fileStamp('yesterday')).toThrow('startedAt: not a date: "yesterday"');
  });
});

describe('chartsFor', () => {
  it('draws a CDF per path with samples, one series per N, and the pipeline against the baselines', () => {
    const result = sampleBenchResult({
      runs: [
        withoutSamples(sampleRun(100), 'event_to_watch'),
        withoutSamples(sampleRun(250), 'event_to_watch'),
      ],
    });
    const charts = chartsFor(result);
    expect(charts.map((c) => c.name)).toEqual([
      'injected_to_sent',
      'sent_to_answered',
      'collected_to_watch',
      'injected_to_watch',
      'injected_to_cordon',
      'watch_to_cordon',
      'injected_to_sse',
      'watch_fanout',
      'watch_to_sse',
      'pipeline-vs-baselines',
    ]);
    const perPath = charts.find((c) => c.name === 'injected_to_watch')!.svg;
    expect(perPath.match(/<polyline/g)).toHaveLength(2);
    expect(perPath).toContain('>N = 100 (n = 40)<');
    const versus = charts.at(-1)!.svg;
    expect(versus.match(/<polyline/g)).toHaveLength(3);
    expect(versus).toContain('baseline prometheus-alertmanager (n = 40)');
    expect(versus).toContain('(log scale)');
  });

  it('leaves the comparison out without baselines', () => {
    expect(chartsFor(sampleBenchResult({ baselines: [] })).map((c) => c.name)).not.toContain(
      'pipeline-vs-baselines',
    );
  });
});

describe('writeResults', () => {
  let dir: string;
  beforeEach(async () => {
    dir = join(await mkdtemp(join(tmpdir(), 'npu-fault-pipeline-output-')), 'results', 'nested');
  });
  afterEach(async () => {
    await rm(join(dir, '..', '..'), { recursive: true, force: true });
  });

  it('writes the JSON, the report and the charts under one stamp, creating the directory', async () => {
    const result = sampleBenchResult();
    const written = await writeResults(result, dir);
    const stamp = '2026-03-01T10-20-30Z';
    expect(written.json).toBe(join(dir, `${stamp}.json`));
    expect(written.markdown).toBe(join(dir, `${stamp}.md`));
    expect(written.charts).toContain(join(dir, `${stamp}-injected_to_watch.svg`));
    expect(written.charts).toContain(join(dir, `${stamp}-pipeline-vs-baselines.svg`));
    expect((await readdir(dir)).sort()).toEqual(
      [written.json, written.markdown, ...written.charts].map((p) => basename(p)).sort(),
    );

    expect(JSON.parse(await readFile(written.json, 'utf8'))).toEqual(result);
    const report = await readFile(written.markdown, 'utf8');
    for (const chart of written.charts) {
      // Linked by its name relative to the report, and a complete SVG.
      expect(report).toContain(`](${basename(chart)})`);
      const svg = await readFile(chart, 'utf8');
      expect(svg.startsWith('<svg')).toBe(true);
      expect(svg.trimEnd().endsWith('</svg>')).toBe(true);
    }
  });

  it('refuses a result whose startedAt is no date, before writing anything', async () => {
    await expect(writeResults(sampleBenchResult({ startedAt: 'soon' }), dir)).rejects.toThrow(/startedAt/);
    await expect(readdir(dir)).rejects.toThrow(/ENOENT/);
  });
});
