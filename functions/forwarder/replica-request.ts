/**
 * One observations request to one replica: the batches' body with the function's current
 * token, bounded by `requestTimeoutMs` and by the replica's queue closing, checked to answer
 * one result per observation, timed and counted. It never rejects: a failure comes back as a
 * ReplicaRequestError, logged at warn the first time in a row and at debug after.
 */
import type { ObservationsResponse } from '../../contracts/index.js';
import type { Clock, Logger } from '../../platform/index.js';
import { requestBody, type Batch } from './batch.js';
import { ReplicaRequestError } from './errors.js';
import type { ForwarderMetrics } from './metrics.js';
import type { ReplicaQueue } from './replica-queue.js';
import type { ReplicaTransport } from './transport.js';

/** What requests are sent with. */
export interface ReplicaRequestDeps {
  readonly transport: ReplicaTransport;
  /** The function's current bearer token, asked for every request. */
  token(): string | Promise<string>;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics: ForwarderMetrics;
  /** Longest one request may take, ms. */
  readonly requestTimeoutMs: number;
}

/** Sends `batches` to `queue`'s replica as one request: the answer, or why there is none. */
export type SendRequest = (
  queue: ReplicaQueue,
  batches: readonly Batch[],
) => Promise<ObservationsResponse | ReplicaRequestError>;

/** The request sender of `deps`. */
export function createReplicaRequest(deps: ReplicaRequestDeps): SendRequest {
  const { transport, clock, log, metrics, requestTimeoutMs } = deps;

  const currentToken = async (): Promise<string> => {
    try {
      return await deps.token();
    } catch (error) {
      throw new ReplicaRequestError('unauthorized', `cannot read the function's token: ${String(error)}`, {
        cause: error,
      });
    }
  };

  return async (queue, batches) => {
    const replica = queue.replica;
    const size = batches.reduce((sum, batch) => sum + batch.count, 0);
    // One controller per request, aborted by its timeout or by the queue closing; not
    // AbortSignal.any (why: docs/decisions/0012-forwarder-one-abort-controller-per-request.md).
    const abort = new AbortController();
    const onClose = (): void => abort.abort();
    queue.abort.signal.addEventListener('abort', onClose, { once: true });
    let timedOut = false;
    const cancel = clock.schedule(requestTimeoutMs, () => {
      timedOut = true;
      abort.abort();
    });
    const started = clock.monotonic();
    try {
      const token = await currentToken();
      const answer = await transport.post(replica, {
        body: requestBody(batches),
        token,
        signal: abort.signal,
      });
      if (answer.results.length !== size)
        throw new ReplicaRequestError(
          'bad-answer',
          `${replica.identity} answered ${answer.results.length} results for ${size} observations`,
        );
      if (answer.identity !== replica.identity)
        log.warn(
          { replica: replica.identity, answered: answer.identity },
          'replica answers with another identity',
        );
      metrics.duration.observe(
        { replica_role: answer.leader ? 'leader' : 'follower' },
        (clock.monotonic() - started) / 1000,
      );
      if (queue.failing) log.info({ replica: replica.identity }, 'replica answering again');
      queue.failing = false;
      return answer;
    } catch (error) {
      const failure = timedOut
        ? new ReplicaRequestError('timeout', `${replica.identity}: no answer within ${requestTimeoutMs} ms`)
        : error instanceof ReplicaRequestError
          ? error
          : new ReplicaRequestError('connection', `${replica.identity}: ${String(error)}`, { cause: error });
      metrics.errors.inc({ reason: failure.reason });
      if (!queue.closed) {
        const level = queue.failing ? 'debug' : 'warn';
        log[level](
          { replica: replica.identity, reason: failure.reason, err: failure.message },
          'forwarding failed',
        );
        queue.failing = true;
      }
      return failure;
    } finally {
      cancel();
      queue.abort.signal.removeEventListener('abort', onClose);
    }
  };
}
