/**
 * Writes the status ConfigMap (CONTRACT §5.1, §5.4 "Who may write") for one term.
 *
 * - Every write is an update conditioned on the resourceVersion last seen. The first write
 *   of a term reads it first (404: create; create's 409: read again and go on).
 * - A 409 re-reads. If the stored document's `publisher` is another identity with a term not
 *   lower than ours, a newer leader has written: the writer steps down and never writes
 *   again (the outcome says so). Otherwise it retries at the new resourceVersion, at most
 *   `maxConflictRetries` times, then gives up this write (ConflictRetriesExhausted).
 * - The rule applies to a 409 only, as the contract says. A first read that finds a higher
 *   term (a Lease deleted and recreated restarts terms at 0) overwrites it: nobody else
 *   wrote between our read and our write.
 * - A stored ConfigMap with no valid document (garbage written by someone else) is
 *   overwritten, logged and counted (publish_invalid_overwritten_total).
 * - Immediately before every request the leadership fence is checked: not leading, or
 *   leading in another term, and nothing is sent. Requests carry the caller's signal, which
 *   aborts when leadership ends.
 */
import {
  AppError,
  isAlreadyExists,
  isConflict,
  isNotFound,
  type Clock,
  type Logger,
} from '../../platform/index.js';
import type { Leadership } from '../leader-election/index.js';
import {
  describeConfigMap,
  type ConfigMapClient,
  type ConfigMapKey,
  type StoredConfigMap,
} from './configmap-client.js';
import { timedWrite, type PublisherMetrics } from './metrics.js';
import { withRequestTimeout } from './request-signal.js';
import { STATUS_LABELS, documentOf, type SerializedDocument } from './status-data.js';

/** How a write ended (API failures are thrown). */
export type WriteOutcome =
  /** Acknowledged: `stored` is the ConfigMap as written. */
  | { readonly kind: 'written'; readonly stored: StoredConfigMap }
  /** A newer leader wrote (409 and its term is not lower): this writer is done for good. */
  | { readonly kind: 'stepped-down'; readonly reason: string }
  /** The fence is down or names another term: nothing was sent. */
  | { readonly kind: 'not-leading'; readonly reason: string };

/** Thrown when a write met more 409s than `maxConflictRetries` (none of its requests landed). */
export class ConflictRetriesExhausted extends AppError {
  constructor(key: ConfigMapKey, retries: number) {
    super(
      'publish_conflicts',
      `ConfigMap ${describeConfigMap(key)}: still conflicting after ${retries} retries; trying again at the next tick`,
    );
  }
}

/** What a StatusWriter is built from. */
export interface StatusWriterDeps {
  readonly client: ConfigMapClient;
  /** The elector's fence. */
  readonly leadership: () => Leadership;
  readonly clock: Clock;
  readonly log: Logger;
  readonly metrics: PublisherMetrics;
}

/** Whose writes these are and how hard to try. */
export interface StatusWriterOptions {
  readonly key: ConfigMapKey;
  readonly identity: string;
  /** The term this writer writes for; the fence must name it. */
  readonly term: number;
  readonly maxConflictRetries: number;
  readonly requestTimeoutMs: number;
}

/** The status ConfigMap's writer for one term. */
export class StatusWriter {
  readonly #deps: StatusWriterDeps;
  readonly #options: StatusWriterOptions;
  /** The resourceVersion last seen; undefined until read (or after a 404). */
  #resourceVersion: string | undefined;
  #steppedDown: string | undefined;

  constructor(deps: StatusWriterDeps, options: StatusWriterOptions) {
    this.#deps = deps;
    this.#options = options;
  }

  /** Why this writer stepped down, or undefined while it may still write. */
  get steppedDown(): string | undefined {
    return this.#steppedDown;
  }

  /** Writes `document` (already stamped with this writer's identity and term). */
  async write(document: SerializedDocument, signal: AbortSignal): Promise<WriteOutcome> {
    const { maxConflictRetries } = this.#options;
    for (let retries = 0; ; retries++) {
      if (retries > maxConflictRetries)
        throw new ConflictRetriesExhausted(this.#options.key, maxConflictRetries);
      const outcome = await this.#attempt(document, signal);
      if (outcome !== 'retry') return outcome;
    }
  }

  /** One create or conditioned update (with the read it needs); 'retry' after a conflict worth retrying. */
  async #attempt(document: SerializedDocument, signal: AbortSignal): Promise<WriteOutcome | 'retry'> {
    if (this.#steppedDown !== undefined) return { kind: 'stepped-down', reason: this.#steppedDown };
    if (this.#resourceVersion === undefined) {
      const fence = this.#fence();
      if (fence) return fence;
      const stored = await this.#read(signal);
      if (stored === undefined) return await this.#create(document, signal);
      if (!documentOf(stored.data)) this.#overwritingInvalid('first read');
    }
    const fence = this.#fence();
    if (fence) return fence;
    const resourceVersion = this.#resourceVersion as string;
    const content = { labels: STATUS_LABELS, data: document.data };
    try {
      const stored = await this.#send(
        (s) => this.#deps.client.replace(this.#options.key, resourceVersion, content, s),
        signal,
      );
      return this.#written(stored, document);
    } catch (error) {
      if (isNotFound(error)) {
        // Deleted under us: create it again.
        this.#resourceVersion = undefined;
        return 'retry';
      }
      if (!isConflict(error)) throw error;
      return await this.#onConflict(signal);
    }
  }

