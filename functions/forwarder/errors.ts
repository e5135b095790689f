/** The forwarder's errors. */
import { AppError } from '../../platform/index.js';
import type { ForwardErrorReason } from './metrics.js';

/**
 * No leader accepted the snapshots within the bound (`leaderTimeoutMs`): the function
 * answers 503 with `Retry-After: retryAfterSeconds`, and the agent sends them again.
 */
export class LeaderUnavailableError extends AppError {
  declare readonly status: 503;
  /** Seconds after which a retry may find a leader (the Retry-After header). */
  readonly retryAfterSeconds: number;
  constructor(message: string, options: { retryAfterSeconds?: number; cause?: unknown } = {}) {
    super('leader_unavailable', message, { status: 503, cause: options.cause });
    this.retryAfterSeconds = options.retryAfterSeconds ?? 1;
  }
}

/** One request to one replica failed; `reason` is its metric label. */
export class ReplicaRequestError extends Error {
  readonly reason: Exclude<ForwardErrorReason, 'queue-full' | 'leader-unavailable'>;
  /** The HTTP status, when the replica answered. */
  readonly status: number | undefined;
  constructor(
    reason: ReplicaRequestError['reason'],
    message: string,
    options: { status?: number; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ReplicaRequestError';
    this.reason = reason;
    this.status = options.status;
  }
}
