/**
 * The forwarder's metrics, in the registry the function passes in (the app registers its own
 * there too). Label values are bounded: `replica_role` is leader or follower, `reason` one
 * of FORWARD_ERROR_REASONS, `state` ready or leader, and `replica` a replica's identity (its
 * pod name: as many values as controller replicas, two by default; a replica's series is
 * removed when it leaves).
 */
import { Counter, Gauge, Histogram } from 'prom-client';
import { metricPrefix, type Registry } from '../../platform/index.js';

/**
 * Why forwarding went wrong: `connection` (refused, reset), `timeout` (no answer in time),
 * `unauthorized` (401/403: the function's token), `http-error` (any other non-200),
 * `bad-answer` (a 200 that is not the contract's answer), `queue-full` (a slow replica's
 * oldest queued batch dropped), `leader-unavailable` (no leader accepted within the bound).
 */
export const FORWARD_ERROR_REASONS = [
  'connection',
  'timeout',
  'unauthorized',
  'http-error',
  'bad-answer',
  'queue-full',
  'leader-unavailable',
] as const;
/** One of FORWARD_ERROR_REASONS. */
export type ForwardErrorReason = (typeof FORWARD_ERROR_REASONS)[number];

/** The forwarder's instruments. */
export interface ForwarderMetrics {
  /** `forward_duration_seconds{replica_role}`: one request to one replica, sent to answered. */
  readonly duration: Histogram<'replica_role'>;
  /** `forward_queue_depth{replica}`: batches waiting for one replica (its request in flight excluded). */
  readonly queueDepth: Gauge<'replica'>;
  /** `forward_errors_total{reason}`. */
  readonly errors: Counter<'reason'>;
}

/**
 * Registers the metrics under `npu_fault_<component>_`. `replicas{state}` is read at scrape
 * time from `counts` (ready: replicas known; leader: 1 when a leader is known, else 0).
 */
export function createForwarderMetrics(
  registry: Registry,
  counts: () => { ready: number; leader: number },
  component = 'function',
): ForwarderMetrics {
  const prefix = metricPrefix(component);
  const registers = [registry];
  new Gauge({
    name: `${prefix}replicas`,
    help: 'Controller replicas: ready (known and receiving observations) and leader (1 when a leader is known)',
    labelNames: ['state'],
    registers,
    collect() {
      const { ready, leader } = counts();
      this.set({ state: 'ready' }, ready);
      this.set({ state: 'leader' }, leader);
    },
  });
  const errors = new Counter({
    name: `${prefix}forward_errors_total`,
    help: 'Forwarding failures by reason (connection, timeout, unauthorized, http-error, bad-answer, queue-full, leader-unavailable)',
    labelNames: ['reason'],
    registers,
  });
  // Every reason starts at 0, so an alert on increase() sees the first one.
  for (const reason of FORWARD_ERROR_REASONS) errors.inc({ reason }, 0);
  return {
    duration: new Histogram({
      name: `${prefix}forward_duration_seconds`,
      help: 'Time of one observations request to one controller replica, by the role it answered with',
      labelNames: ['replica_role'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
    queueDepth: new Gauge({
      name: `${prefix}forward_queue_depth`,
      help: 'Batches queued for one controller replica (bounded by maxQueuedBatches; the oldest is dropped beyond)',
      labelNames: ['replica'],
      registers,
    }),
    errors,
  };
}
