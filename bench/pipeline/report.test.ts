import { describe, expect, it } from '@jest/globals';
import { baselineNodes, markdownReport } from './report.js';
import type { BenchResult, PathSummary, RunResult } from './result.js';
import { sampleBaseline, sampleBenchResult, sampleRun } from './testing.js';

const summary = (p50: number | null, p99: number | null = p50): PathSummary => ({
  count: p50 === null ? 0 : 10,
  p50,
  p95: p99,
  p99,
  max: p99,
});
const withLatency = (run: RunResult, latency: Partial<RunResult['latency']>): RunResult => ({
  ...run,
  latency: { ...run.latency, ...latency },
});

/** The table rows under `### heading` (up to the next heading). */
function section(report: string, heading: string): string[] {
  const start = report.indexOf(`\n${heading}\n`);
  expect(start).toBeGreaterThanOrEqual(0);
  const rest = report.slice(start + heading.length + 2);
  const end = rest.search(/\n#{2,3} /);
  return (end < 0 ? rest : rest.slice(0, end)).split('\n').filter((l) => l.startsWith('| '));
}
const rowFor = (rows: string[], first: string): string => {
  const found = rows.find((r) => r.startsWith(`| ${first} |`));
  if (found === undefined) throw new Error(`no row starting ${first} in\n${rows.join('\n')}`);
  return found;
};

describe('markdownReport', () => {
  it('heads with the machine, the command and the date', () => {
    const report = markdownReport(sampleBenchResult(), []);
    expect(report).toMatch(/^# npu-fault pipeline benchmark\n/);
    expect(report).toContain('2026-03-01T10:20:30.456Z');
    expect(report).toContain('Test CPU @ 3.0GHz, 16 CPUs, 64 GiB memory, Node v24.1.0');
    expect(report).toContain('`npm run bench -- pipeline --nodes 100,250`');
  });

  it('tabulates each path across N with pass or miss and the margin where a target applies', () => {
    const result = sampleBenchResult({
      runs: [
        withLatency(sampleRun(100), { injected_to_watch: summary(300, 1200), watch_fanout: summary(5, 260) }),
        withLatency(sampleRun(250), { injected_to_watch: summary(350, 1620.5) }),
      ],
    });
    const report = markdownReport(result, []);
    const rows = section(report, '### injected_to_watch');
    expect(rowFor(rows, '100')).toBe(
      '| 100 | 10 | 300.0 | 1200.0 | 1200.0 | 1200.0 | p99 ≤ 1500 | pass (300 ms spare) |',
    );
    expect(rowFor(rows, '250')).toContain('| p99 ≤ 1500 | **miss** by 120.5 ms |');
    expect(rowFor(section(report, '### watch_fanout'), '100')).toContain('| p99 ≤ 200 | **miss** by 60 ms |');
    // No target on this path.
    expect(rowFor(section(report, '### sent_to_answered'), '100')).toMatch(/\| — \| — \|$/);
    expect(report).toContain('- Targets: ');
    expect(report).toContain('  - miss: injected_to_watch p99 at N = 250: 1620.5 ms > 1500 ms');
  });

  it('applies the collected_to_written target at N = 1000 only', () => {
    const result = sampleBenchResult({
      runs: [
        withLatency(sampleRun(100), { collected_to_written: summary(50, 400) }),
        withLatency(sampleRun(1000), { collected_to_written: summary(90, 280) }),
      ],
    });
    const rows = section(markdownReport(result, []), '### collected_to_written');
    expect(rowFor(rows, '100')).toMatch(/\| — \| — \|$/);
    expect(rowFor(rows, '1000')).toContain('| p99 ≤ 300 | pass (20 ms spare) |');
    const without = markdownReport(sampleBenchResult(), []);
    expect(without).toContain('_Target p99 ≤ 300 ms applies at N = 1000, which was not run._');
  });

  it('marks saturated runs "saturated: not quoted", strikes their figures and leaves them out of the verdicts', () => {
    const result = sampleBenchResult({
      runs: [
        sampleRun(100),
        withLatency(sampleRun(1000, { saturated: true, machineBusy: 0.93 }), {
          injected_to_watch: summary(900, 9000),
        }),
      ],
    });
    const report = markdownReport(result, []);
    const row = rowFor(section(report, '### injected_to_watch'), '1000 (saturated: not quoted)');
    expect(row).toContain('~~9000.0~~');
    expect(row).toMatch(/saturated: not quoted \|$/);
    expect(report).not.toContain('miss: injected_to_watch');
    // Neither pass nor miss, and the header says which checks could not be quoted.
    expect(report).toContain('not quotable: injected_to_watch p99 at N = 1000 (saturated: p99 9000.0 ms)');
    expect(report).toMatch(/- Targets: \d+ pass, \d+ miss, [1-9]\d* not quotable/);
    expect(report).toContain('N = 1000 kept the machine over 85 % busy');
    expect(rowFor(section(report, '## API writes'), '1000 (saturated: not quoted)')).toContain('~~');
  });

  it('says when a path has no samples at any N', () => {
    const empty = (run: RunResult): RunResult => withLatency(run, { event_to_watch: summary(null) });
    const report = markdownReport(
      sampleBenchResult({ runs: [empty(sampleRun(100)), empty(sampleRun(250))] }),
      [],
    );
    expect(report).toMatch(/### event_to_watch\n\n[^\n]+\n\n_No samples at any N\._/);
  });

  it('tabulates components per N, API writes, watcher egress, faults and the lossless check', () => {
    const run = sampleRun(100, {
      snapshotsPerSecond: 200,
      faults: { injected: 10, seenFailed: 8, missed: 2, falseFailed: 1 },
      lossless: {
        published: 20,
        replayed: 21,
        lost: 1,
        duplicated: 0,
        merged: 3,
        details: ['npu3 failed at 12:00 lost'],
      },
    });
    const report = markdownReport(sampleBenchResult({ runs: [run] }), []);
    expect(rowFor(section(report, '### N = 100'), 'controller-1')).toBe(
      '| controller-1 | 12.0 | 0.100 | 500 | 90.5 | 12.3 |',
    );
    // 0.100 of a core over 200 snapshots a second: 500 µs each.
    expect(report).toContain('### N = 100\n\nSnapshots posted: 200/s over the window.');
    expect(rowFor(section(report, '### N = 100'), 'kube-apiserver')).toMatch(/\| — \|$/);
    expect(rowFor(section(report, '## API writes'), '100')).toBe('| 100 | 1.00 | 29.3 KiB/s | 3.50 |');
    const watchers = section(report, '## Watcher egress');
    expect(watchers).toContain('| 100 | 10 | 60 | 293.0 KiB/s | — | 10.0 | 12.0 | 50.0 |');
    expect(rowFor(section(report, '## Faults'), '100')).toBe(
      '| 100 | 10 | 8 | 2 | 1 | **2 missed, 1 false failed** |',
    );
    expect(rowFor(section(report, '## Lossless check'), '100')).toBe(
      '| 100 | 20 | 21 | 1 | 0 | 3 | **1 lost** |',
    );
    expect(report).toContain('- npu3 failed at 12:00 lost');
  });

  it('sets each baseline beside the pipeline at the same N, with the ratio against the target', () => {
    const result = sampleBenchResult({
      runs: [
        withLatency(sampleRun(100), { injected_to_watch: summary(400, 1000) }),
        withLatency(sampleRun(250), { injected_to_watch: summary(500, 1100) }),
      ],
      baselines: [
        sampleBaseline('prom-am', 1, { latency: summary(6000, 20_000) }),
        sampleBaseline('slow-scrape', 1, { latency: summary(3000), configuration: { nodes: '250' } }),
        sampleBaseline('no-n', 1, { latency: summary(8000), configuration: { scrape_interval: '5s' } }),
      ],
    });
    const rows = section(markdownReport(result, []), '### Pipeline against baselines');
    expect(rowFor(rows, 'prom-am')).toBe('| prom-am | 100 | 6000.0 | 400.0 | 15.0× | pass |');
    expect(rowFor(rows, 'slow-scrape')).toBe(
      '| slow-scrape | 250 | 3000.0 | 500.0 | 6.0× | **miss** (4.0× short) |',
    );
    // No N stated: compared with every N, and said so.
    expect(rows.filter((r) => r.startsWith('| no-n |'))).toEqual([
      '| no-n | 100 (baseline N not stated) | 8000.0 | 400.0 | 20.0× | pass |',
      '| no-n | 250 (baseline N not stated) | 8000.0 | 500.0 | 16.0× | pass |',
    ]);
  });

  it('compares a baseline run beside the pipeline with that same run, a saturated one as a lower bound', () => {
    const result = sampleBenchResult({
      runs: [withLatency(sampleRun(100), { injected_to_watch: summary(400) })],
      baselines: [
        sampleBaseline('beside', 1, {
          latency: summary(8000),
          configuration: { nodes: 100 },
          sameRun: { nodes: 100, machineBusy: 0.9, saturated: true, pipeline: summary(500) },
        }),
        sampleBaseline('close', 1, {
          latency: summary(4000),
          sameRun: { nodes: 100, machineBusy: 0.5, saturated: false, pipeline: summary(500) },
        }),
      ],
    });
    const report = markdownReport(result, []);
    const rows = section(report, '### Pipeline against baselines');
    // Its own run's pipeline (500 ms), not the sweep's N = 100 (400 ms).
    expect(rowFor(rows, 'beside')).toBe(
      '| beside | 100, same run (saturated, 90 % busy: a lower bound) | 8000.0 | 500.0 | 16.0× | pass |',
    );
    expect(rowFor(rows, 'close')).toBe(
      '| close | 100, same run (50 % busy) | 4000.0 | 500.0 | 8.0× | **miss** (2.0× short) |',
    );
    expect(report).toContain('close vs pipeline in the same run: 8.0× < 10×');
  });

  it('gives a baseline that times something else its reason instead of a verdict', () => {
    const result = sampleBenchResult({
      baselines: [sampleBaseline('events', 1, { latency: summary(5), notComparable: 'delivery only' })],
    });
    const report = markdownReport(result, []);
    expect(rowFor(section(report, '### Pipeline against baselines'), 'events')).toMatch(
      /\| delivery only \|$/,
    );
    expect(report).not.toContain('events vs pipeline');
  });

  it('shows a baseline configured for an N that was not run', () => {
    const result = sampleBenchResult({
      baselines: [sampleBaseline('b', 20, { configuration: { nodes: 500 } })],
    });
    expect(rowFor(section(markdownReport(result, []), '### Pipeline against baselines'), 'b')).toContain(
      'not run at this N',
    );
  });

  it('quotes the knee sentence, or works it out when the result has none', () => {
    expect(markdownReport(sampleBenchResult({ knee: 'climbs at N = 500.' }), [])).toContain(
      '## Where latency climbs\n\nclimbs at N = 500.\n',
    );
    expect(markdownReport(sampleBenchResult({ knee: '' }), [])).toMatch(
      /injected_to_watch: no climb up to N = 250/,
    );
  });

  it('links and embeds the charts by relative file name', () => {
    const report = markdownReport(sampleBenchResult(), [
      { file: 'x-injected_to_watch.svg', title: 'injected_to_watch [CDF]' },
    ]);
    expect(report).toContain('- [injected_to_watch \\[CDF\\]](x-injected_to_watch.svg)');
    expect(report).toContain('![injected_to_watch \\[CDF\\]](x-injected_to_watch.svg)');
    expect(markdownReport(sampleBenchResult(), [])).toContain('_No charts._');
  });

  it('keeps a pipe in a name from breaking its table', () => {
    const result: BenchResult = sampleBenchResult({ baselines: [sampleBaseline('a|b')] });
    expect(markdownReport(result, [])).toContain('| a\\|b |');
  });
});

describe('baselineNodes', () => {
  it('reads configuration.nodes as a number or numeric string', () => {
    expect(baselineNodes(sampleBaseline('x', 1, { configuration: { nodes: 250 } }))).toBe(250);
    expect(baselineNodes(sampleBaseline('x', 1, { configuration: { nodes: '1000' } }))).toBe(1000);
    expect(baselineNodes(sampleBaseline('x', 1, { configuration: { nodes: 'all' } }))).toBeUndefined();
    expect(baselineNodes(sampleBaseline('x', 1, { configuration: {} }))).toBeUndefined();
  });
});
