/**
 * The status publisher: a Runnable the controller starts when it becomes leader, one per
 * term, that writes the engine's document to the status ConfigMap (CONTRACT §5.4).
 *
 * ```
 *   start ─▶ write at once ─▶ wait for due (tick 1.0–1.2 s after the last acknowledgement,
 *      ▲                       or an early write ≥ 250 ms after it) ─▶ render fresh
 *      │                                  │
 *      │       unchanged but for timestamp and no heartbeat due ─▶ skip, next tick
 *      │                                  │
 *      │       budget (≤ 4 writes/s, ≤ 256 KiB/s over 60 s) says later ─▶ wait, render again
 *      │                                  ▼
 *      └──────────────── written ◀── one conditioned update (status-writer.ts)
 *                          409 and a newer leader wrote ─▶ onStepDown, stop for good
 * ```
 *
 * - One request at a time: a write due while another is in flight waits for it, then
 *   renders fresh (the document it sends is never older than its own send).
 * - A failed write (API error, timeout, conflicts past the retry bound) is logged and
 *   retried at the next tick: the document is never left unwritten for long.
 * - On shutdown or loss of leadership (the signal) it stops at once, without a last write:
 *   the in-flight request is cancelled, and the next leader writes.
 */
import type { PublishedDocument } from '../../contracts/index.js';
import type { PublisherInfo } from '../../core/engine/index.js';
import {
  describeError,
  type Clock,
  type Logger,
  type Registry,
  type Runnable,
} from '../../platform/index.js';
import type { Leadership } from '../leader-election/index.js';
import { parsePublisherConfig, type PublisherConfig, type PublisherConfigInput } from './config.js';
import type { ConfigMapClient } from './configmap-client.js';
import { publisherMetrics, type PublisherMetrics } from './metrics.js';
import { WriteSchedule } from './schedule.js';
import { serializeDocument, type SerializedDocument, type StatusData } from './status-data.js';
import { ConflictRetriesExhausted, StatusWriter } from './status-writer.js';
import { WriteBudget } from './write-budget.js';
import { Wakeable } from './wake.js';

/** An acknowledged status write, as `onWritten` reports it. */
export interface WrittenStatus {
  /** Wall time (epoch ms) the document was rendered at (its `timestamp`). */
  readonly renderedAt: number;
  /** Wall time (epoch ms) the API acknowledged the write. */
  readonly acknowledgedAt: number;
  /** Bytes of the ConfigMap data written. */
  readonly bytes: number;
  readonly document: PublishedDocument;
  /** The ConfigMap data as written (what mirrors copy). */
  readonly data: StatusData;
  /** The document JSON with its timestamp blanked (equal content: nothing but time moved). */
  readonly content: string;
}

/** What a publisher is built from. */
export interface StatusPublisherDeps {
  readonly client: ConfigMapClient;
  /** The engine's document as of `now` (epoch ms), stamped with `publisher` (`engine.document`). */
  render(now: number, publisher: PublisherInfo): PublishedDocument;
  /** The elector's fence, checked immediately before every request. */
  leadership(): Leadership;
  readonly clock: Clock;
  readonly log: Logger;
  /** Metrics go here (created on first use, shared by the publishers of every term). */
  readonly registry: Registry;
  /** Tick jitter in [0, 1) (default Math.random). */
  readonly random?: () => number;
  /** Called after each acknowledged write (a throw is logged). */
  onWritten?(written: WrittenStatus): void;
  /** Called once when a newer leader's write was found (409): this publisher has stopped for good. */
  onStepDown?(reason: string): void;
}

/** Whose documents and where. */
export interface StatusPublisherOptions {
  /** This replica's identity (the elector's). */
  readonly identity: string;
  /** The term it publishes for (onStartedLeading's); the fence must name it at every write. */
  readonly term: number;
  /** Namespace of the status ConfigMap (the controller's, `ai-infra` by default). */
  readonly namespace: string;
  /** Schedule, budget and retries; parsed here (defaults: CONTRACT §5.4). */
  readonly config?: PublisherConfigInput;
  /** Metric names start `npu_fault_<metricsComponent>_` (default `controller`). */
  readonly metricsComponent?: string;
}

/** The status publisher of one term. */
export interface StatusPublisher extends Runnable {
  readonly term: number;
  /** A device became failed: write soon (≥ earlyMinGapMs after the last write), not at the next tick. */
  requestEarlyWrite(): void;
}

/** Builds the publisher of one term; start it with the term's signal. */
export function createStatusPublisher(
  deps: StatusPublisherDeps,
  options: StatusPublisherOptions,
): StatusPublisher {
  return new TermPublisher(deps, options);
}

/** What one pass of the loop decided. */
type Step = 'continue' | 'stop';

class TermPublisher implements StatusPublisher {
  readonly name = 'status-publisher';
  readonly term: number;
  readonly #deps: StatusPublisherDeps;
  readonly #identity: string;
  readonly #config: PublisherConfig;
  readonly #metrics: PublisherMetrics;
  readonly #log: Logger;
  readonly #writer: StatusWriter;
  readonly #budget: WriteBudget;
  readonly #wake: Wakeable;
  #schedule: WriteSchedule | undefined;
  #started = false;

  constructor(deps: StatusPublisherDeps, options: StatusPublisherOptions) {
    this.#deps = deps;
    this.term = options.term;
    this.#identity = options.identity;
    this.#config = parsePublisherConfig(options.config);
    this.#metrics = publisherMetrics(deps.registry, options.metricsComponent);
    this.#log = deps.log.child({ term: options.term });
    this.#budget = new WriteBudget(this.#config);
    this.#wake = new Wakeable(deps.clock);
    this.#writer = new StatusWriter(
      {
        client: deps.client,
        leadership: () => deps.leadership(),
        clock: deps.clock,
        log: this.#log,
        metrics: this.#metrics,
      },
      {
        key: { namespace: options.namespace, name: this.#config.name },
        identity: options.identity,
        term: options.term,
        maxConflictRetries: this.#config.maxConflictRetries,
        requestTimeoutMs: this.#config.requestTimeoutMs,
      },
    );
  }

