/**
 * The forwarder: hands validated snapshots to every ready controller replica (hot standby)
 * and answers each caller with the leader's answer for its snapshots.
 *
 * ```
 * forward() ─▶ open batch ─(window | maxBatch | leader idle)─▶ flush ─┬─▶ queue(replica A) ─▶ 1 request at a time
 *                                                                     ├─▶ queue(replica B) ─▶ …
 *                                                                     └─▶ …        the first leader:true answer settles the batch
 * ```
 *
 * This file composes the parts, each in a file of its own:
 * - **Micro-batching** (micro-batcher.ts, batch.ts): concurrent calls share one batch, sent
 *   at its window, when full, or as soon as the leader is idle.
 * - **Per-replica queues** (replica-queue.ts, replica-request.ts): each replica gets every
 *   batch, in order, one request at a time, at most `maxQueuedBatches` queued (beyond, the
 *   oldest is dropped: `forward_errors_total{reason="queue-full"}`). A follower's queue waits
 *   up to `followerWindowMs` so that its observations go in fewer, larger requests; no caller
 *   waits on a follower.
 * - **Who leads** (leader-tracker.ts): the Lease holder, else what the answers say.
 * - **Retry within the bound** (retry.ts): a batch settles with the first `leader: true`
 *   answer, is sent again to the leader as it changes, and fails with LeaderUnavailableError
 *   (503, Retry-After) `leaderTimeoutMs` after it opened.
 * - **Options** (options.ts): defaults and checks.
 *
 * Here: which replicas there are (their queues follow the ReplicaSource), when each queue
 * sends, what an answer teaches, and a stop that lets every batch settle first.
 */
import type { LeaderObservationResult, ObservationsResponse, Snapshot } from '../../contracts/index.js';
import type { Clock, Logger, Registry, Runnable } from '../../platform/index.js';
import type { Batch, ObservationsJson } from './batch.js';
import { LeaderUnavailableError, ReplicaRequestError } from './errors.js';
import { LeaderTracker } from './leader-tracker.js';
import { createForwarderMetrics, type ForwarderMetrics } from './metrics.js';
import { MicroBatcher } from './micro-batcher.js';
import { forwarderSettings, type ForwarderOptions, type ForwarderSettings } from './options.js';
import { ReplicaQueue } from './replica-queue.js';
import { createReplicaRequest, type SendRequest } from './replica-request.js';
import type { LeaderSource, Replica, ReplicaSource } from './replicas.js';
import { LeaderRetry } from './retry.js';
import { createHttpTransport, type ReplicaTransport } from './transport.js';

/** Sends snapshots to the controllers and returns the leader's answer. */
export interface Forwarder {
  /**
   * Sends the snapshots (validated) to every ready controller replica and resolves with the
   * leader's answer for them (same order) once the leader has accepted them. Rejects with
   * LeaderUnavailableError (an AppError with status 503 and retryAfterSeconds) when no leader
   * answered within the bound. `bytes`: the snapshots' JSON size, so batches are cut by
   * bytes as well as by count. `json`: the observations already serialised (ForwardOptions).
   */
  forward(snapshots: readonly Snapshot[], options?: ForwardOptions): Promise<ForwardResult>;
}

/** What a caller of forward() may tell about the snapshots. */
export interface ForwardOptions {
  /** The snapshots' JSON size, so batches are cut by bytes as well as by count. */
  bytes?: number;
  /**
   * The snapshots as observations in JSON, `{"snapshot":…}` items without the brackets, in
   * order: sent as they are, so a caller that serialised them already (the app, to measure
   * them) spares the forwarder doing it again. Text, UTF-8 bytes, or UTF-8 parts (ObservationsJson).
   */
  json?: ObservationsJson;
}

/** The leader's answer for one forward() call. */
export interface ForwardResult {
  /** Identity of the replica whose answer this is. */
  leader: string;
  /** Its leadership term. */
  term: number;
  /** One per snapshot, in order. */
  results: LeaderObservationResult[];
}

/** The forwarder as a component runs it: a Forwarder, a Runnable (its discovery), a readiness. */
export interface RunningForwarder extends Forwarder, Runnable {
  /** True when at least one replica is known and a leader is known (the function's /readyz). */
  ready(): boolean;
  /** The leader as known now (leader-tracker.ts); undefined when none is. */
  leader(): string | undefined;
  /** The replicas snapshots are sent to now. */
  replicas(): readonly Replica[];
}

