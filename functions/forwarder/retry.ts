/**
 * Retry within the bound: every batch waits until a leader accepts it or `leaderTimeoutMs`
 * after it opened has passed. It settles with the first answer that says `leader: true`, from
 * whichever replica (the controller reads its fence after accepting, so that answer proves
 * the leader holds the snapshots); followers' answers and failures never hold a caller up.
 * When the leader's answer for a batch is `leader: false` (leadership moved) or its request
 * fails, the batch is sent again, alone, to the replica that leads now (a replica that already
 * has it answers `dropped: "duplicate"` with its entry: it is in its engine, which is what
 * counts), every `retryIntervalMs` at most and on every leader change. At the bound every
 * caller gets LeaderUnavailableError (503, Retry-After).
 */
import type { LeaderObservationResult, ObservationsResponse } from '../../contracts/index.js';
import { LinkedSet, type Clock, type Logger } from '../../platform/index.js';
import { rejectCallers, resolveCallers, type Batch } from './batch.js';
import { LeaderUnavailableError, ReplicaRequestError } from './errors.js';
import type { ForwarderMetrics } from './metrics.js';
import type { ForwarderSettings } from './options.js';
import type { ReplicaQueue } from './replica-queue.js';
import type { SendRequest } from './replica-request.js';

/** What the retry is built from: the forwarder's parts it asks. */
export interface LeaderRetryDeps {
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics: ForwarderMetrics;
  readonly settings: Pick<ForwarderSettings, 'leaderTimeoutMs' | 'retryIntervalMs' | 'retryAfterSeconds'>;
  /** The leader as known now. */
  leader(): string | undefined;
  /** The queue of the replica of `identity`, if it is a current one. */
  queueOf(identity: string): ReplicaQueue | undefined;
  readonly send: SendRequest;
  /** Takes in what `queue`'s replica answered (whether it follows, who leads). */
  heard(queue: ReplicaQueue, answer: ObservationsResponse): void;
  /** Makes the queues match the current replicas. */
  reconcile(): void;
  /** Sends `batch` now if it is still open. */
  flushIfOpen(batch: Batch): void;
}

/** The batches no leader has accepted yet, and what each waits for. */
export class LeaderRetry {
  readonly #deps: LeaderRetryDeps;
  /** A LinkedSet, not a Set (why: docs/decisions/0011-linked-set-for-short-lived-values.md). */
  readonly #unsettled = new LinkedSet<Batch>();
  #drained: (() => void) | undefined;

  constructor(deps: LeaderRetryDeps) {
    this.#deps = deps;
  }

  /** How many batches wait for a leader. */
  get size(): number {
    return this.#unsettled.size;
  }

  /** Starts `batch`'s bound (it has just opened). */
  track(batch: Batch): void {
    batch.cancelDeadline = this.#deps.clock.schedule(this.#deps.settings.leaderTimeoutMs, () =>
      this.#expire(batch),
    );
    batch.leaveUnsettled = this.#unsettled.add(batch);
  }

  /** Resolves once no batch waits (each settles within its bound). */
  allSettled(): Promise<void> {
    return new Promise<void>((resolve) => (this.#drained = resolve));
  }

  /** Decides what an unsettled, flushed batch waits for: the leader's pending answer, a retry, or a pause. */
  evaluate(batch: Batch): void {
    if (batch.settled || !batch.flushed || batch.retrying || batch.retryTimer) return;
    const leader = this.#deps.leader();
    if (leader !== undefined) {
      if (batch.status.get(leader) === 'pending') return;
      const queue = this.#deps.queueOf(leader);
      if (queue && !queue.closed) {
        this.#retry(batch, queue);
        return;
      }
    } else if ([...batch.status.values()].includes('pending')) return;
    // No leader to ask now: look again shortly (a leader change looks at once).
    this.#pause(batch);
  }

  /** On a leader or replica change: every waiting batch is looked at again now. */
  reevaluate(): void {
    for (const batch of this.#unsettled.values()) {
      batch.retryTimer?.();
      batch.retryTimer = undefined;
      this.evaluate(batch);
    }
  }

  /** A leader accepted `batch`: its callers get their results. */
  settle(batch: Batch, leader: string, term: number, results: LeaderObservationResult[]): void {
    if (batch.settled) return;
    this.#finish(batch);
    resolveCallers(batch, { leader, term, results });
  }

  /** Sends `batch` alone to the leader's replica, outside its queue. */
  #retry(batch: Batch, queue: ReplicaQueue): void {
    const identity = queue.replica.identity;
    batch.retrying = true;
    batch.status.set(identity, 'pending');
    this.#deps.log.debug({ batch: batch.id, replica: identity }, 'sending a batch to the leader again');
    void this.#deps.send(queue, [batch]).then((outcome) => {
      batch.retrying = false;
      if (!(outcome instanceof ReplicaRequestError)) {
        if (outcome.leader) this.settle(batch, outcome.identity, outcome.term, outcome.results);
        this.#deps.heard(queue, outcome);
      }
      batch.status.set(identity, 'done');
      if (batch.settled || batch.retryTimer) return;
      this.#pause(batch);
    });
  }

  /** Evaluates `batch` again after `retryIntervalMs`. */
  #pause(batch: Batch): void {
    batch.retryTimer = this.#deps.clock.schedule(this.#deps.settings.retryIntervalMs, () => {
      batch.retryTimer = undefined;
      this.#deps.reconcile();
      this.evaluate(batch);
    });
  }

  /** The bound passed: every caller of `batch` gets LeaderUnavailableError. */
  #expire(batch: Batch): void {
    if (batch.settled) return;
    this.#deps.flushIfOpen(batch);
    this.#finish(batch);
    this.#deps.metrics.errors.inc({ reason: 'leader-unavailable' });
    const leader = this.#deps.leader();
    this.#deps.log.warn(
      { batch: batch.id, snapshots: batch.count, leader: leader ?? null },
      'no leader accepted a batch in time',
    );
    const error = new LeaderUnavailableError(
      `no controller leader accepted the snapshots within ${this.#deps.settings.leaderTimeoutMs} ms (leader ${leader === undefined ? 'unknown' : `"${leader}"`})`,
      { retryAfterSeconds: this.#deps.settings.retryAfterSeconds },
    );
    rejectCallers(batch, error);
  }

  #finish(batch: Batch): void {
    batch.settled = true;
    batch.cancelDeadline();
    batch.retryTimer?.();
    batch.retryTimer = undefined;
    batch.leaveUnsettled();
    if (this.#unsettled.size === 0) this.#drained?.();
  }
}