  async #create(document: SerializedDocument, signal: AbortSignal): Promise<WriteOutcome | 'retry'> {
    const fence = this.#fence();
    if (fence) return fence;
    try {
      const content = { labels: STATUS_LABELS, data: document.data };
      const stored = await this.#send((s) => this.#deps.client.create(this.#options.key, content, s), signal);
      return this.#written(stored, document);
    } catch (error) {
      if (!isAlreadyExists(error)) throw error;
      // Someone created it between our read and our create: read it and go on.
      this.#deps.log.info(
        { configMap: describeConfigMap(this.#options.key) },
        'status ConfigMap created by another writer; reading it',
      );
      return 'retry';
    }
  }

  /** A 409: read what is stored and decide between stepping down and retrying. */
  async #onConflict(signal: AbortSignal): Promise<WriteOutcome | 'retry'> {
    const fence = this.#fence();
    if (fence) return fence;
    const stored = await this.#read(signal);
    if (stored === undefined) return 'retry';
    const { identity, term } = this.#options;
    const theirs = documentOf(stored.data);
    if (!theirs) {
      this.#overwritingInvalid('conflict');
    } else if (theirs.publisher.identity !== identity && theirs.publisher.term >= term) {
      const reason = `status ConfigMap written by ${theirs.publisher.identity} in term ${theirs.publisher.term} (ours: ${term})`;
      this.#steppedDown = reason;
      this.#deps.metrics.conflicts.inc({ outcome: 'stepped_down' });
      this.#deps.log.warn(
        { configMap: describeConfigMap(this.#options.key), term, holder: theirs.publisher },
        'a newer leader wrote the status: stepping down',
      );
      return { kind: 'stepped-down', reason };
    }
    this.#deps.metrics.conflicts.inc({ outcome: 'retried' });
    this.#deps.log.debug(
      { configMap: describeConfigMap(this.#options.key), resourceVersion: stored.resourceVersion },
      'status write conflicted; retrying at the new resourceVersion',
    );
    return 'retry';
  }

  /** Reads the ConfigMap, remembering its resourceVersion; undefined when absent. */
  async #read(signal: AbortSignal): Promise<StoredConfigMap | undefined> {
    const { clock, client } = this.#deps;
    const stored = await withRequestTimeout(clock, this.#options.requestTimeoutMs, signal, (s) =>
      client.get(this.#options.key, s),
    );
    this.#resourceVersion = stored?.resourceVersion;
    return stored;
  }

  /** One write request: timed, counted, bounded by the request timeout. */
  #send(
    request: (signal: AbortSignal) => Promise<StoredConfigMap>,
    signal: AbortSignal,
  ): Promise<StoredConfigMap> {
    const { clock, metrics } = this.#deps;
    return timedWrite(metrics, clock, 'status', () =>
      withRequestTimeout(clock, this.#options.requestTimeoutMs, signal, request),
    );
  }

  #written(stored: StoredConfigMap, document: SerializedDocument): WriteOutcome {
    this.#resourceVersion = stored.resourceVersion;
    this.#deps.metrics.writeBytes.inc({ target: 'status' }, document.bytes);
    return { kind: 'written', stored };
  }

  /** The fence, checked just before a request: an outcome when we may not send, else undefined. */
  #fence(): WriteOutcome | undefined {
    const lead = this.#deps.leadership();
    if (!lead.leading) return { kind: 'not-leading', reason: 'leadership lost' };
    if (lead.term !== this.#options.term)
      return {
        kind: 'not-leading',
        reason: `leading in term ${lead.term}, writer is for term ${this.#options.term}`,
      };
    return undefined;
  }

  #overwritingInvalid(when: string): void {
    this.#deps.metrics.invalidOverwritten.inc();
    this.#deps.log.warn(
      { configMap: describeConfigMap(this.#options.key), when },
      'stored status ConfigMap holds no valid document (written by someone else): overwriting it',
    );
  }
}
