/**
 * The probe's metrics, in the agent's registry under `npu_fault_agent_`. One probe per
 * registry (the names are fixed); `kind` takes the four PROBE_FAILURE_KINDS only.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';

/**
 * Why one attempt failed: `timeout` (killed at the probe's timeout), `exit` (non-zero exit or
 * the tool's own failure message), `garbage` (output that does not parse or validate, or too
 * much of it), `spawn` (the tool could not be started: not installed, not executable).
 */
export const PROBE_FAILURE_KINDS = ['timeout', 'exit', 'garbage', 'spawn'] as const;
/** One of PROBE_FAILURE_KINDS. */
export type ProbeFailureKind = (typeof PROBE_FAILURE_KINDS)[number];

/** The probe's instruments. */
export interface ProbeMetrics {
  /** `collector_duration_seconds`: one attempt, started to settled, whatever its outcome. */
  readonly duration: Histogram;
  /** `collector_failures_total{kind}`: failed attempts (retries count each). */
  readonly failures: Counter<'kind'>;
  /** `collector_cache_samples_total`: samples answered with the cached last good one. */
  readonly cacheSamples: Counter;
  /** `collector_liveness_samples_total`: samples answered with no device (no good one to resend). */
  readonly livenessSamples: Counter;
  /** `collector_last_success_timestamp_seconds`: when the tool last gave a good reading. */
  readonly lastSuccess: Gauge;
}

/** Registers the probe's metrics in `registry` (component `agent`). */
export function createProbeMetrics(registry: Registry, component = 'agent'): ProbeMetrics {
  const prefix = metricPrefix(component);
  const registers = [registry];
  const failures = new Counter({
    name: `${prefix}collector_failures_total`,
    help: 'Failed collector attempts by kind: timeout, exit (non-zero or the tool reported a failure), garbage (unreadable output), spawn',
    labelNames: ['kind'],
    registers,
  });
  // Every kind starts at 0, so an alert on increase() sees the first one.
  for (const kind of PROBE_FAILURE_KINDS) failures.inc({ kind }, 0);
  return {
    duration: new Histogram({
      name: `${prefix}collector_duration_seconds`,
      help: 'Time of one collector attempt (tool run and parse), successful or not',
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 10],
      registers,
    }),
    failures,
    cacheSamples: new Counter({
      name: `${prefix}collector_cache_samples_total`,
      help: 'Samples sent as the cached last good reading (cached: true) because the tool failed',
      registers,
    }),
    livenessSamples: new Counter({
      name: `${prefix}collector_liveness_samples_total`,
      help: 'Samples sent with no device (cached: true) because the tool failed or had not answered, with no good reading young enough to resend',
      registers,
    }),
    lastSuccess: new Gauge({
      name: `${prefix}collector_last_success_timestamp_seconds`,
      help: 'Wall-clock time of the last successful collector attempt (epoch seconds)',
      registers,
    }),
  };
}
