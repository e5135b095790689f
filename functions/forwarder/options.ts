/** The forwarder's options: their defaults, and the settings they give once checked. */
import { DEFAULT_MAX_BATCH } from '../../contracts/index.js';

/** Defaults of ForwarderOptions. */
export const FORWARDER_DEFAULTS = {
  batchWindowMs: 20,
  maxBatch: DEFAULT_MAX_BATCH,
  /** Under the controllers' 4 MiB body limit, with room for the envelope. */
  maxBatchBytes: 3 * 1024 * 1024,
  maxQueuedBatches: 100,
  leaderTimeoutMs: 2_000,
  retryIntervalMs: 100,
  retryAfterSeconds: 1,
  flushWhenIdle: true,
  leaderIntervalMs: 20,
  followerWindowMs: 20,
} as const;

/** How the forwarder batches, queues and waits. */
export interface ForwarderOptions {
  /** Longest a snapshot waits for its batch to be sent, ms (default 20; 0: the next timer turn). */
  batchWindowMs?: number;
  /** Most snapshots in one batch and one request (default 1000, the controller's limit). */
  maxBatch?: number;
  /** Most bytes of snapshots in one batch and one request (default 3 MiB, under the controller's 4 MiB). */
  maxBatchBytes?: number;
  /** Most batches queued for one replica; beyond, its oldest is dropped (default 100). */
  maxQueuedBatches?: number;
  /** The bound: a leader must accept within this long after the batch opened, ms (default 2000). */
  leaderTimeoutMs?: number;
  /** Longest one request may take, ms (default leaderTimeoutMs). */
  requestTimeoutMs?: number;
  /** Least pause between two retries of one batch, ms (default 100). */
  retryIntervalMs?: number;
  /** LeaderUnavailableError's retryAfterSeconds (default 1). */
  retryAfterSeconds?: number;
  /** Send a batch as soon as the leader has nothing in flight (default true). */
  flushWhenIdle?: boolean;
  /**
   * With flushWhenIdle, the least time from one batch to an idle flush of the next, ms
   * (default 20, the batch window; 0: none). A snapshot waits at most this much longer (its
   * window still bounds the wait); fewer, larger requests to the leader under load
   * (why: docs/decisions/0013-forwarder-request-pacing.md, 0051-pipeline-cost.md).
   */
  leaderIntervalMs?: number;
  /**
   * Longest a batch waits in a follower's queue for later ones to join its request, ms
   * (default 20; 0: sent as soon as the follower has nothing in flight).
   */
  followerWindowMs?: number;
  /** Metric names start `npu_fault_<metricsComponent>_` (default `function`). */
  metricsComponent?: string;
}

/** ForwarderOptions with every default filled in and every value checked. */
export interface ForwarderSettings {
  readonly batchWindowMs: number;
  readonly maxBatch: number;
  readonly maxBatchBytes: number;
  readonly maxQueuedBatches: number;
  readonly leaderTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly retryIntervalMs: number;
  readonly retryAfterSeconds: number;
  readonly flushWhenIdle: boolean;
  readonly leaderIntervalMs: number;
  readonly followerWindowMs: number;
}

/**
 * The settings `options` give: defaults filled in, each value checked in the order of
 * ForwarderSettings; the first out of range throws a RangeError naming the option.
 */
export function forwarderSettings(options: ForwarderOptions): ForwarderSettings {
  const batchWindowMs = atLeast(
    'batchWindowMs',
    options.batchWindowMs ?? FORWARDER_DEFAULTS.batchWindowMs,
    0,
  );
  const maxBatch = integer('maxBatch', options.maxBatch ?? FORWARDER_DEFAULTS.maxBatch);
  const maxBatchBytes = integer('maxBatchBytes', options.maxBatchBytes ?? FORWARDER_DEFAULTS.maxBatchBytes);
  const maxQueuedBatches = integer(
    'maxQueuedBatches',
    options.maxQueuedBatches ?? FORWARDER_DEFAULTS.maxQueuedBatches,
  );
  const leaderTimeoutMs = atLeast(
    'leaderTimeoutMs',
    options.leaderTimeoutMs ?? FORWARDER_DEFAULTS.leaderTimeoutMs,
    1,
  );
  const requestTimeoutMs = atLeast('requestTimeoutMs', options.requestTimeoutMs ?? leaderTimeoutMs, 1);
  const retryIntervalMs = atLeast(
    'retryIntervalMs',
    options.retryIntervalMs ?? FORWARDER_DEFAULTS.retryIntervalMs,
    1,
  );
  const retryAfterSeconds = integer(
    'retryAfterSeconds',
    options.retryAfterSeconds ?? FORWARDER_DEFAULTS.retryAfterSeconds,
  );
  const flushWhenIdle = options.flushWhenIdle ?? FORWARDER_DEFAULTS.flushWhenIdle;
  const leaderIntervalMs = atLeast(
    'leaderIntervalMs',
    options.leaderIntervalMs ?? FORWARDER_DEFAULTS.leaderIntervalMs,
    0,
  );
  const followerWindowMs = atLeast(
    'followerWindowMs',
    options.followerWindowMs ?? FORWARDER_DEFAULTS.followerWindowMs,
    0,
  );
  return {
    batchWindowMs,
    maxBatch,
    maxBatchBytes,
    maxQueuedBatches,
    leaderTimeoutMs,
    requestTimeoutMs,
    retryIntervalMs,
    retryAfterSeconds,
    flushWhenIdle,
    leaderIntervalMs,
    followerWindowMs,
  };
}

function integer(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1)
    throw new RangeError(`forwarder ${name}: expected a positive integer, got ${value}`);
  return value;
}

function atLeast(name: string, value: number, min: number): number {
  if (!Number.isFinite(value) || value < min)
    throw new RangeError(`forwarder ${name}: expected a number >= ${min}, got ${value}`);
  return value;
}
