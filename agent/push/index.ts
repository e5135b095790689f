/**
 * The agent's sender: snapshots to the ingest function (`POST ${url}/v1/snapshots`) over
 * keep-alive connections, with a per-request timeout, retries with backoff and full jitter
 * (Retry-After honoured), a bounded queue that drops the oldest snapshot while carrying its
 * XIDs into the next one, and the function's answer (this node's published entry) handed to
 * `onAnswer`. The one door into agent/push/.
 *
 * ```ts
 * const sender = createSender(
 *   { url: 'http://npu-fault-function.ai-infra', timeoutMs: 5000, maxQueue: 60, backoff: { initialMs: 200, maxMs: 10_000 } },
 *   { token: tokenFromFile('/var/run/secrets/npu-fault/token', clock, 0), onAnswer: (a) => feed.update(a.result, now), clock, log, registry },
 * );
 * sender.enqueue(snapshot); // from the sampler; never blocks
 * ```
 */
export { MAX_XID_EVENTS, carryOneShotEvents, oneShotEventCount, type CarryResult } from './carry.js';
export {
  PUSH_DROP_REASONS,
  PUSH_RESULTS,
  SNAPSHOT_OUTCOMES,
  type PushDropReason,
  type PushResult,
  type SnapshotOutcome,
} from './metrics.js';
export { MAX_RETRY_AFTER_MS, type BackoffOptions } from './retry.js';
export {
  SENDER_DEFAULTS,
  createSender,
  type PushAnswer,
  type PushStatus,
  type Sender,
  type SenderDeps,
  type SenderOptions,
} from './sender.js';
