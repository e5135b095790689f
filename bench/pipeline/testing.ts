/**
 * Builders of small, deterministic benchmark results for the report, chart and output tests
 * (and any other test that needs a plausible `BenchResult`). No randomness: the samples are
 * a fixed spread, so every quantile is known.
 */
import { PATHS, type BaselineResult, type BenchResult, type PathName, type RunResult } from './result.js';
import { summarise } from './summary.js';

/** `count` samples spread from `low` to `high` with a long tail (quadratic in rank). */
export function spread(count: number, low: number, high: number): number[] {
  return Array.from(
    { length: count },
    (_, i) => low + (high - low) * (count === 1 ? 0 : (i / (count - 1)) ** 2),
  );
}

/** Per-path sample ranges (ms) at N = 100; larger fleets are scaled up a little. */
const BASE_RANGES: Record<Exclude<PathName, 'collected_to_written'>, [number, number]> = {
  injected_to_sent: [5, 1000],
  sent_to_answered: [2, 40],
  collected_to_watch: [20, 250],
  injected_to_watch: [60, 1200],
  event_to_watch: [30, 300],
  injected_to_sse: [70, 1250],
  injected_to_cordon: [80, 1300],
  watch_to_cordon: [5, 120],
  watch_fanout: [1, 60],
  watch_to_sse: [-15, 80],
};

/** One fleet size with `count` samples per path; `overrides` replace whole fields. */
export function sampleRun(nodes: number, overrides: Partial<RunResult> = {}, count = 40): RunResult {
  const scale = 1 + nodes / 2000;
  const samples: Partial<Record<PathName, number[]>> = {};
  for (const [path, [low, high]] of Object.entries(BASE_RANGES))
    samples[path as PathName] = spread(count, low, high * scale);
  const latency = Object.fromEntries(
    PATHS.map((p) => [p, summarise(samples[p] ?? [])]),
  ) as RunResult['latency'];
  // collected_to_written comes from the leader's histogram: quantiles without samples.
  latency.collected_to_written = {
    count: count,
    p50: 40 * scale,
    p95: 120 * scale,
    p99: 180 * scale,
    max: null,
  };
  return {
    nodes,
    devices: nodes * 8,
    measuredSeconds: 120,
    machineBusy: 0.4 + nodes / 2500,
    saturated: false,
    faults: { injected: count, seenFailed: count, missed: 0, falseFailed: 0 },
    latency,
    samples,
    components: [
      {
        name: 'controller-1',
        cpuSeconds: 12,
        cpuShareOfOneCore: 0.1,
        rssMiBPeak: 90.5,
        eventLoopDelayP99MsMax: 12.3,
      },
      {
        name: 'function',
        cpuSeconds: 30,
        cpuShareOfOneCore: 0.25,
        rssMiBPeak: 110,
        eventLoopDelayP99MsMax: 8,
      },
      {
        name: 'kube-apiserver',
        cpuSeconds: 60,
        cpuShareOfOneCore: 0.5,
        rssMiBPeak: 700,
        eventLoopDelayP99MsMax: null,
      },
    ],
    api: { statusWritesPerSecond: 1, statusBytesPerSecond: nodes * 300, allWritesPerSecond: 3.5 },
    watchers: [1, 10].map((watchers) => ({
      watchers,
      seconds: 60,
      egressBytesPerSecond: watchers * nodes * 300,
      eventsPerSecond: watchers,
      fanout: summarise(spread(20, 1, 5 * watchers)),
    })),
    lossless: { published: count * 2, replayed: count * 2, lost: 0, duplicated: 0, merged: 1, details: [] },
    ...overrides,
  };
}

/** A baseline whose end-to-end samples are `factor` times the pipeline's at N = 100. */
export function sampleBaseline(
  name: string,
  factor = 20,
  overrides: Partial<BaselineResult> = {},
): BaselineResult {
  const samples = spread(40, 60 * factor, 1200 * factor);
  return {
    name,
    configuration: { scrape_interval: '15s', group_wait: '30s', nodes: 100 },
    latency: summarise(samples),
    samples,
    injected: 40,
    seen: 40,
    missed: 0,
    findings: { 'alerts grouped per notification': 7 },
    ...overrides,
  };
}

/** A whole result: N = 100 and 250, one Prometheus/Alertmanager baseline. */
export function sampleBenchResult(overrides: Partial<BenchResult> = {}): BenchResult {
  return {
    kind: 'npu-fault-pipeline-bench',
    startedAt: '2026-03-01T10:20:30.456Z',
    finishedAt: '2026-03-01T11:00:00.000Z',
    machine: { cpus: 16, model: 'Test CPU @ 3.0GHz', node: 'v24.1.0', memoryGiB: 64 },
    command: 'npm run bench -- pipeline --nodes 100,250',
    targets: {
      collected_to_written_p99_ms_at_1000: 300,
      injected_to_watch_p99_ms: 1500,
      event_to_watch_p99_ms: 400,
      watch_to_consumer_p99_ms: 200,
      baseline_ratio_min: 10,
    },
    runs: [sampleRun(100), sampleRun(250)],
    baselines: [sampleBaseline('prometheus-alertmanager')],
    knee: 'injected_to_watch: no climb up to N = 250.',
    ...overrides,
  };
}