  requestEarlyWrite(): void {
    if (!this.#schedule) return;
    this.#schedule.requestEarly(this.#deps.clock.monotonic());
    this.#wake.wake();
  }

  async start(signal: AbortSignal): Promise<void> {
    if (this.#started)
      throw new Error('status publisher: start() may be called once (one publisher per term)');
    this.#started = true;
    const { clock } = this.#deps;
    const random = this.#deps.random ?? Math.random;
    const schedule = new WriteSchedule(this.#config, clock.monotonic(), random);
    this.#schedule = schedule;
    this.#log.info({ identity: this.#identity }, 'publishing the status');
    while (!signal.aborted) {
      const wait = schedule.due() - clock.monotonic();
      if (wait > 0) {
        await this.#wake.sleep(wait, signal);
        continue; // woken early or on time: recompute what is due
      }
      if ((await this.#publishOnce(schedule, signal)) === 'stop') break;
    }
    this.#log.info(
      { reason: signal.aborted ? describeError(signal.reason) : 'stopped' },
      'stopped publishing',
    );
  }

  /** Renders, waits out the budget (rendering again after), writes once. */
  async #publishOnce(schedule: WriteSchedule, signal: AbortSignal): Promise<Step> {
    const { clock } = this.#deps;
    const ready = await this.#renderWithinBudget(schedule, signal);
    if (ready === 'skipped') return 'continue';
    if (ready === 'stop') return 'stop';
    const { document, renderedAt } = ready;
    try {
      const outcome = await this.#writer.write(document, signal);
      const at = clock.monotonic();
      if (outcome.kind === 'written') {
        this.#budget.record(at, document.bytes);
        schedule.written(document.content, at);
        this.#acknowledged(document, renderedAt);
        return 'continue';
      }
      if (outcome.kind === 'stepped-down') this.#stepDown(outcome.reason);
      else this.#log.info({ reason: outcome.reason }, 'not leading: publisher stops');
      return 'stop';
    } catch (error) {
      if (signal.aborted) return 'stop';
      const at = clock.monotonic();
      // An unanswered write may still have landed: count it against the budget. A write that
      // only met 409s changed nothing.
      if (!(error instanceof ConflictRetriesExhausted)) this.#budget.record(at, document.bytes);
      schedule.ended(at);
      this.#log.warn({ err: error }, 'status write failed; retrying at the next tick');
      return 'continue';
    }
  }

  /**
   * Renders a document worth writing that the budget lets go now; 'skipped' when nothing
   * but the timestamp changed and no heartbeat is due.
   */
  async #renderWithinBudget(
    schedule: WriteSchedule,
    signal: AbortSignal,
  ): Promise<{ document: SerializedDocument; renderedAt: number } | 'skipped' | 'stop'> {
    const { clock } = this.#deps;
    let deferred = false;
    for (;;) {
      const now = clock.monotonic();
      schedule.rendering(now);
      const renderedAt = clock.now();
      const document = this.#render(renderedAt);
      if (!document) {
        schedule.ended(now);
        return 'skipped';
      }
      if (!schedule.worthWriting(document.content, now)) {
        schedule.skipped(now);
        return 'skipped';
      }
      const decision = this.#budget.earliest(now, document.bytes);
      if (decision.at <= now) return { document, renderedAt };
      if (!deferred && decision.limitedBy) {
        deferred = true;
        this.#metrics.deferred.inc({ budget: decision.limitedBy });
        this.#log.debug(
          { budget: decision.limitedBy, waitMs: decision.at - now, bytes: document.bytes },
          'status write deferred by the write budget',
        );
      }
      // The wait ends only on time (or the signal): early requests are rendered when it ends.
      await clock.sleep(decision.at - now, signal).catch(() => undefined);
      if (signal.aborted) return 'stop';
    }
  }

  /** The engine's document stamped with this term, serialised; undefined (logged) when rendering failed. */
  #render(now: number): SerializedDocument | undefined {
    try {
      const rendered = this.#deps.render(now, { identity: this.#identity, term: this.term });
      const document = serializeDocument({
        ...rendered,
        publisher: { identity: this.#identity, term: this.term },
      });
      this.#metrics.documentBytes.set(document.bytes);
      this.#metrics.omittedNodes.set(rendered.omitted_nodes ?? 0);
      let omittedDevices = 0;
      for (const entry of Object.values(rendered.nodes)) omittedDevices += entry.omitted_devices ?? 0;
      this.#metrics.omittedDevices.set(omittedDevices);
      return document;
    } catch (error) {
      this.#log.error({ err: error }, 'rendering the status document failed; retrying at the next tick');
      return undefined;
    }
  }

  #acknowledged(document: SerializedDocument, renderedAt: number): void {
    const acknowledgedAt = this.#deps.clock.now();
    this.#metrics.lastPublish.set(acknowledgedAt / 1000);
    try {
      this.#deps.onWritten?.({
        renderedAt,
        acknowledgedAt,
        bytes: document.bytes,
        document: document.document,
        data: document.data,
        content: document.content,
      });
    } catch (error) {
      this.#log.error({ err: error }, 'onWritten failed');
    }
  }

  #stepDown(reason: string): void {
    this.#log.warn({ reason }, 'stepped down: a newer leader publishes');
    try {
      this.#deps.onStepDown?.(reason);
    } catch (error) {
      this.#log.error({ err: error }, 'onStepDown failed');
    }
  }
}