/** What a forwarder is built from. */
export interface ForwarderDeps {
  /** The ready replicas (static list or EndpointSlices). */
  replicas: ReplicaSource;
  /** The Lease holder (authoritative when it names one); omit where no Lease is watched. */
  lease?: LeaderSource;
  /**
   * The function's current bearer token, asked for every request (projected tokens rotate:
   * in a pod, `tokenFromFile` reads the file again once a minute).
   */
  token(): string | Promise<string>;
  clock: Clock;
  log: Logger;
  /** The forwarder's metrics go here. */
  registry: Registry;
  /** How requests are sent (default: createHttpTransport, keep-alive node:http agents). */
  transport?: ReplicaTransport;
}

/** Builds a forwarder. forward() works at once; start it (Runnable) to run its discovery. */
export function createForwarder(deps: ForwarderDeps, options: ForwarderOptions = {}): RunningForwarder {
  return new FanOutForwarder(deps, options);
}

class FanOutForwarder implements RunningForwarder {
  readonly name = 'forwarder';
  readonly #source: ReplicaSource;
  readonly #lease: LeaderSource | undefined;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #transport: ReplicaTransport;
  readonly #settings: ForwarderSettings;
  readonly #leaders: LeaderTracker;
  readonly #metrics: ForwarderMetrics;
  readonly #send: SendRequest;
  readonly #retry: LeaderRetry;
  readonly #batcher: MicroBatcher;
  /** Per replica identity, its queue. */
  readonly #queues = new Map<string, ReplicaQueue>();
  #knownReplicas: readonly Replica[] | undefined;
  #stopping = false;

