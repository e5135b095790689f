/**
 * The sender's metrics, under `npu_fault_<component>_push_`. Label values are bounded:
 * `result` is one of PUSH_RESULTS, `reason` one of PUSH_DROP_REASONS, `outcome` one of
 * SNAPSHOT_OUTCOMES.
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';

/**
 * How one request ended: `ok` (200), `http_4xx`, `http_5xx`, `timeout` (no answer within
 * timeoutMs), `network` (refused, reset, DNS, TLS), `token` (the token file could not be read:
 * nothing was sent).
 */
export const PUSH_RESULTS = ['ok', 'http_4xx', 'http_5xx', 'timeout', 'network', 'token'] as const;
export type PushResult = (typeof PUSH_RESULTS)[number];

/**
 * Why a snapshot was given up: `queue_full` (the oldest, past maxQueue), `rejected` (a 4xx
 * retrying cannot fix: 400, 403, 413 of one snapshot…), `shutdown` (still queued when the
 * final flush at stop failed or had no time).
 */
export const PUSH_DROP_REASONS = ['queue_full', 'rejected', 'shutdown'] as const;
export type PushDropReason = (typeof PUSH_DROP_REASONS)[number];

/**
 * What the leader did with a delivered snapshot: `accepted`, or why it did not apply it
 * (`duplicate`: a resend it had already, which counts as delivered; `out-of-order`, `future`,
 * `old-boot`, `too-many-devices` (more devices than its rules allow one node); `refused` when
 * it names no reason).
 */
export const SNAPSHOT_OUTCOMES = [
  'accepted',
  'duplicate',
  'out-of-order',
  'future',
  'old-boot',
  'too-many-devices',
  'refused',
] as const;
export type SnapshotOutcome = (typeof SNAPSHOT_OUTCOMES)[number];

/** The sender's instruments. */
export interface PushMetrics {
  readonly requests: Counter<'result'>;
  readonly duration: Histogram;
  readonly queueLength: Gauge;
  readonly dropped: Counter<'reason'>;
  readonly snapshots: Counter<'outcome'>;
}

/** Registers the sender's metrics in `registry`. */
export function createPushMetrics(registry: Registry, component: string): PushMetrics {
  const prefix = `${metricPrefix(component)}push_`;
  const registers = [registry];
  const requests = new Counter({
    name: `${prefix}requests_total`,
    help: 'Snapshot requests to the ingest function by result (ok, http_4xx, http_5xx, timeout, network)',
    labelNames: ['result'],
    registers,
  });
  const dropped = new Counter({
    name: `${prefix}dropped_total`,
    help: 'Snapshots given up by reason (queue_full: oldest dropped; rejected: a 4xx not retried; shutdown)',
    labelNames: ['reason'],
    registers,
  });
  const snapshots = new Counter({
    name: `${prefix}snapshots_total`,
    help: 'Snapshots delivered, by what the leading controller did with them',
    labelNames: ['outcome'],
    registers,
  });
  // Every label value starts at 0, so an alert on increase() sees the first one.
  for (const result of PUSH_RESULTS) requests.inc({ result }, 0);
  for (const reason of PUSH_DROP_REASONS) dropped.inc({ reason }, 0);
  for (const outcome of SNAPSHOT_OUTCOMES) snapshots.inc({ outcome }, 0);
  return {
    requests,
    duration: new Histogram({
      name: `${prefix}duration_seconds`,
      help: 'Time of one snapshot request, sent to answered (or failed)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    queueLength: new Gauge({
      name: `${prefix}queue_length`,
      help: 'Snapshots waiting to be sent (the request in flight excluded; bounded by maxQueue)',
      registers,
    }),
    dropped,
    snapshots,
  };
}