  constructor(deps: ForwarderDeps, options: ForwarderOptions) {
    this.#source = deps.replicas;
    this.#lease = deps.lease;
    this.#clock = deps.clock;
    this.#log = deps.log.child({ component: 'forwarder' });
    this.#transport = deps.transport ?? createHttpTransport();
    const settings = (this.#settings = forwarderSettings(options));
    this.#leaders = new LeaderTracker(deps.lease);
    this.#metrics = createForwarderMetrics(
      deps.registry,
      () => ({ ready: this.#source.replicas().length, leader: this.leader() === undefined ? 0 : 1 }),
      options.metricsComponent,
    );
    this.#send = createReplicaRequest({
      transport: this.#transport,
      token: deps.token,
      clock: this.#clock,
      log: this.#log,
      metrics: this.#metrics,
      requestTimeoutMs: settings.requestTimeoutMs,
    });
    this.#retry = new LeaderRetry({
      clock: this.#clock,
      log: this.#log,
      metrics: this.#metrics,
      settings,
      leader: () => this.leader(),
      queueOf: (identity) => this.#queues.get(identity),
      send: this.#send,
      heard: (queue, answer) => this.#heard(queue, answer),
      reconcile: () => this.#reconcile(),
      flushIfOpen: (batch) => this.#batcher.flushIfOpen(batch),
    });
    this.#batcher = new MicroBatcher({
      clock: this.#clock,
      settings,
      leaderIdle: () => this.#leaderIdle(),
      opened: (batch) => this.#retry.track(batch),
      flushed: (batch) => this.#fanOut(batch),
    });
    this.#source.subscribe(() => {
      this.#reconcile();
      this.#reevaluate();
    });
    this.#lease?.subscribe(() => this.#reevaluate());
  }

  ready(): boolean {
    return this.#source.replicas().length > 0 && this.leader() !== undefined;
  }

  leader(): string | undefined {
    return this.#leaders.leader();
  }

  replicas(): readonly Replica[] {
    return this.#source.replicas();
  }

  forward(snapshots: readonly Snapshot[], options: ForwardOptions = {}): Promise<ForwardResult> {
    if (this.#stopping)
      return Promise.reject(
        new LeaderUnavailableError('the function is stopping', {
          retryAfterSeconds: this.#settings.retryAfterSeconds,
        }),
      );
    const count = snapshots.length;
    const { maxBatch } = this.#settings;
    if (count === 0 || count > maxBatch)
      return Promise.reject(new RangeError(`forward: expected 1 to ${maxBatch} snapshots, got ${count}`));
    return new Promise<ForwardResult>((resolve, reject) => {
      this.#batcher.add({ snapshots, bytes: options.bytes ?? 0, json: options.json, resolve, reject });
    });
  }

  async start(signal: AbortSignal): Promise<void> {
    this.#reconcile();
    try {
      await Promise.all([this.#source.start(signal), this.#lease?.start(signal)]);
    } finally {
      await this.#stop();
    }
  }

  /** Sends what is open, lets every batch settle (each within the bound), then closes connections. */
  async #stop(): Promise<void> {
    this.#stopping = true;
    this.#batcher.flush();
    // Followers' windows close: what they hold goes now, while the leader's answers are awaited.
    for (const queue of this.#queues.values()) this.#pump(queue);
    if (this.#retry.size > 0) {
      this.#log.info({ batches: this.#retry.size }, 'waiting for the leader to answer the last batches');
      await this.#retry.allSettled();
    }
    await this.#drainFollowers();
    for (const queue of [...this.#queues.values()]) this.#remove(queue);
    await this.#transport.close();
  }

  /**
   * Lets the replicas' requests in flight finish, and what is still queued go out, so that
   * a function going away costs a hot standby nothing; but within one request timeout in
   * all: a hanging follower's queue, sent request by request, would otherwise hold the
   * shutdown for a timeout per request.
   */
  async #drainFollowers(): Promise<void> {
    let cancel: () => void = () => undefined;
    let late = false;
    const deadline = new Promise<void>((resolve) => {
      cancel = this.#clock.schedule(this.#settings.requestTimeoutMs, () => {
        late = true;
        resolve();
      });
    });
    try {
      while (!late) {
        const sending = [...this.#queues.values()].flatMap((queue) => queue.sending ?? []);
        if (sending.length === 0) return;
        await Promise.race([Promise.allSettled(sending), deadline]);
      }
      this.#log.warn('replicas still sending at the stop deadline: their requests are aborted');
    } finally {
      cancel();
    }
  }

  /** Queues a sealed batch for every replica, then sees what it waits for. */
  #fanOut(batch: Batch): void {
    this.#reconcile();
    for (const queue of this.#queues.values()) {
      batch.status.set(queue.replica.identity, 'pending');
      this.#enqueue(queue, batch);
    }
    this.#retry.evaluate(batch);
  }

  /** Whether the leader (or, none known, every replica) has nothing in flight or queued. */
  #leaderIdle(): boolean {
    this.#reconcile();
    const leader = this.leader();
    if (leader !== undefined) return this.#queues.get(leader)?.idle ?? false;
    return this.#queues.size > 0 && [...this.#queues.values()].every((queue) => queue.idle);
  }

  /**
   * Makes the queues match the source's replicas. A URL change is a new queue: the old
   * one's request in flight is aborted, and what was queued for it goes to the new address
   * (the same replica, its pod given a new IP), so its engine misses nothing it would have got
   * (sent once the caller re-evaluates, as the source's notification does).
   */
  #reconcile(): void {
    const replicas = this.#source.replicas();
    if (replicas === this.#knownReplicas) return;
    this.#knownReplicas = replicas;
    const wanted = new Map(replicas.map((replica) => [replica.identity, replica]));
    const moved = new Map<string, Batch[]>();
    for (const queue of [...this.#queues.values()]) {
      const identity = queue.replica.identity;
      const now = wanted.get(identity);
      if (now?.url === queue.replica.url) continue;
      if (now) moved.set(identity, queue.batches.splice(0));
      this.#remove(queue);
    }
    for (const replica of wanted.values()) {
      if (this.#queues.has(replica.identity)) continue;
      const queue = new ReplicaQueue(replica, moved.get(replica.identity));
      this.#queues.set(replica.identity, queue);
      this.#metrics.queueDepth.set({ replica: replica.identity }, queue.batches.length);
    }
  }

  #remove(queue: ReplicaQueue): void {
    const identity = queue.replica.identity;
    if (this.#queues.get(identity) === queue) this.#queues.delete(identity);
    const queued = queue.close();
    this.#metrics.queueDepth.remove({ replica: identity });
    this.#transport.forget(queue.replica);
    for (const batch of queued) {
      batch.status.set(identity, 'done');
      this.#retry.evaluate(batch);
    }
  }

  #enqueue(queue: ReplicaQueue, batch: Batch): void {
    const dropped = queue.dropOldestIfFull(this.#settings.maxQueuedBatches);
    if (dropped) {
      this.#metrics.errors.inc({ reason: 'queue-full' });
      this.#log.debug(
        { replica: queue.replica.identity, batch: dropped.id },
        'queue full: oldest batch dropped',
      );
      dropped.status.set(queue.replica.identity, 'done');
      this.#retry.evaluate(dropped);
    }
    queue.push(batch);
    this.#pump(queue);
    this.#metrics.queueDepth.set({ replica: queue.replica.identity }, queue.batches.length);
  }

  /**
   * Sends what is queued for `queue` as one request, when none is in flight and, for a
   * follower, once its oldest batch's window has passed.
   */
  #pump(queue: ReplicaQueue): void {
    if (queue.inFlight || queue.closed || queue.batches.length === 0) return;
    const wait = this.#followerWait(queue);
    if (wait > 0) {
      queue.window ??= this.#clock.schedule(wait, () => {
        queue.window = undefined;
        this.#pump(queue);
      });
      return;
    }
    queue.cancelWindow();
    const batches = queue.takeRequest(this.#settings);
    queue.inFlight = true;
    this.#metrics.queueDepth.set({ replica: queue.replica.identity }, queue.batches.length);
    queue.sending = this.#send(queue, batches).then((outcome) => {
      queue.inFlight = false;
      queue.sending = undefined;
      this.#answered(queue, batches, outcome);
      this.#pump(queue);
      if (queue.idle && queue.replica.identity === this.leader()) this.#batcher.leaderWentIdle();
    });
  }

  /**
   * How long `queue` should wait before it is sent, ms (0: now). Only a follower's queue
   * waits (its last answer said so, and another current replica leads), and only until its
   * oldest batch has waited `followerWindowMs` or the queue fills a request: no caller waits
   * on a follower's answer, so its observations go in fewer, larger requests
   * (why: docs/decisions/0013-forwarder-request-pacing.md). The leader, a replica that has
   * not answered as a follower (a stale Lease may name another), every replica while no
   * current one is known to lead, and every replica once the function stops, never wait. A
   * follower becoming leader is sent to at once (#reevaluate pumps every queue).
   */
  #followerWait(queue: ReplicaQueue): number {
    const { followerWindowMs } = this.#settings;
    if (followerWindowMs === 0 || this.#stopping || !queue.answeredFollower) return 0;
    const leader = this.leader();
    // A Lease naming no current replica (stale, in a failover) names no follower either.
    if (leader === undefined || leader === queue.replica.identity || !this.#queues.has(leader)) return 0;
    return queue.followerWindowLeft(this.#clock.monotonic(), followerWindowMs, this.#settings);
  }

  /** Takes in one replica's answer (or failure) for `batches`. */
  #answered(
    queue: ReplicaQueue,
    batches: readonly Batch[],
    outcome: ObservationsResponse | ReplicaRequestError,
  ): void {
    const identity = queue.replica.identity;
    if (!(outcome instanceof ReplicaRequestError)) {
      if (outcome.leader) {
        let offset = 0;
        for (const batch of batches) {
          const results = outcome.results.slice(offset, offset + batch.count);
          offset += batch.count;
          this.#retry.settle(batch, outcome.identity, outcome.term, results);
        }
      }
      this.#heard(queue, outcome);
    }
    for (const batch of batches) {
      batch.status.set(identity, 'done');
      this.#retry.evaluate(batch);
    }
  }

  /** What an answer says about its replica (a follower's queue may wait) and about who leads. */
  #heard(queue: ReplicaQueue, answer: ObservationsResponse): void {
    queue.answeredFollower = !answer.leader;
    const change = this.#leaders.learn(answer);
    if (change) {
      this.#log.info({ leader: change.leader ?? null, from: change.from ?? null }, 'controller leader');
      this.#reevaluate();
    }
  }

  /**
   * On a leader or replica change: every queue is sent that need not wait any more (a
   * follower that became leader), and every waiting batch is looked at again now.
   */
  #reevaluate(): void {
    for (const queue of this.#queues.values()) this.#pump(queue);
    this.#retry.reevaluate();
  }
}
